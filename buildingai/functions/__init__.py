"""The public functions over tensors, one module per op family. Everything here is exported at
the top level (``buildingai.exp``) and attached as Tensor methods (``x.exp()``)."""

from . import (
    activation,
    aliases,
    arrangement,
    closeness,
    conjugate,
    creation,
    dtype_info,
    elementwise,
    elementwise_math,
    gamma,
    index,
    inplace,
    linalg,
    linear_algebra,
    matrix_norms,
    memory_format,
    nn,
    numeric_tools,
    pointwise_compositions,
    random_like,
    reduce,
    sampling,
    scattering,
    searching,
    shape,
    shifting,
    sorting,
    statistics,
    tensor_queries,
    triangle,
    trigonometry,
)
from .activation import *
from .aliases import *
from .arrangement import *
from .closeness import *
from .conjugate import *
from .creation import *
from .dtype_info import *
from .elementwise import *
from .elementwise_math import *
from .gamma import *
from .index import *
from .inplace import *
from .linalg import *
from .linear_algebra import *
from .matrix_norms import *
from .memory_format import *
from .methods import attach_tensor_methods
from .nn import *
from .numeric_tools import *
from .pointwise_compositions import *
from .random_like import *
from .reduce import *
from .sampling import *
from .scattering import *
from .searching import *
from .shape import *
from .shifting import *
from .sorting import *
from .statistics import *
from .tensor_queries import *
from .triangle import *
from .trigonometry import *

# Only the functions: the family modules' own names (e.g. `nn`) must not leak to the top level.
__all__ = [
    name
    for family in (creation, elementwise, index, inplace, linalg, nn, reduce, shape)
    for name in family.__all__
] + [name for family in (memory_format, sampling, sorting, triangle) for name in family.__all__]
__all__ += matrix_norms.__all__

__all__ += activation.__all__
__all__ += gamma.__all__
__all__ += random_like.__all__ + shifting.__all__
__all__ += dtype_info.__all__ + tensor_queries.__all__ + closeness.__all__
__all__ += pointwise_compositions.__all__
__all__ += arrangement.__all__ + searching.__all__ + statistics.__all__ + trigonometry.__all__
__all__ += linear_algebra.__all__ + scattering.__all__
__all__ += conjugate.__all__
__all__ += elementwise_math.__all__ + numeric_tools.__all__ + aliases.__all__

attach_tensor_methods(__name__, __path__)  # noqa: F405 - the package's own folders

"""The public functions over tensors, one module per op family. Everything here is exported at
the top level (``buildingai.exp``) and attached as Tensor methods (``x.exp()``)."""

from . import creation, elementwise, index, inplace, linalg, nn, reduce, shape
from .creation import *
from .elementwise import *
from .index import *
from .inplace import *
from .linalg import *
from .methods import attach_tensor_methods
from .nn import *
from .reduce import *
from .shape import *

# Only the functions: the family modules' own names (e.g. `nn`) must not leak to the top level.
__all__ = [
    name
    for family in (creation, elementwise, index, inplace, linalg, nn, reduce, shape)
    for name in family.__all__
]

attach_tensor_methods()

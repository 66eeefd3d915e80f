"""The public functions over tensors, one module per op family. Everything here is exported at
the top level (``buildingai.exp``) and attached as Tensor methods (``x.exp()``)."""

from .creation import *
from .elementwise import *
from .index import *
from .inplace import *
from .linalg import *
from .nn import *
from .reduce import *
from .shape import *
from .methods import attach_tensor_methods

attach_tensor_methods()

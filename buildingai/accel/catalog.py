"""Every module that registers kernels, imported once so that their kernels are known."""
from . import (  # noqa: F401
    convolution,
    optimizers,  # noqa: F401
    pooling,
    products,  # noqa: F401
    resize,
)
from . import activations, elementwise, reductions  # noqa: F401
from . import recurrence, rows  # noqa: F401

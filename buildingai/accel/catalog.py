"""Every module that registers kernels, imported once so that their kernels are known."""
from . import products  # noqa: F401
from . import optimizers  # noqa: F401

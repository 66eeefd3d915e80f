"""Hand-written NumPy implementations of the benchmark models: forward, manual backward and
optimizer, with no framework. They are the lower bound the framework rows are compared with, so
they are written for speed: buffers allocated once, in-place ufuncs, one GEMM per convolution
through stride tricks, the softmax and cross-entropy gradient fused, optimizers with ``out=``.

Each model keeps its parameters in the layout that suits its own arithmetic best (for example
convolution weights as (out, kh * kw * in) matrices over channels-last patches) and converts to
PyTorch's names and layouts only in ``state_dict``.
"""

from .cnn import NumpyCNN
from .mlp import NumpyMLP
from .transformer import NumpyTransformer

__all__ = ["NumpyCNN", "NumpyMLP", "NumpyTransformer"]

"""Questions PyTorch code asks a tensor about its type and size: ``is_tensor``,
``is_floating_point``, ``is_complex``, ``nelement``, ``element_size`` and ``ndimension``."""

from __future__ import annotations

from ..autograd.tensor import Tensor
from ..backend.dtypes import is_floating


def is_tensor(obj) -> bool:
    """True when ``obj`` is a BuildingAI tensor (``torch.is_tensor``)."""
    return isinstance(obj, Tensor)


def is_floating_point(input: Tensor) -> bool:  # noqa: A002 - PyTorch's name
    """True when ``input`` holds float16, bfloat16, float32 or float64 values: the dtypes that
    can carry gradients (``torch.is_floating_point``)."""
    return is_floating(input.dtype)


def is_complex(input: Tensor) -> bool:  # noqa: A002 - PyTorch's name
    """True when ``input`` holds complex numbers."""
    return input.dtype.kind == "c"


def nelement(x: Tensor) -> int:
    """The number of elements, PyTorch's older name for ``numel()``."""
    return x.numel()


def element_size(x: Tensor) -> int:
    """Bytes per element: 4 for float32, 2 for bfloat16, 1 for bool."""
    return int(x.dtype.itemsize)


def ndimension(x: Tensor) -> int:
    """The number of dimensions, PyTorch's older name for ``dim()``."""
    return x.ndim


__all__ = ["is_complex", "is_floating_point", "is_tensor"]

TENSOR_METHODS = {
    "is_floating_point": is_floating_point, "is_complex": is_complex, "nelement": nelement,
    "element_size": element_size, "ndimension": ndimension,
}  # fmt: skip

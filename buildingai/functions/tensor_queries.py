"""Questions PyTorch code asks a tensor about its type, size and layout: ``is_tensor``,
``is_floating_point``, ``is_complex``, ``numel``, ``nelement``, ``element_size``, ``ndimension``,
``stride``, ``storage_offset``, ``is_same_size``, ``is_signed`` and ``is_nonzero``."""

from __future__ import annotations

import numpy as np

from ..autograd.tensor import Tensor
from ..backend.dtypes import is_floating
from ..errors import ShapeError
from ._common import normalize_axis


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


def numel(input: Tensor) -> int:  # noqa: A002 - PyTorch's name
    """The number of elements (``torch.numel(x)``, ``x.numel()``)."""
    return input.numel()


def nelement(x: Tensor) -> int:
    """The number of elements, PyTorch's older name for ``numel()``."""
    return x.numel()


def element_size(x: Tensor) -> int:
    """Bytes per element: 4 for float32, 2 for bfloat16, 1 for bool."""
    return int(x.dtype.itemsize)


def ndimension(x: Tensor) -> int:
    """The number of dimensions, PyTorch's older name for ``dim()``."""
    return x.ndim


def stride(x: Tensor, dim: int | None = None):
    """The steps, in elements, between neighbours along each dimension (a tuple), or along
    ``dim``: ``(3, 1)`` for a contiguous (2, 3) tensor, ``(1, 3)`` for its transpose."""
    steps = tuple(step // x.array.itemsize for step in x.array.strides)
    if dim is None:
        return steps
    return steps[normalize_axis(dim, x.ndim, "stride")]


def _address(array) -> int:
    return array.ctypes.data if isinstance(array, np.ndarray) else array.data.ptr


def storage_offset(x: Tensor) -> int:
    """Where ``x``'s first element sits in the memory it views, in elements from the start of
    the array that owns that memory (0 for a tensor that owns its memory)."""
    owner = x.array
    while isinstance(owner.base, type(x.array)):
        owner = owner.base
    return (_address(x.array) - _address(owner)) // x.array.itemsize


def is_same_size(input: Tensor, other: Tensor) -> bool:  # noqa: A002 - PyTorch's name
    """True when the two tensors have the same shape (no broadcasting)."""
    return tuple(input.shape) == tuple(other.shape)


def is_signed(input: Tensor) -> bool:  # noqa: A002 - PyTorch's name
    """True when the dtype can hold negative values: the signed integers, floats and complex
    numbers; False for bool and the unsigned integers."""
    return input.dtype.kind in "ic" or is_floating(input.dtype)


def is_nonzero(input: Tensor) -> bool:  # noqa: A002 - PyTorch's name
    """The truth of a one-element tensor of any shape: False for 0, -0.0 and False, True
    otherwise (NaN included). Any other number of elements is ambiguous, as in PyTorch."""
    count = input.numel()
    if count != 1:
        raise ShapeError(
            f"[is_nonzero] needs a tensor with exactly one element, got {count} (shape "
            f"{tuple(input.shape)}): its truth value is ambiguous",
            help="reduce it first: x.any() or x.all()",
        )
    return bool(input.numpy().reshape(()) != 0)


__all__ = ["is_complex", "is_floating_point", "is_tensor", "numel", "is_same_size", "is_signed",
           "is_nonzero"]  # fmt: skip

TENSOR_METHODS = {
    "is_floating_point": is_floating_point, "is_complex": is_complex, "nelement": nelement,
    "element_size": element_size, "ndimension": ndimension, "stride": stride,
    "storage_offset": storage_offset, "is_same_size": is_same_size, "is_signed": is_signed,
    "is_nonzero": is_nonzero,
}  # fmt: skip

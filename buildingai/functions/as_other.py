"""Methods that take a shape or dtype from another tensor, as PyTorch spells them:
``x.view_as(y)``, ``x.reshape_as(y)``, ``x.expand_as(y)``, ``x.type_as(y)``; and ``x.type()``,
PyTorch's older spelling of a dtype as a type name (``"torch.FloatTensor"``)."""

from __future__ import annotations

import numpy as np

from ..autograd.tensor import Tensor
from ..backend import dtypes
from ..errors import DTypeError
from .creation import astype, to_device
from .shape import expand, reshape, view

# PyTorch's legacy type names ("torch.FloatTensor", "torch.cuda.FloatTensor") by dtype
_TYPE_NAMES = {
    dtype: name
    for dtype, name in (
        (dtypes.float32, "FloatTensor"),
        (dtypes.float64, "DoubleTensor"),
        (dtypes.float16, "HalfTensor"),
        (dtypes.bfloat16, "BFloat16Tensor"),
        (dtypes.int64, "LongTensor"),
        (dtypes.int32, "IntTensor"),
        (dtypes.int16, "ShortTensor"),
        (dtypes.int8, "CharTensor"),
        (dtypes.uint8, "ByteTensor"),
        (dtypes.bool_, "BoolTensor"),
        (np.dtype(np.complex64), "ComplexFloatTensor"),
        (np.dtype(np.complex128), "ComplexDoubleTensor"),
    )
    if dtype is not None  # (bfloat16 without ml_dtypes)
}
_DTYPES_BY_NAME = {name: dtype for dtype, name in _TYPE_NAMES.items()}


def view_as(x: Tensor, other: Tensor) -> Tensor:
    """``x.view(other.shape)``: a view of ``x`` with ``other``'s shape (same element count)."""
    return view(x, tuple(other.shape))


def reshape_as(x: Tensor, other: Tensor) -> Tensor:
    """``x.reshape(other.shape)``: ``x`` with ``other``'s shape (same element count)."""
    return reshape(x, tuple(other.shape))


def expand_as(x: Tensor, other: Tensor) -> Tensor:
    """``x.expand(other.shape)``: ``x`` broadcast to ``other``'s shape."""
    return expand(x, tuple(other.shape))


def type_as(x: Tensor, other: Tensor) -> Tensor:
    """``x`` cast to ``other``'s dtype and moved to its device, as PyTorch's ``type_as``."""
    return to_device(astype(x, other.dtype), other.device)


def type_name_or_cast(x: Tensor, dtype=None, non_blocking: bool = False, **kwargs):
    """``x.type()``: x's type as PyTorch names it, ``"torch.FloatTensor"`` for float32 on the
    CPU, ``"torch.cuda.LongTensor"`` for int64 on a GPU. ``x.type(dtype)``: x cast to
    ``dtype``, a dtype or such a name (a ``"torch.cuda."`` name also moves x to the GPU), as
    ``x.to(dtype)``; x itself where nothing changes. ``non_blocking`` is accepted and changes
    nothing (copies are synchronous here)."""
    if dtype is None:
        if kwargs:  # (PyTorch's old ``async=`` keyword)
            raise TypeError(f"[type] unexpected keywords {sorted(kwargs)}")
        prefix = "torch.cuda." if x.device.type == "cuda" else "torch."
        return prefix + _TYPE_NAMES.get(x.dtype, str(x.dtype))
    if isinstance(dtype, str) and dtype.startswith("torch."):
        path = dtype.split(".")
        name = _DTYPES_BY_NAME.get(path[-1])
        if name is None or len(path) not in (2, 3) or (len(path) == 3 and path[1] != "cuda"):
            raise DTypeError(
                f"[type] unknown type name {dtype!r}",
                help="use a dtype (x.type(float64)) or a name such as 'torch.DoubleTensor' or "
                f"'torch.cuda.FloatTensor'; the names: {', '.join(sorted(_DTYPES_BY_NAME))}",
            )
        cast = astype(x, name)
        return to_device(cast, "cuda") if len(path) == 3 else cast
    return astype(x, dtypes.as_dtype(dtype))


__all__: list[str] = []  # methods only, as in PyTorch (torch.view_as does not exist)

TENSOR_METHODS = {
    "view_as": view_as,
    "reshape_as": reshape_as,
    "expand_as": expand_as,
    "type_as": type_as,
    "type": type_name_or_cast,
}

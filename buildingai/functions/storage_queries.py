"""Questions PyTorch code asks about where a tensor's values live, and the dtype conversions
PyTorch spells as methods: ``is_contiguous``, ``get_device``, ``data_ptr``, ``new_empty``,
``bfloat16()``, ``byte()``, ``char()``, ``short()``."""

from __future__ import annotations

from ..autograd.tensor import Tensor
from .creation import astype, empty


def is_contiguous(x: Tensor, memory_format=None) -> bool:
    """True when the values are stored in row-major order without gaps (a transposed or strided
    view is not); ``memory_format`` is accepted for PyTorch's signature."""
    return bool(x.array.flags.c_contiguous)


def get_device(x: Tensor) -> int:
    """The GPU number of a CUDA tensor, -1 for a CPU tensor (as PyTorch's)."""
    device = x.device
    return -1 if device.type == "cpu" else int(device.index or 0)


def data_ptr(x: Tensor) -> int:
    """The address of the first element, as an int: two tensors with the same ``data_ptr()``
    start at the same memory."""
    data = x.array
    pointer = getattr(data, "data", None)
    return int(pointer.ptr) if hasattr(pointer, "ptr") else int(data.__array_interface__["data"][0])


def new_empty(x: Tensor, *size, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    """An uninitialised tensor of ``size`` with ``x``'s dtype and device unless given:
    ``x.new_empty((2, 3))`` or ``x.new_empty(2, 3)``."""
    return empty(*size, dtype=x.dtype if dtype is None else dtype,
                 device=x.device if device is None else device, requires_grad=requires_grad)  # fmt: skip


__all__: list[str] = []  # Tensor methods only, as in PyTorch

TENSOR_METHODS = {
    "is_contiguous": is_contiguous, "get_device": get_device, "data_ptr": data_ptr,
    "new_empty": new_empty, "bfloat16": lambda x: astype(x, "bfloat16"),
    "byte": lambda x: astype(x, "uint8"), "char": lambda x: astype(x, "int8"),
    "short": lambda x: astype(x, "int16"),
}  # fmt: skip

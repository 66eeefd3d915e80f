"""Small helpers the layers share: making parameter and buffer arrays on a device, and
PyTorch's default initialisation of dense and convolution layers."""

from __future__ import annotations

import math

import numpy as np

from ..autograd.tensor import Tensor
from ..backend import device as _device
from ..backend.dtypes import as_dtype, get_default_dtype
from . import init
from .parameter import Parameter


def _on_device(array, device):
    """``array`` moved to ``device`` (None: left on the CPU)."""
    return array if device is None else _device.to_device(array, _device.Device(device))


def full_array(shape: tuple[int, ...], fill: float, dtype=None, device=None):
    """A backend array of ``shape`` filled with ``fill``, in ``dtype`` (the default float dtype
    when None), on ``device``."""
    dtype = get_default_dtype() if dtype is None else as_dtype(dtype)
    return _on_device(np.full(shape, fill, dtype=dtype), device)


def empty_parameter(
    shape: tuple[int, ...], dtype=None, device=None, requires_grad: bool = True
) -> Parameter:
    """An uninitialised Parameter of ``shape`` (the default float dtype when ``dtype`` is None);
    the layer's ``reset_parameters`` fills it."""
    dtype = get_default_dtype() if dtype is None else as_dtype(dtype)
    return Parameter(_on_device(np.empty(shape, dtype=dtype), device), requires_grad=requires_grad)


def init_like_linear_(weight: Tensor, bias: Tensor | None) -> None:
    """PyTorch's default for Linear and the convolutions: ``weight`` kaiming_uniform_ with
    a = sqrt(5), which is U(-1/sqrt(fan_in), 1/sqrt(fan_in)), and ``bias`` from the same range
    (zero width when fan_in is 0)."""
    init.kaiming_uniform_(weight, a=math.sqrt(5))
    if bias is not None:
        fan_in, _ = init.calculate_fan_in_and_fan_out(weight)
        bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0.0
        init.uniform_(bias, -bound, bound)

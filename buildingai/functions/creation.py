"""Making tensors: ``tensor``, the factories, casting and moving between devices."""

from __future__ import annotations

import numpy as np

from ..autograd.dispatch import apply
from ..autograd.tensor import Tensor
from ..backend import device as _device
from ..backend.dtypes import as_dtype, bool_, default_float_dtype
from ..backend.random import resolve_generator
from ..errors import DTypeError, ShapeError
from ..ops import cast as ops
from ._common import as_shape


def _place(array: np.ndarray, device) -> np.ndarray:
    if device is None:
        return array
    return _device.to_device(array, _device.Device(device))


def _xp_for(device):
    if device is None or _device.Device(device).type == "cpu":
        return np
    return _device.cupy_module()


def tensor(data, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    """A new leaf tensor holding a copy of ``data`` (a number, nested lists, an array or a Tensor).

    Python floats become float32 (the default float dtype), ints int64, bools bool; arrays keep
    their dtype unless ``dtype`` is given.
    """
    if isinstance(data, Tensor):
        array = data.data.copy()
    elif _device.is_array(data):
        array = data.copy()
    else:
        try:
            array = np.array(data)
        except ValueError as exc:  # ragged nesting
            raise ShapeError(
                f"[tensor] cannot build a tensor from {type(data).__name__} data: {exc}",
                help="every nested list must have the same length at each level",
            ) from exc
        if array.dtype.kind not in "biuf" and array.dtype != bool_:
            raise DTypeError(
                f"[tensor] cannot build a tensor from data of NumPy dtype {array.dtype}",
                help="pass numbers, nested lists of numbers, arrays or tensors",
            )
        if dtype is None and array.dtype == np.float64 and not isinstance(data, np.generic):
            array = array.astype(default_float_dtype)
    if dtype is not None:
        array = array.astype(as_dtype(dtype), copy=False)
    return Tensor(_place(array, device), requires_grad=requires_grad)


def as_tensor(data, dtype=None, device=None) -> Tensor:
    """Like ``tensor``, but shares memory with a backend array when no conversion is needed."""
    if isinstance(data, Tensor) and dtype is None and device is None:
        return data
    if _device.is_array(data) and device is None and (dtype is None or data.dtype == dtype):
        return Tensor(data)
    return tensor(data, dtype=dtype, device=device)


def from_numpy(array: np.ndarray) -> Tensor:
    """A tensor sharing memory with a NumPy array."""
    return Tensor(array)


def _factory(name, fill):
    def factory(*shape, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
        dtype = default_float_dtype if dtype is None else as_dtype(dtype)
        array = fill(_xp_for(device), as_shape(shape), dtype)
        return Tensor(_place(array, device), requires_grad=requires_grad)

    factory.__name__ = name
    factory.__doc__ = f"A new tensor of the given shape filled with {name.rstrip('s')}s."
    return factory


zeros = _factory("zeros", lambda xp, shape, dtype: xp.zeros(shape, dtype))
ones = _factory("ones", lambda xp, shape, dtype: xp.ones(shape, dtype))
empty = _factory("empty", lambda xp, shape, dtype: xp.empty(shape, dtype))


def full(shape, fill_value, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    """A new tensor of ``shape`` filled with ``fill_value``."""
    if dtype is None:
        dtype = default_float_dtype if isinstance(fill_value, float) else None
    array = _xp_for(device).full(as_shape((shape,)), fill_value, dtype=dtype)
    return Tensor(_place(array, device), requires_grad=requires_grad)


def zeros_like(x, dtype=None, device=None, requires_grad=False) -> Tensor:
    """Zeros shaped like ``x`` (same dtype and device unless given)."""
    return zeros(
        x.shape, dtype=dtype or x.dtype, device=device or x.device, requires_grad=requires_grad
    )


def ones_like(x, dtype=None, device=None, requires_grad=False) -> Tensor:
    """Ones shaped like ``x`` (same dtype and device unless given)."""
    return ones(
        x.shape, dtype=dtype or x.dtype, device=device or x.device, requires_grad=requires_grad
    )


def empty_like(x, dtype=None, device=None, requires_grad=False) -> Tensor:
    """Uninitialised memory shaped like ``x``."""
    return empty(
        x.shape, dtype=dtype or x.dtype, device=device or x.device, requires_grad=requires_grad
    )


def full_like(x, fill_value, dtype=None, device=None, requires_grad=False) -> Tensor:
    """``fill_value`` everywhere, shaped like ``x``."""
    return full(
        x.shape,
        fill_value,
        dtype=x.dtype if dtype is None else dtype,
        device=x.device if device is None else device,
        requires_grad=requires_grad,
    )


def arange(start, stop=None, step=1, dtype=None, device=None, requires_grad=False) -> Tensor:
    """Evenly spaced values in [start, stop). Integer arguments give int64, floats float32."""
    if stop is None:
        start, stop = 0, start
    if dtype is None:
        integral = all(isinstance(v, (int, np.integer)) for v in (start, stop, step))
        dtype = np.int64 if integral else default_float_dtype
    array = _xp_for(device).arange(start, stop, step, dtype=as_dtype(dtype))
    return Tensor(_place(array, device), requires_grad=requires_grad)


def linspace(start, stop, steps: int, dtype=None, device=None, requires_grad=False) -> Tensor:
    """``steps`` evenly spaced values from ``start`` to ``stop`` inclusive."""
    dtype = default_float_dtype if dtype is None else as_dtype(dtype)
    array = _xp_for(device).linspace(start, stop, steps, dtype=dtype)
    return Tensor(_place(array, device), requires_grad=requires_grad)


def eye(n: int, m: int | None = None, dtype=None, device=None, requires_grad=False) -> Tensor:
    """The identity matrix (n, m)."""
    dtype = default_float_dtype if dtype is None else as_dtype(dtype)
    array = _xp_for(device).eye(n, m, dtype=dtype)
    return Tensor(_place(array, device), requires_grad=requires_grad)


def _random(draw, shape, dtype, device, generator, requires_grad):
    where = _device.Device(device or "cpu")
    backend = resolve_generator(generator).backend_generator(where)
    array = draw(
        backend, as_shape(shape), default_float_dtype if dtype is None else as_dtype(dtype)
    )
    return Tensor(_place(array, device), requires_grad=requires_grad)


def rand(*shape, dtype=None, device=None, generator=None, requires_grad=False) -> Tensor:
    """Uniform samples in [0, 1)."""
    return _random(
        lambda g, s, d: g.random(s, dtype=np.float64).astype(d, copy=False),
        shape,
        dtype,
        device,
        generator,
        requires_grad,
    )


def randn(*shape, dtype=None, device=None, generator=None, requires_grad=False) -> Tensor:
    """Standard normal samples."""
    return _random(
        lambda g, s, d: g.standard_normal(s, dtype=np.float64).astype(d, copy=False),
        shape,
        dtype,
        device,
        generator,
        requires_grad,
    )


def randint(low, high=None, size=(), dtype=None, device=None, generator=None) -> Tensor:
    """Integers uniform in [low, high) (or [0, low) when high is omitted); int64 by default."""
    if high is None or not isinstance(high, (int, np.integer)):
        # randint(high), randint(high, size) (PyTorch) and randint(low, high, size)
        if high is not None:
            size = high
        low, high = 0, low
    dtype = np.int64 if dtype is None else as_dtype(dtype)
    where = _device.Device(device or "cpu")
    backend = resolve_generator(generator).backend_generator(where)
    shape = (size,) if isinstance(size, int) else tuple(size)
    return Tensor(backend.integers(low, high, size=shape, dtype=dtype))


def astype(x: Tensor, dtype, copy: bool = False) -> Tensor:
    """``x`` converted to ``dtype`` (differentiable between floating dtypes)."""
    dtype = as_dtype(dtype)
    if x.dtype == dtype and not copy:
        return x
    return apply(ops.CAST, x, dtype=dtype)


def to_device(x: Tensor, device) -> Tensor:
    """``x`` copied to ``device`` (differentiable: the gradient travels back)."""
    device = _device.Device(device)
    if x.device == device:
        return x
    return apply(ops.TO_DEVICE, x, device=device)


__all__ = ["tensor", "as_tensor", "from_numpy", "zeros", "ones", "empty", "full", "zeros_like",
           "ones_like", "empty_like", "full_like", "arange", "linspace", "eye", "rand", "randn",
           "randint", "astype", "to_device"]  # fmt: skip

TENSOR_METHODS = {
    "astype": astype,
    "float": lambda x: astype(x, "float32"), "double": lambda x: astype(x, "float64"),
    "half": lambda x: astype(x, "float16"), "long": lambda x: astype(x, "int64"),
    "int": lambda x: astype(x, "int32"), "bool": lambda x: astype(x, "bool"),
    "new_zeros": lambda x, *shape: zeros(*shape, dtype=x.dtype, device=x.device),
    "new_ones": lambda x, *shape: ones(*shape, dtype=x.dtype, device=x.device),
    "new_full": lambda x, shape, value: full(shape, value, dtype=x.dtype, device=x.device),
    "new_tensor": lambda x, data: tensor(data, dtype=x.dtype, device=x.device),
}  # fmt: skip

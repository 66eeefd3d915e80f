"""Making tensors: ``tensor``, the factories, casting and moving between devices."""

from __future__ import annotations

import numpy as np

from ..autograd.dispatch import apply
from ..autograd.tensor import Tensor
from ..backend import device as _device
from ..backend.dtypes import as_dtype, bool_, get_default_dtype
from ..errors import DTypeError, ShapeError
from ..ops import cast as ops
from ..ops import creation as factories
from ..ops import random as draws
from ._common import as_shape


def _place(array: np.ndarray, device) -> np.ndarray:
    if device is None:
        return array
    return _device.to_device(array, _device.Device(device))


def tensor(data, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    """A new leaf tensor holding a copy of ``data`` (a number, nested lists, an array or a Tensor).

    Python floats become float32 (the default float dtype), ints int64, bools bool; arrays keep
    their dtype unless ``dtype`` is given. The shape is the data's: a number gives a 0-d
    tensor ``()``, a list of N numbers ``(N,)``, nested lists ``(N, M, ...)``.
    """
    if isinstance(data, Tensor):
        array = data.array.copy()
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
            array = array.astype(get_default_dtype())
    if dtype is not None:
        array = array.astype(as_dtype(dtype), copy=False)
    return Tensor(_place(array, device), requires_grad=requires_grad)


def as_tensor(data, dtype=None, device=None) -> Tensor:
    """Like ``tensor``, but shares memory with a backend array when no conversion is needed.

    The result has the shape of ``data``.
    """
    if isinstance(data, Tensor) and dtype is None and device is None:
        return data
    if _device.is_array(data) and device is None and (dtype is None or data.dtype == dtype):
        return Tensor(data)
    return tensor(data, dtype=dtype, device=device)


def from_numpy(array: np.ndarray) -> Tensor:
    """A tensor sharing memory with a NumPy array, of the same shape and dtype."""
    return Tensor(array)


_INT64 = np.dtype(np.int64)


def _device_name(device) -> str:
    """The device attribute of a factory op: "cpu" or "cuda:N" (validated)."""
    return "cpu" if device is None else str(_device.Device(device))


def _sizes(op: str, shape) -> tuple:
    """``shape`` (``f(2, 3)``, ``f((2, 3))`` or ``f([2, 3])``) as a tuple of sizes, symbolic
    ints kept as they are; negative sizes are refused."""
    if len(shape) == 1 and not isinstance(shape[0], (int, np.integer)):
        shape = shape[0]  # f((2, 3)) or f([2, 3]); f(np.int64(5)) is one size
    sizes = tuple(shape)
    for size in sizes:  # the common case, plain non-negative ints, passes in this one loop
        if type(size) is not int or size < 0:
            return _checked_sizes(op, sizes)
    return sizes


def _checked_sizes(op: str, shape: tuple) -> tuple:
    shape = as_shape((shape,))  # NumPy ints and 0-d tensors as ints; symbolic ints kept
    if shape and min(shape) < 0:
        raise ShapeError(
            f"[{op}] negative size in shape {tuple(int(s) for s in shape)}",
            help="every size must be 0 or more",
        )
    return shape


def _number(value):
    """A Python number for a NumPy scalar or a one-element tensor (an op attribute)."""
    if isinstance(value, (int, float)):  # symbolic ints included: they stay symbolic
        return value
    return value.item() if hasattr(value, "item") else value


def _leaf(out: Tensor, requires_grad: bool) -> Tensor:
    # a factory's output has no history: asking for a gradient makes it a leaf
    return out.requires_grad_() if requires_grad else out


def _filled(op: str, shape, fill_value, dtype, device, requires_grad: bool) -> Tensor:
    out = apply(
        factories.FULL,
        shape=_sizes(op, shape),
        fill_value=fill_value,
        dtype=get_default_dtype() if dtype is None else as_dtype(dtype),
        device=_device_name(device),
    )
    return _leaf(out, requires_grad)


def zeros(*shape, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    """A new tensor of the given shape (``zeros(2, 3)`` or ``zeros((2, 3))``) filled with zeros;
    float32 unless ``dtype`` is given."""
    return _filled("zeros", shape, 0, dtype, device, requires_grad)


def ones(*shape, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    """A new tensor of the given shape filled with ones; float32 unless ``dtype`` is given."""
    return _filled("ones", shape, 1, dtype, device, requires_grad)


def empty(*shape, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    """A new tensor of the given shape with uninitialised values; float32 unless ``dtype``."""
    return _filled("empty", shape, None, dtype, device, requires_grad)


def full(shape, fill_value, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    """A new tensor of ``shape`` filled with ``fill_value``. The dtype follows the value, as in
    PyTorch: a Python float gives float32, an int int64, a bool bool."""
    if dtype is None:
        dtype = get_default_dtype() if isinstance(fill_value, float) else _dtype_of(fill_value)
    return _filled("full", (shape,), _number(fill_value), dtype, device, requires_grad)


def _dtype_of(value) -> np.dtype:
    dtype = getattr(value, "dtype", None)
    return np.asarray(value).dtype if dtype is None else as_dtype(dtype)


def zeros_like(x, dtype=None, device=None, requires_grad=False) -> Tensor:
    """Zeros shaped like ``x`` (same dtype and device unless given). While freezing, the
    shape follows ``x``'s symbolic sizes."""
    return zeros(
        x.shape,
        dtype=x.dtype if dtype is None else dtype,
        device=x.device if device is None else device,
        requires_grad=requires_grad,
    )


def ones_like(x, dtype=None, device=None, requires_grad=False) -> Tensor:
    """Ones with the shape of ``x`` (same dtype and device unless given)."""
    return ones(
        x.shape,
        dtype=x.dtype if dtype is None else dtype,
        device=x.device if device is None else device,
        requires_grad=requires_grad,
    )


def empty_like(x, dtype=None, device=None, requires_grad=False) -> Tensor:
    """Uninitialised memory with the shape of ``x`` (same dtype and device unless given)."""
    return empty(
        x.shape,
        dtype=x.dtype if dtype is None else dtype,
        device=x.device if device is None else device,
        requires_grad=requires_grad,
    )


def full_like(x, fill_value, dtype=None, device=None, requires_grad=False) -> Tensor:
    """``fill_value`` everywhere, with the shape of ``x`` (same dtype and device unless given)."""
    return full(
        x.shape,
        fill_value,
        dtype=x.dtype if dtype is None else dtype,
        device=x.device if device is None else device,
        requires_grad=requires_grad,
    )


def arange(start, stop=None, step=1, dtype=None, device=None, requires_grad=False) -> Tensor:
    """Evenly spaced values in [start, stop): ``(ceil((stop - start) / step),)``. Integer
    arguments give int64, floats float32. While freezing, ``arange(x.shape[1])`` keeps the
    symbolic length."""
    if stop is None:
        start, stop = 0, start
    start, stop, step = _number(start), _number(stop), _number(step)
    if dtype is None:
        integral = isinstance(start, int) and isinstance(stop, int) and isinstance(step, int)
        dtype = _INT64 if integral else get_default_dtype()
    out = apply(
        factories.ARANGE,
        start=start,
        stop=stop,
        step=step,
        dtype=as_dtype(dtype),
        device=_device_name(device),
    )
    return _leaf(out, requires_grad)


def linspace(start, stop, steps: int, dtype=None, device=None, requires_grad=False) -> Tensor:
    """``steps`` evenly spaced values from ``start`` to ``stop`` inclusive: ``(steps,)``."""
    out = apply(
        factories.LINSPACE,
        start=_number(start),
        stop=_number(stop),
        steps=_number(steps),
        dtype=get_default_dtype() if dtype is None else as_dtype(dtype),
        device=_device_name(device),
    )
    return _leaf(out, requires_grad)


def logspace(
    start, end, steps: int, base: float = 10.0, dtype=None, device=None, requires_grad=False
) -> Tensor:
    """``steps`` values ``base ** e`` for ``e`` evenly spaced from ``start`` to ``end``
    inclusive: ``(steps,)``. As PyTorch's: an integer ``dtype`` truncates ``start`` and ``end``
    first and each value after; the second half counts back from ``end`` so it ends exactly."""
    start, end, steps = _number(start), _number(end), _number(steps)
    if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)):
        raise TypeError(f"[logspace] steps must be an int, got {steps!r}")
    if steps < 0:
        raise ShapeError(
            f"[logspace] the number of steps must be non-negative, got {steps}",
            help="pass steps >= 0",
        )
    dtype = get_default_dtype() if dtype is None else as_dtype(dtype)
    if dtype.kind in "iub":
        start, end = int(start), int(end)
    index = np.arange(steps, dtype=np.float64)
    step = (end - start) / (steps - 1) if steps > 1 else 0.0
    halfway = steps // 2
    exponents = np.where(index < halfway, start + step * index, end - step * (steps - 1 - index))
    if steps == 1:  # one step is the start, as PyTorch's
        exponents = np.array([float(start)])
    # float64 first, then PyTorch's conversion (truncation for integer dtypes)
    return tensor(np.power(float(base), exponents), dtype=dtype, device=device,
                  requires_grad=requires_grad)  # fmt: skip


def eye(n: int, m: int | None = None, dtype=None, device=None, requires_grad=False) -> Tensor:
    """The identity matrix ``(n, m)`` (``m`` defaults to ``n``)."""
    rows, columns = _sizes("eye", (n, n if m is None else m))
    out = apply(
        factories.EYE,
        rows=rows,
        columns=columns,
        dtype=get_default_dtype() if dtype is None else as_dtype(dtype),
        device=_device_name(device),
    )
    return _leaf(out, requires_grad)


def _random(record, op: str, shape, dtype, device, generator, requires_grad, **attrs):
    """Draw through ``record`` (an effectful op, so a traced graph draws again each run)."""
    out = apply(
        record,
        shape=_sizes(op, shape),
        dtype=get_default_dtype() if dtype is None else as_dtype(dtype),
        generator=generator,
        device=_device_name(device),
        **attrs,
    )
    return _leaf(out, requires_grad)


def rand(*shape, dtype=None, device=None, generator=None, requires_grad=False) -> Tensor:
    """Uniform samples in [0, 1) of the given shape (``rand(2, 3)`` or ``rand((2, 3))``);
    float32 unless ``dtype`` is given."""
    return _random(draws.UNIFORM, "rand", shape, dtype, device, generator, requires_grad)


def randn(*shape, dtype=None, device=None, generator=None, requires_grad=False) -> Tensor:
    """Standard normal samples of the given shape (``randn(2, 3)`` or ``randn((2, 3))``);
    float32 unless ``dtype`` is given."""
    return _random(draws.STANDARD_NORMAL, "randn", shape, dtype, device, generator, requires_grad)


def randint(low, high=None, size=(), dtype=None, device=None, generator=None) -> Tensor:
    """Integers uniform in [low, high) (or [0, low) when high is omitted); int64 by default.

    ``size`` is the output shape: an int ``n`` gives ``(n,)``, a tuple that shape, the default
    ``()`` a 0-d tensor.
    """
    if high is None or not isinstance(high, (int, np.integer)):
        # randint(high), randint(high, size) (PyTorch) and randint(low, high, size)
        if high is not None:
            size = high
        low, high = 0, low
    shape = (size,) if isinstance(size, int) else tuple(size)
    dtype = np.int64 if dtype is None else dtype
    return _random(draws.INTEGERS, "randint", shape, dtype, device, generator, False,
                   low=int(low), high=int(high))  # fmt: skip


def randperm(n: int, *, generator=None, dtype=None, device=None, requires_grad=False) -> Tensor:
    """A random permutation of ``0 .. n - 1``: (n,) int64 unless ``dtype`` is given."""
    dtype = np.int64 if dtype is None else dtype
    return _random(draws.PERMUTATION, "randperm", (n,), dtype, device, generator, requires_grad)


def astype(x: Tensor, dtype, copy: bool = False) -> Tensor:
    """``x`` converted to ``dtype`` (differentiable between floating dtypes); same shape."""
    dtype = as_dtype(dtype)
    if x.dtype == dtype and not copy:
        return x
    return apply(ops.CAST, x, dtype=dtype)


def to_device(x: Tensor, device) -> Tensor:
    """``x`` copied to ``device`` (differentiable: the gradient travels back); same shape."""
    device = _device.Device(device)
    if x.device == device:
        return x
    return apply(ops.TO_DEVICE, x, device=device)


def to(x: Tensor, *args, dtype=None, device=None, copy: bool = False) -> Tensor:
    """``x`` converted to a dtype and/or moved to a device: ``x.to("cuda")``,
    ``x.to(float64)``, ``x.to(device, dtype)``; ``copy=True`` always returns new memory."""
    for arg in args:
        if isinstance(arg, _device.Device) or (
            isinstance(arg, str) and arg.split(":")[0] in ("cpu", "cuda")
        ):
            device = arg
        else:
            dtype = arg
    out = x
    if dtype is not None:
        dtype = as_dtype(dtype)
        if copy or out.array.dtype != dtype:
            out = apply(ops.CAST, out, dtype=dtype)
            copy = False  # the cast made new memory
    if device is not None:
        out = to_device(out, device)
        copy = copy and out is x
    if copy and out is x:
        out = apply(ops.CAST, out, dtype=out.array.dtype)
    return out


# ----- signal windows (torch.hann_window and friends) ------------------------------------------


def _window_positions(op: str, window_length: int, periodic: bool, dtype) -> tuple:
    """The float64 positions ``0 .. L - 1`` and the denominator ``N - 1`` of a window: a
    periodic window is the first ``L`` points of the symmetric window of ``N = L + 1``."""
    if isinstance(window_length, bool) or not isinstance(window_length, (int, np.integer)):
        raise TypeError(f"[{op}] window_length must be an int, got {window_length!r}")
    if window_length < 0:
        raise ShapeError(
            f"[{op}] window_length must be non-negative, got {window_length}",
            help="pass the number of points of the window, 0 or more",
        )
    dtype = get_default_dtype() if dtype is None else as_dtype(dtype)
    if dtype.kind != "f" and dtype.name != "bfloat16":
        raise DTypeError(
            f"[{op}] makes floating-point windows, got dtype {dtype}",
            help="pass a float dtype (float32, float64, float16, bfloat16), or convert after",
        )
    span = window_length if periodic else window_length - 1
    return np.arange(window_length, dtype=np.float64), float(span), dtype


def _window(op, window_length, periodic, dtype, device, requires_grad, formula) -> Tensor:
    positions, span, dtype = _window_positions(op, window_length, periodic, dtype)
    # one point is the window's peak, and 0/0 otherwise
    values = np.ones(1) if window_length == 1 else formula(positions, span)
    return tensor(values, dtype=dtype, device=device, requires_grad=requires_grad)


def _cosine_window(op, window_length, periodic, alpha, beta, dtype, device, requires_grad):
    return _window(op, window_length, periodic, dtype, device, requires_grad,
                   lambda n, span: alpha - beta * np.cos(2 * np.pi * n / span))  # fmt: skip


def hann_window(
    window_length: int, periodic: bool = True, *, dtype=None, device=None, requires_grad=False
) -> Tensor:
    """The Hann window ``0.5 - 0.5 cos(2 pi n / (N - 1))``: ``(window_length,)``; periodic
    (the default) for spectral analysis, symmetric with ``periodic=False`` for filter design."""
    return _cosine_window("hann_window", window_length, periodic, 0.5, 0.5, dtype, device,
                          requires_grad)  # fmt: skip


def hamming_window(
    window_length: int,
    periodic: bool = True,
    alpha: float = 0.54,
    beta: float = 0.46,
    *,
    dtype=None,
    device=None,
    requires_grad=False,
) -> Tensor:
    """The Hamming window ``alpha - beta cos(2 pi n / (N - 1))``: ``(window_length,)``."""
    return _cosine_window("hamming_window", window_length, periodic, alpha, beta, dtype, device,
                          requires_grad)  # fmt: skip


def blackman_window(
    window_length: int, periodic: bool = True, *, dtype=None, device=None, requires_grad=False
) -> Tensor:
    """The Blackman window ``0.42 - 0.5 cos(2 pi n / (N - 1)) + 0.08 cos(4 pi n / (N - 1))``:
    ``(window_length,)``."""

    def formula(n, span):
        return 0.42 - 0.5 * np.cos(2 * np.pi * n / span) + 0.08 * np.cos(4 * np.pi * n / span)

    return _window("blackman_window", window_length, periodic, dtype, device, requires_grad,
                   formula)  # fmt: skip


def bartlett_window(
    window_length: int, periodic: bool = True, *, dtype=None, device=None, requires_grad=False
) -> Tensor:
    """The triangular Bartlett window ``1 - |2 n / (N - 1) - 1|``: ``(window_length,)``."""
    return _window("bartlett_window", window_length, periodic, dtype, device, requires_grad,
                   lambda n, span: 1 - np.abs(2 * n / span - 1))  # fmt: skip


def kaiser_window(
    window_length: int,
    periodic: bool = True,
    beta: float = 12.0,
    *,
    dtype=None,
    device=None,
    requires_grad=False,
) -> Tensor:
    """The Kaiser window ``I0(beta sqrt(1 - (2 n / (N - 1) - 1)^2)) / I0(beta)``, with ``I0``
    the modified Bessel function of order 0: ``(window_length,)``."""

    def formula(n, span):
        ratio = 2 * n / span - 1
        return np.i0(beta * np.sqrt(np.maximum(1 - ratio * ratio, 0.0))) / np.i0(beta)

    return _window("kaiser_window", window_length, periodic, dtype, device, requires_grad,
                   formula)  # fmt: skip


__all__ = ["tensor", "as_tensor", "from_numpy", "zeros", "ones", "empty", "full", "zeros_like",
           "ones_like", "empty_like", "full_like", "arange", "linspace", "logspace", "eye", "rand", "randn",
           "randint", "randperm", "astype", "to_device", "hann_window", "hamming_window",
           "blackman_window", "bartlett_window", "kaiser_window"]  # fmt: skip

TENSOR_METHODS = {
    "astype": astype,
    "to": to, "cpu": lambda x: to(x, "cpu"), "cuda": lambda x, index=0: to(x, f"cuda:{index}"),
    "float": lambda x: astype(x, "float32"), "double": lambda x: astype(x, "float64"),
    "half": lambda x: astype(x, "float16"), "long": lambda x: astype(x, "int64"),
    "int": lambda x: astype(x, "int32"), "bool": lambda x: astype(x, "bool"),
    "new_zeros": lambda x, *shape: zeros(*shape, dtype=x.dtype, device=x.device),
    "new_ones": lambda x, *shape: ones(*shape, dtype=x.dtype, device=x.device),
    "new_full": lambda x, shape, value: full(shape, value, dtype=x.dtype, device=x.device),
    "new_tensor": lambda x, data: tensor(data, dtype=x.dtype, device=x.device),
}  # fmt: skip

"""Factories: ops with no tensor input that make a new array from attributes alone.

``full`` (zeros, ones, empty and full), ``arange``, ``eye`` and ``linspace`` take their sizes,
values, dtype and device as attributes, like JAX's ``full`` and ``iota``. Because they run
through dispatch, a frozen graph records them as nodes, and a size computed from a symbolic
dimension (``zeros(x.shape[0], 16)``, ``arange(x.shape[1])``) stays symbolic in the graph and in
an ONNX export. With no input to take ``xp`` from, each forward picks the namespace from its
``device`` attribute. A fresh array has no gradient: a factory's output is a leaf.
"""

from __future__ import annotations

import math

import numpy as np

from ..backend.device import Device, cupy_module
from ..errors import ArgumentError
from .abstract import DimExpr, SymbolicSizeError, ValueSpec, bytes_of
from .base import Op


def _on_gpu(device: str, make):
    """``make(cupy)`` on the GPU named by ``device``."""
    cupy = cupy_module()
    with cupy.cuda.Device(Device(device).index):
        return make(cupy)


class FactoryOp(Op):
    """An op that reads no tensor: it only writes its output."""

    save_inputs = False
    differentiable = False

    def cost(self, **attrs) -> tuple:
        return (0, 0, bytes_of(self.infer(**attrs)))


def _onnx_scalar(emit, value, dtype) -> str:
    """A 0-d tensor of ``dtype`` holding ``value``, computed from the inputs' shapes when it is
    a symbolic size."""
    if isinstance(value, DimExpr):
        size = emit.squeeze(emit.dim(value), [0])
        return size if np.dtype(dtype) == np.int64 else emit.cast(size, dtype)
    return emit.constant(np.asarray(value, dtype=dtype))


def _onnx_fill_dtype(dtype: np.dtype) -> np.dtype:
    """The dtype ONNX builds a value in before casting it to ``dtype``: bfloat16 (NumPy kind
    'V') is made in float32, which every creation operator of opset 17 supports."""
    return np.dtype(np.float32) if dtype.kind == "V" else dtype


def _emit_as(emit, name: str, dtype: np.dtype, output: str) -> None:
    """Name ``name`` ``output``, cast to ``dtype`` where it was made in another dtype."""
    if emit.dtype(name) != dtype:
        emit.cast(name, dtype, output)
    else:
        emit.node("Identity", [name], output)


class Full(FactoryOp):
    """An array of ``shape`` holding ``fill_value`` everywhere; ``fill_value=None`` leaves the
    memory uninitialised (``empty``). ``shape`` entries may be symbolic sizes."""

    name = "full"

    def infer(self, *, shape, fill_value, dtype, device="cpu") -> ValueSpec:
        return ValueSpec(tuple(shape), np.dtype(dtype), device)

    def forward(self, ctx, xp, *, shape, fill_value, dtype, device="cpu"):
        if device != "cpu":
            return _on_gpu(device, lambda gpu: _fill(gpu, shape, fill_value, dtype))
        return _fill(np, shape, fill_value, dtype)

    def cost(self, *, shape, fill_value, dtype, device="cpu") -> tuple:
        written = 0 if fill_value is None else bytes_of(ValueSpec(tuple(shape), np.dtype(dtype)))
        return (0, 0, written)

    def to_onnx(self, emit, inputs, output, attrs):
        dtype = np.dtype(attrs["dtype"])
        made = _onnx_fill_dtype(dtype)
        shape = emit.ints(attrs["shape"])
        fill = attrs["fill_value"]
        if isinstance(fill, DimExpr):  # a value that follows a symbolic size: broadcast it
            result = emit.node("Expand", [_onnx_scalar(emit, fill, made), shape], dtype=made)
        else:
            # uninitialised memory (empty) may hold anything: zeros is one such content
            value = np.asarray([0 if fill is None else fill], dtype=made)
            tensor = emit.onnx.numpy_helper.from_array(value)
            result = emit.node("ConstantOfShape", [shape], dtype=made, value=tensor)
        _emit_as(emit, result, dtype, output)


def _fill(xp, shape, fill_value, dtype):
    if fill_value is None:
        return xp.empty(shape, dtype)
    if type(fill_value) is int and fill_value == 0:
        return xp.zeros(shape, dtype)  # calloc: fresh zeroed pages are not written twice
    array = xp.empty(shape, dtype)
    array.fill(fill_value)  # what xp.full does, without its Python-level wrapper
    return array


class Arange(FactoryOp):
    """``start, start + step, ...`` up to ``stop`` (excluded), as NumPy's ``arange``.

    The length is ``ceil((stop - start) / step)`` (0 when negative); with symbolic sizes it
    must be expressible: ``arange(n)``, ``arange(1, n + 1)``, ``arange(n, 0, -1)``.
    """

    name = "arange"

    def check(self, *, start, stop, step, dtype, device="cpu"):
        if step == 0:
            raise ArgumentError(
                f"[arange] step must be non-zero, got start={start}, stop={stop}, step={step}",
                help="use a positive step to count up, a negative one to count down",
            )

    def infer(self, *, start, stop, step, dtype, device="cpu") -> ValueSpec:
        return ValueSpec((_arange_length(start, stop, step),), np.dtype(dtype), device)

    def forward(self, ctx, xp, *, start, stop, step, dtype, device="cpu"):
        if device != "cpu":
            return _on_gpu(device, lambda gpu: gpu.arange(start, stop, step, dtype=dtype))
        return np.arange(start, stop, step, dtype=dtype)

    def to_onnx(self, emit, inputs, output, attrs):
        dtype = np.dtype(attrs["dtype"])
        # counted in 64 bits, as NumPy counts, then cast to the result's dtype
        wide = np.dtype(np.int64) if dtype.kind in "iub" else np.dtype(np.float64)
        bounds = [_onnx_scalar(emit, attrs[key], wide) for key in ("start", "stop", "step")]
        _emit_as(emit, emit.node("Range", bounds, dtype=wide), dtype, output)


def _arange_length(start, stop, step):
    """``ceil((stop - start) / step)``, at least 0; a ``DimExpr`` when a bound is symbolic."""
    symbolic = any(isinstance(v, DimExpr) for v in (start, stop, step))
    if not symbolic:
        if all(isinstance(v, (int, np.integer)) for v in (start, stop, step)):
            return max(0, -((int(start) - int(stop)) // int(step)))
        return max(0, math.ceil((stop - start) / step))
    if not isinstance(step, int) or any(isinstance(v, float) for v in (start, stop)):
        raise SymbolicSizeError(
            f"[arange] the length of arange({start!r}, {stop!r}, {step!r}) with symbolic "
            "bounds needs integer bounds and a fixed integer step"
        )
    # ceil(a / b) = -((-a) // b); DimExpr raises where the division is not exact for every size
    if step > 0:
        return -((start - stop) // step)
    return -((stop - start) // -step)


class Eye(FactoryOp):
    """The ``(rows, columns)`` identity: ones on the main diagonal, zeros elsewhere."""

    name = "eye"

    def infer(self, *, rows, columns, dtype, device="cpu") -> ValueSpec:
        return ValueSpec((rows, columns), np.dtype(dtype), device)

    def forward(self, ctx, xp, *, rows, columns, dtype, device="cpu"):
        if device != "cpu":
            return _on_gpu(device, lambda gpu: gpu.eye(rows, columns, dtype=dtype))
        return np.eye(rows, columns, dtype=dtype)

    def to_onnx(self, emit, inputs, output, attrs):
        dtype = np.dtype(attrs["dtype"])
        made = _onnx_fill_dtype(dtype)
        zero = emit.onnx.numpy_helper.from_array(np.zeros(1, dtype=made))
        square = emit.node(
            "ConstantOfShape",
            [emit.ints([attrs["rows"], attrs["columns"]])],
            dtype=made,
            value=zero,
        )
        _emit_as(emit, emit.node("EyeLike", [square], dtype=made), dtype, output)


class Linspace(FactoryOp):
    """``steps`` evenly spaced values from ``start`` to ``stop``, both included (NumPy's
    ``linspace``: computed in float64, then cast to ``dtype``)."""

    name = "linspace"

    def check(self, *, start, stop, steps, dtype, device="cpu"):
        if steps < 0:
            raise ArgumentError(
                f"[linspace] steps must be non-negative, got {steps}",
                help="pass the number of values to make (0 gives an empty tensor)",
            )

    def infer(self, *, start, stop, steps, dtype, device="cpu") -> ValueSpec:
        return ValueSpec((steps,), np.dtype(dtype), device)

    def forward(self, ctx, xp, *, start, stop, steps, dtype, device="cpu"):
        if device != "cpu":
            return _on_gpu(device, lambda gpu: gpu.linspace(start, stop, steps, dtype=dtype))
        return np.linspace(start, stop, steps, dtype=dtype)

    def to_onnx(self, emit, inputs, output, attrs):
        dtype = np.dtype(attrs["dtype"])
        wide = np.float64
        start = emit.constant(np.asarray(attrs["start"], dtype=wide))
        stop = emit.constant(np.asarray(attrs["stop"], dtype=wide))
        count = _onnx_scalar(emit, attrs["steps"], wide)
        one = emit.constant(np.asarray(1.0, dtype=wide))
        positions = emit.node("Range", [emit.constant(np.asarray(0.0)), count, one], dtype=wide)
        # (stop - start) / max(steps - 1, 1): one value (steps == 1) is start alone, as in NumPy
        intervals = emit.node("Max", [emit.node("Sub", [count, one], dtype=wide), one], dtype=wide)
        spacing = emit.node("Div", [emit.node("Sub", [stop, start], dtype=wide), intervals])
        values = emit.node("Add", [emit.node("Mul", [positions, spacing], dtype=wide), start])
        _emit_as(emit, values, dtype, output)


FULL, ARANGE, EYE, LINSPACE = Full(), Arange(), Eye(), Linspace()

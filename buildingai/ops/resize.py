"""The resize records: ``interpolate`` (PyTorch's ``nn.functional.interpolate``) and its
transpose ``interpolate_grad``.

Every mode is separable and linear in the input: along each spatial axis, output = W @ input with a
sparse (out, in) matrix W built from PyTorch's coordinate rule for that mode (nearest,
nearest-exact, linear, cubic, area). W is applied axis by axis as a few weighted gathers (an output
row mixes 1, 2, 4 or about in/out + 1 inputs). The gradient applies W transposed the same way, and
the gradient of that applies W again, so every derivative order is exact.

Attributes: ``size`` (the output's spatial sizes), ``mode`` ("nearest", "nearest-exact",
"linear", "cubic" or "area"), ``align_corners`` (bool) and ``scales`` (PyTorch's scale
factors, one per spatial axis, or None: they change the coordinate rule when given).
"""

from __future__ import annotations

import functools
import math

import numpy as np

from .abstract import SymbolicSizeError, ValueSpec, memory_cost
from .base import Op
from .promotion import as_float, float_dtype

CUBIC_A = -0.75  # PyTorch's (and ONNX Resize's cubic_coeff_a) bicubic kernel parameter


# ----- PyTorch's coordinate rules -----------------------------------------------------------------


def _linear_scale(in_size: int, out_size: int, align_corners: bool, scale) -> float:
    """Input pixels per output pixel (PyTorch's ``area_pixel_compute_scale``)."""
    if align_corners:
        return (in_size - 1) / (out_size - 1) if out_size > 1 else 0.0
    return 1.0 / scale if scale is not None and scale > 0 else in_size / out_size


def _nearest_indices(in_size: int, out_size: int, scale, exact: bool, shortcut: bool) -> np.ndarray:
    """The source index of each output index, computed in float32 as PyTorch does. With
    ``shortcut`` (PyTorch's 2-D nearest kernel), out == in and out == 2 * in ignore the scale."""
    dst = np.arange(out_size)
    if shortcut and not exact and out_size == in_size:
        return dst
    if shortcut and not exact and out_size == 2 * in_size:
        return dst >> 1
    if scale is not None and scale > 0:
        step = np.float32(1.0 / scale)
    else:
        step = np.float32(in_size) / np.float32(out_size)
    position = (dst.astype(np.float32) + np.float32(0.5)) if exact else dst.astype(np.float32)
    return np.minimum(np.floor(position * step).astype(np.int64), in_size - 1)


def _floor_and_fraction(real: np.ndarray, in_size: int) -> tuple:
    """PyTorch's ``guard_index_and_lambda``: floor(real), at most in_size - 1, and the
    fraction past it in [0, 1]."""
    index = np.minimum(np.floor(real).astype(np.int64), in_size - 1)
    return index, np.clip(real - index, 0.0, 1.0)


def _cubic_weights(t: np.ndarray) -> list:
    """The four bicubic weights of taps at -1, 0, 1, 2 from a fraction t in [0, 1]."""
    a = CUBIC_A

    def near(x):  # |x| <= 1
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x):  # 1 < |x| < 2
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

    return [far(t + 1), near(t), near(1 - t), far(2 - t)]


@functools.lru_cache(maxsize=256)
def axis_entries(
    mode: str, in_size: int, out_size: int, align_corners: bool, scale, shortcut: bool
) -> tuple:
    """The nonzero entries ``(rows, columns, weights)`` of one spatial axis's (out_size,
    in_size) matrix W, output = W @ input (repeated entries add up; ``shortcut``: see
    ``_nearest_indices``). Every row's columns are non-decreasing in the row."""
    rows = np.arange(out_size)
    if mode in ("nearest", "nearest-exact"):
        exact = mode == "nearest-exact"
        columns = _nearest_indices(in_size, out_size, scale, exact, shortcut)
        return rows, columns, np.ones(out_size)
    if mode == "area":  # adaptive average pooling: bin i covers [floor(i*in/out), ceil(...))
        starts, counts = area_bins(in_size, out_size)
        bin_rows = np.repeat(rows, counts)
        offsets = np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts)
        return bin_rows, np.repeat(starts, counts) + offsets, np.repeat(1.0 / counts, counts)
    step = _linear_scale(in_size, out_size, align_corners, scale)
    if align_corners:
        real = step * rows
    else:
        real = step * (rows + 0.5) - 0.5
        if mode == "linear":  # linear clamps at the first pixel; cubic reads beyond it
            real = np.maximum(real, 0.0)
    index, fraction = _floor_and_fraction(real, in_size)
    if mode == "linear":
        taps = [(index, 1.0 - fraction), (index + (index < in_size - 1), fraction)]
    else:  # cubic: four taps, positions clamped to the edge (PyTorch's bounded access)
        taps = [
            (np.clip(index + offset, 0, in_size - 1), weight)
            for offset, weight in zip((-1, 0, 1, 2), _cubic_weights(fraction))
        ]
    count = len(taps)
    return (
        np.repeat(rows, count),
        np.stack([columns for columns, _ in taps], axis=1).reshape(-1),
        np.stack([weights for _, weights in taps], axis=1).reshape(-1),
    )


def area_bins(in_size: int, out_size: int) -> tuple:
    """(starts, sizes) of the bins of mode "area" along one axis: output pixel i averages the
    input pixels [floor(i * in / out), ceil((i + 1) * in / out))."""
    rows = np.arange(out_size)
    starts = rows * in_size // out_size
    ends = ((rows + 1) * in_size + out_size - 1) // out_size
    return starts, ends - starts


def area_sizes(xp, keys, dtype):
    """How many input pixels each output pixel of mode "area" averages: the outer product of
    each axis's bin sizes, (*out_sizes) in ``dtype`` (whole numbers, exact in any float)."""
    sizes = np.ones(())
    for key in keys:
        sizes = np.multiply.outer(sizes, area_bins(key[1], key[2])[1])
    return xp.asarray(sizes, dtype=dtype)


def summing(plan: tuple) -> tuple:
    """An ``axis_map`` plan that sums each output's inputs, its weights left out: mode "area"
    divides once by ``area_sizes`` instead, as PyTorch's average pooling does (the weights
    1 / size, rounded and applied axis by axis, would round two or three times)."""
    columns, weights, _, padded = plan
    return columns, weights, True, padded


def resize_matrix(
    mode: str, in_size: int, out_size: int, align_corners: bool, scale, shortcut: bool
) -> np.ndarray:
    """The dense (out_size, in_size) float64 matrix W of one spatial axis."""
    rows, columns, weights = axis_entries(mode, in_size, out_size, align_corners, scale, shortcut)
    matrix = np.zeros((out_size, in_size))
    np.add.at(matrix, (rows, columns), weights)
    return matrix


@functools.lru_cache(maxsize=256)
def axis_map(key: tuple, transpose: bool) -> tuple:
    """How to apply W (or W^T) of ``axis_entries(*key)`` along an axis: ``(columns, weights,
    unit, padded)``, (rows, K) arrays such that output row r is the sum over k of
    ``weights[r, k] * input[columns[r, k]]``; ``unit`` when every weight is 1. Rows with fewer
    than K entries are ``padded`` with column ``n_columns``: a zero row appended to the input,
    so an inf or NaN elsewhere never reaches an output that does not read it (0 * inf is NaN).
    """
    rows, columns, weights = axis_entries(*key)
    _, in_size, out_size = key[:3]
    n_rows, n_columns = (in_size, out_size) if transpose else (out_size, in_size)
    if transpose:
        rows, columns = columns, rows
    order = np.argsort(rows, kind="stable")
    rows, columns, weights = rows[order], columns[order], weights[order]
    counts = np.bincount(rows, minlength=n_rows)
    width = int(counts.max()) if counts.size else 0
    slot = np.arange(rows.size) - np.repeat(np.cumsum(counts) - counts, counts)
    gathered = np.full((n_rows, width), n_columns, np.int64)
    scaled = np.zeros((n_rows, width))
    gathered[rows, slot], scaled[rows, slot] = columns, weights
    padded = bool((counts < width).any())
    unit = bool(np.all(scaled[counts > 0] == 1.0))
    return gathered, scaled, unit, padded


def axis_keys(in_sizes, attrs) -> list:
    scales = attrs["scales"] or (None,) * len(in_sizes)
    shortcut = len(in_sizes) == 2
    return [
        (attrs["mode"], int(n), int(m), bool(attrs["align_corners"]), s, shortcut)
        for n, m, s in zip(in_sizes, attrs["size"], scales)
    ]


def _attrs_of(size, mode, align_corners, scales) -> dict:
    return {"size": size, "mode": mode, "align_corners": align_corners, "scales": scales}


def along(xp, x, plan: tuple, axis: int):
    """W (as ``axis_map`` plans it) applied along ``axis`` of x: K weighted gathers."""
    columns, weights, unit, padded = plan
    out_shape = list(x.shape)
    out_shape[axis] = columns.shape[0]
    if columns.shape[1] == 0:  # an empty axis: nothing to gather
        return xp.zeros(out_shape, dtype=x.dtype)
    if padded:
        zero_shape = list(x.shape)
        zero_shape[axis] = 1
        x = xp.concatenate([x, xp.zeros(zero_shape, dtype=x.dtype)], axis=axis)
    factor_shape = [1] * x.ndim
    factor_shape[axis] = columns.shape[0]
    out = None
    for k in range(columns.shape[1]):
        picked = xp.take(x, xp.asarray(columns[:, k]), axis=axis)
        if not unit:
            picked *= xp.asarray(weights[:, k], dtype=x.dtype).reshape(factor_shape)
        if out is None:
            out = picked
        else:
            out += picked
    return out


def _resize_cost(read, written, in_sizes, out_sizes, mode: str) -> tuple:
    """Two FLOPs per tap per output element and axis (the nearest modes copy: none)."""
    taps = {"nearest": 0, "nearest-exact": 0, "linear": 2, "cubic": 4}
    per_axis = [taps.get(mode, math.ceil(n / max(m, 1)) + 1) for n, m in zip(in_sizes, out_sizes)]
    return memory_cost([read], written, 2 * sum(per_axis))


def output_dtype(dtype: np.dtype, mode: str) -> np.dtype:
    """The nearest modes copy pixels, so integer images keep their dtype (PyTorch's uint8
    images); the weighted modes give integers the default float dtype."""
    if mode in ("nearest", "nearest-exact") and dtype.kind in "iu":
        return dtype
    return float_dtype(dtype)


# ----- the records --------------------------------------------------------------------------------


class Interpolate(Op):
    """x: (N, C, *in_sizes) -> (N, C, *size), resampled along each spatial axis by ``mode``."""

    name = "interpolate"
    save_inputs = False

    def infer(self, x, **attrs) -> ValueSpec:
        dtype = output_dtype(np.dtype(x.dtype), attrs["mode"])
        return ValueSpec(tuple(x.shape[:2]) + tuple(attrs["size"]), dtype, x.device)

    def cost(self, x, **attrs) -> tuple:
        out = self.infer(x, **attrs)
        return _resize_cost(x, out, x.shape[2:], attrs["size"], attrs["mode"])

    def forward(self, ctx, xp, x, *, size, mode, align_corners, scales):
        if output_dtype(x.dtype, mode) != x.dtype:
            x = as_float(x)
        ctx.input_size = input_size = tuple(x.shape[2:])
        keys = axis_keys(input_size, _attrs_of(size, mode, align_corners, scales))
        if mode == "area":  # each bin's sum, divided once by its size
            for axis, key in enumerate(keys, start=2):
                x = along(xp, x, summing(axis_map(key, transpose=False)), axis)
            return xp.ascontiguousarray(x / area_sizes(xp, keys, x.dtype))
        for axis, key in enumerate(keys, start=2):
            x = along(xp, x, axis_map(key, transpose=False), axis)
        return xp.ascontiguousarray(x)

    def backward(self, ctx, grad):
        return (INTERPOLATE_GRAD(grad, input_size=ctx.input_size, **ctx.attrs),)

    def to_onnx(self, emit, inputs, output, attrs):
        (x,) = emit.operands(inputs, emit.dtype(output))
        in_sizes = tuple(emit.shapes[inputs[0]][2:])
        fixed = all(type(n) is int for n in (*in_sizes, *attrs["size"]))
        if attrs["mode"] == "area" and not fixed:
            raise SymbolicSizeError(
                f"[interpolate] exporting mode 'area' needs fixed spatial sizes, got input "
                f"{in_sizes} and output {tuple(attrs['size'])}",
                help="fix the spatial dimensions in the input signature (only the batch and "
                "channels may be symbolic there)",
            )
        tiled = attrs["mode"] == "area" and all(
            m and not n % m for n, m in zip(in_sizes, attrs["size"])
        )
        if tiled:  # windows side by side: an average pooling
            windows = [n // m for n, m in zip(in_sizes, attrs["size"])]
            emit.node("AveragePool", [x], output, kernel_shape=windows, strides=windows)
        elif attrs["mode"] == "area":  # ONNX has no adaptive pooling: the matrices themselves
            matrices = [resize_matrix(*key) for key in axis_keys(in_sizes, attrs)]
            _matrices_to_onnx(emit, x, output, matrices)
        else:
            _resize_to_onnx(emit, x, output, in_sizes, attrs)


class InterpolateGrad(Op):
    """The transpose of ``interpolate``: grad (N, C, *size) -> (N, C, *input_size)."""

    name = "interpolate_grad"
    save_inputs = False

    def infer(self, grad, **attrs) -> ValueSpec:
        shape = tuple(grad.shape[:2]) + tuple(attrs["input_size"])
        return ValueSpec(shape, np.dtype(grad.dtype), grad.device)

    def cost(self, grad, **attrs) -> tuple:
        out = self.infer(grad, **attrs)
        return _resize_cost(grad, out, attrs["input_size"], attrs["size"], attrs["mode"])

    def forward(self, ctx, xp, grad, *, input_size, size, mode, align_corners, scales):
        keys = axis_keys(input_size, _attrs_of(size, mode, align_corners, scales))
        if mode == "area":  # each output's gradient divided once by its bin's size, then spread
            grad = grad / area_sizes(xp, keys, grad.dtype)
            for axis, key in enumerate(keys, start=2):
                grad = along(xp, grad, summing(axis_map(key, transpose=True)), axis)
            return xp.ascontiguousarray(grad)
        for axis, key in enumerate(keys, start=2):
            grad = along(xp, grad, axis_map(key, transpose=True), axis)
        return xp.ascontiguousarray(grad)

    def backward(self, ctx, grad):
        attrs = {k: v for k, v in ctx.attrs.items() if k != "input_size"}
        return (INTERPOLATE(grad, **attrs),)


# ----- ONNX ---------------------------------------------------------------------------------------

# ONNX Resize's coordinate transform for PyTorch's rule of each mode: nearest indexes floor(dst *
# in/out) ("asymmetric", floor); nearest-exact floor((dst + 0.5) * in/out) ("half_pixel" rounded
# half up); linear and cubic use half-pixel centres ("half_pixel", not "pytorch_half_pixel":
# PyTorch maps a size-1 output to the input's centre) or the corners.
_ONNX_RESIZE = {
    "nearest": ("nearest", "asymmetric", {"nearest_mode": "floor"}),
    "nearest-exact": ("nearest", "half_pixel", {"nearest_mode": "round_prefer_ceil"}),
    "linear": ("linear", "half_pixel", {}),
    "cubic": ("cubic", "half_pixel", {"cubic_coeff_a": CUBIC_A, "exclude_outside": 0}),
}


def _resize_to_onnx(emit, x, output, in_sizes, attrs) -> None:
    """One Resize node; PyTorch's scale factors go in as Resize's scales (its coordinate rule
    then uses them, as PyTorch's does), else the output sizes."""
    mode, transform, extra = _ONNX_RESIZE[attrs["mode"]]
    if attrs["align_corners"]:
        transform = "align_corners"
    scales = attrs["scales"]
    if scales and attrs["mode"] == "nearest" and len(in_sizes) == 2:
        # PyTorch's 2-D nearest ignores the factor where out == in or out == 2 * in (a symbolic
        # size has a whole factor, out = factor * in: the factor is then out / in already)
        scales = tuple(
            m / n if type(n) is int and m in (n, 2 * n) else s
            for n, m, s in zip(in_sizes, attrs["size"], scales)
        )
    if scales:
        factors = emit.constant(np.asarray((1.0, 1.0, *scales), dtype=np.float32))
        operands = [x, "", factors]
    else:  # sizes that depend on symbolic input sizes are computed from them at run time
        batch_channels = emit.node("Shape", [x], dtype=np.int64, start=0, end=2)
        spatial = emit.ints(attrs["size"])
        operands = [x, "", "", emit.node("Concat", [batch_channels, spatial], axis=0)]
    emit.node(
        "Resize", operands, output, mode=mode, coordinate_transformation_mode=transform, **extra
    )


def _matrices_to_onnx(emit, x, output, matrices) -> None:
    """Each axis's matrix applied with a MatMul: move the axis last, multiply by W^T, move back."""
    rank = 2 + len(matrices)
    for position, matrix in enumerate(matrices):
        axis = 2 + position
        order = [a for a in range(rank) if a != axis] + [axis]
        back = list(np.argsort(order))
        moved = emit.node("Transpose", [x], perm=order)
        weights = emit.constant(np.ascontiguousarray(matrix.T).astype(emit.dtype(x)))
        product = emit.node("MatMul", [moved, weights])
        last = position == len(matrices) - 1
        x = emit.node("Transpose", [product], output if last else None, perm=[int(a) for a in back])


INTERPOLATE, INTERPOLATE_GRAD = Interpolate(), InterpolateGrad()

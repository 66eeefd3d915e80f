"""Quantisation arithmetic on arrays, with ONNX's conventions (QuantizeLinear): ``q =
saturate(round_half_even(x / scale) + zero_point)``, ``x ~ (q - zero_point) * scale``.

Weights: int8, symmetric (zero point 0), one scale per output channel, range [-127, 127]
(the restricted range int8 kernels assume). Activations: uint8, affine (a zero point), one scale
per tensor.
"""

from __future__ import annotations

import numpy as np

WEIGHT_RANGE = (-127, 127)
ACTIVATION_RANGE = (0, 255)
_TINY = np.float32(np.finfo(np.float32).eps)
# float32 holds every integer up to 2**24 exactly: a GEMM whose sums stay below it is exact
_FLOAT32_EXACT = 2**24


def quantize(xp, x, scale, zero_point, qmin: int, qmax: int, axis: int | None = None):
    """Integer codes of ``x`` (as float32 values; cast by the caller): per tensor, or per slice
    along ``axis`` when ``scale`` is 1-D."""
    scale, zero_point = _along(xp, scale, x.ndim, axis), _along(xp, zero_point, x.ndim, axis)
    codes = xp.divide(x, scale, dtype=xp.float32)  # one new array, then updated in place
    xp.rint(codes, out=codes)
    codes += zero_point
    return xp.clip(codes, qmin, qmax, out=codes)


def dequantize(xp, q, scale, zero_point, axis: int | None = None):
    """``(q - zero_point) * scale`` in float32."""
    scale, zero_point = _along(xp, scale, q.ndim, axis), _along(xp, zero_point, q.ndim, axis)
    return (q.astype(xp.float32) - zero_point) * scale


def _along(xp, value, ndim: int, axis: int | None):
    value = xp.asarray(value, dtype=xp.float32)
    if axis is None or value.ndim == 0:
        return value
    shape = [1] * ndim
    shape[axis] = value.shape[0]
    return value.reshape(shape)


def weight_scales(xp, weight, axis: int = 0):
    """Per-channel symmetric scales ``max|w| / 127`` (float32, one per slice along ``axis``)."""
    other = tuple(a for a in range(weight.ndim) if a != axis)
    largest = xp.abs(weight).max(axis=other) if other else xp.abs(weight)
    return xp.maximum(largest.astype(xp.float32) / np.float32(WEIGHT_RANGE[1]), _TINY)


def quantize_weight(xp, weight, axis: int = 0):
    """``(int8 codes, float32 scales)`` of a weight, per channel along ``axis``."""
    scales = weight_scales(xp, weight, axis)
    codes = quantize(xp, weight, scales, 0, *WEIGHT_RANGE, axis=axis)
    return codes.astype(xp.int8), scales


def affine_qparams(low: float, high: float, qmin: int = 0, qmax: int = 255):
    """``(scale, zero_point)`` mapping [low, high] (widened to hold 0, so that 0 is exact) onto
    [qmin, qmax]: scale float32, zero point an int."""
    low, high = min(float(low), 0.0), max(float(high), 0.0)
    scale = np.float32(max((high - low) / (qmax - qmin), float(_TINY)))
    zero_point = int(np.clip(qmin - np.rint(low / scale), qmin, qmax))
    return scale, zero_point


def dynamic_qparams(xp, x):
    """What ONNX's DynamicQuantizeLinear computes from the values of ``x``: uint8 over
    [min(x, 0), max(x, 0)], ``scale = range / 255``, ``zero_point = round(-min / scale)``."""
    low = min(float(x.min()), 0.0) if x.size else 0.0
    high = max(float(x.max()), 0.0) if x.size else 0.0
    scale = np.float32((high - low) / 255.0)
    if scale == 0:
        return np.float32(1.0), 0
    zero_point = int(np.clip(np.rint(np.float32(-low) / scale), 0, 255))
    return scale, zero_point


def integer_matmul(xp, a, b, bound_a: int, bound_b: int):
    """``a @ b`` of integer-valued arrays (|a| <= bound_a, |b| <= bound_b), exactly, as int32
    accumulation gives it, through float32 BLAS GEMMs: float32 holds every integer below 2**24,
    so the inner dimension is cut into blocks whose sums stay below that, and the blocks' exact
    results are added in float64. NumPy has no int8 GEMM; its integer matmul is a slow loop.

    a: (n, k), b: (k, m) -> (n, m) float32 (exact while the result is below 2**24) or float64.
    """
    depth = a.shape[-1]
    block = max(1, (_FLOAT32_EXACT - 1) // (bound_a * bound_b))
    a32, b32 = a.astype(xp.float32, copy=False), b.astype(xp.float32, copy=False)
    if depth <= block:
        return a32 @ b32
    total = xp.zeros((a.shape[0], b.shape[1]), dtype=xp.float64)
    for start in range(0, depth, block):
        total += a32[:, start : start + block] @ b32[start : start + block]
    return total

"""Compiled twins of ``accel/kernels/activations_fused.py``: flat float32 arrays, one pass,
the branches as selects, NaN sent where the records send it.

expm1 below 0 is exp(x) - 1 from ``exp32`` for x < -0.5, where the subtraction loses nothing
that matters (the result is at least 0.39 in size), and a degree-8 Taylor polynomial above,
whose first omitted term is below 6e-9 of the result; libm's ``expm1f`` would keep the loop
scalar.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from .activations import _log1p_small
from .expf import exp32

_ZERO = np.float32(0.0)
_ONE = np.float32(1.0)
_HALF = np.float32(0.5)
_THREE = np.float32(3.0)
_SIX = np.float32(6.0)
_MINUS_THREE = np.float32(-3.0)
_MINUS_HALF = np.float32(-0.5)
_TAYLOR = tuple(np.float32(1.0 / f) for f in (40320, 5040, 720, 120, 24, 6, 2))

kernel = njit(parallel=True, nogil=True, cache=True, fastmath={"contract"})


@njit(inline="always", fastmath={"contract"})
def _expm1_negative(x):
    """expm1(x) for x <= 0 (and NaN)."""
    p = _TAYLOR[0] * x + _TAYLOR[1]
    p = p * x + _TAYLOR[2]
    p = p * x + _TAYLOR[3]
    p = p * x + _TAYLOR[4]
    p = p * x + _TAYLOR[5]
    p = p * x + _TAYLOR[6]
    p = p * x + _ONE
    small = p * x
    return exp32(x) - _ONE if x < _MINUS_HALF else small


@njit(inline="always")
def _ramp(v):
    r = v + _THREE
    r = _ZERO if r < _ZERO else r  # comparisons are false for NaN: NaN passes through
    return _SIX if r > _SIX else r


@kernel
def exponential_linear(x, out, alpha, scale, input_scale):
    negative_scale = np.float32(alpha * scale)
    linear_scale = np.float32(scale)
    inner = np.float32(input_scale)
    for i in prange(x.size):
        v = x[i]
        low = _ZERO if v > _ZERO else v
        negative = _expm1_negative(low * inner) * negative_scale
        out[i] = negative if v <= _ZERO else v * linear_scale


@kernel
def exponential_linear_grad(grad, x, out, alpha, scale, input_scale):
    slope_scale = np.float32(alpha * scale * input_scale)
    linear_scale = np.float32(scale)
    inner = np.float32(input_scale)
    for i in prange(x.size):
        v = x[i]
        low = _ZERO if v > _ZERO else v
        slope = exp32(low * inner) * slope_scale
        out[i] = grad[i] * (slope if v <= _ZERO else linear_scale)


@kernel
def hardsigmoid(x, out):
    for i in prange(x.size):
        out[i] = _ramp(x[i]) / _SIX


@kernel
def hardsigmoid_grad(grad, x, out, one_sixth):
    sixth = np.float32(one_sixth)
    for i in prange(x.size):
        v = x[i]
        out[i] = grad[i] * sixth if (v > _MINUS_THREE and v < _THREE) else _ZERO


@kernel
def hardswish(x, out):
    for i in prange(x.size):
        v = x[i]
        out[i] = v * _ramp(v) / _SIX


@kernel
def hardswish_grad(grad, x, out):
    for i in prange(x.size):
        v = x[i]
        g = grad[i]
        inside = g * (v / _THREE + _HALF) if v < _THREE else g
        out[i] = _ZERO if v <= _MINUS_THREE else inside


@kernel
def logsigmoid(x, out):
    """min(x, 0) - log1p(exp(-|x|)); exp(-|x|) is in [0, 1], where the series log1p holds."""
    for i in prange(x.size):
        v = x[i]
        below = v if v < _ZERO else _ZERO  # NaN -> 0 here, and NaN from the log1p below
        out[i] = below - _log1p_small(exp32(-abs(v)))


@kernel
def logsigmoid_grad(grad, x, out):
    """grad * sigmoid(-x) = grad / (1 + exp(x)): 0 where exp(x) is inf, NaN stays NaN."""
    for i in prange(x.size):
        out[i] = grad[i] / (_ONE + exp32(x[i]))

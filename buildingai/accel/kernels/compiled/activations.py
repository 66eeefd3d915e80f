"""Compiled twins of the activation kernels: each reads its inputs once and writes its outputs
once, on numba's threads. The NumPy kernels they stand in for (same arguments, plus ``xp``
first) are in ``accel/kernels/activations.py`` and ``accel/kernels/gelu32.py``; arrays are flat
float32 of one length, and every formula is the NumPy kernel's, so results agree to a few units
in the last place (``tests/accel/kernels/test_compiled.py``).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

from ..gelu32 import _K
from .expf import exp32, exp32_nonpositive, tanh32

_ZERO = np.float32(0.0)
_ONE = np.float32(1.0)
_HALF = np.float32(0.5)
_SQRT_2_OVER_PI = math.sqrt(2 / math.pi)
_TWO_K = np.float32(2 * _SQRT_2_OVER_PI)
_TWO_K_CUBIC = np.float32(2 * _SQRT_2_OVER_PI * 0.044715)
_SIX_K_CUBIC = np.float32(6 * _SQRT_2_OVER_PI * 0.044715)
_MINUS_HALF = np.float32(-0.5)
_INV_SQRT_2PI = np.float32(1 / math.sqrt(2 * math.pi))

# contract: a multiply and the add after it become one FMA (one rounding instead of two)
kernel = njit(parallel=True, nogil=True, cache=True, fastmath={"contract"})


@njit(inline="always", fastmath={"contract"})
def _sigmoid(x):
    return _ONE / (_ONE + exp32(-x))


@kernel
def relu(x, out):
    """out = max(x, 0); NaN stays NaN."""
    for i in prange(x.size):
        v = x[i]
        out[i] = _ZERO if v <= _ZERO else v


@kernel
def relu_grad(grad, out, result):
    """result = grad where out != 0, else 0."""
    for i in prange(grad.size):
        result[i] = grad[i] if out[i] != _ZERO else _ZERO


@kernel
def leaky_relu(x, out, slope):
    """out = x where x > 0, else slope * x."""
    slope = np.float32(slope)
    for i in prange(x.size):
        v = x[i]
        out[i] = v if v > _ZERO else v * slope


@kernel
def leaky_relu_grad(grad, x, result, slope):
    """result = grad where x > 0, else slope * grad."""
    slope = np.float32(slope)
    for i in prange(x.size):
        g = grad[i]
        result[i] = g if x[i] > _ZERO else g * slope


@kernel
def sigmoid(x, out):
    """out = 1 / (1 + exp(-x))."""
    for i in prange(x.size):
        out[i] = _sigmoid(x[i])


@kernel
def sigmoid_grad(grad, s, out):
    """out = grad * s (1 - s)."""
    for i in prange(s.size):
        v = s[i]
        out[i] = (_ONE - v) * v * grad[i]


@kernel
def tanh(x, out):
    """out = tanh(x) (``expf.tanh32``: NumPy's float32 tanh calls libm value by value)."""
    for i in prange(x.size):
        out[i] = tanh32(x[i])


@kernel
def tanh_grad(grad, t, out):
    """out = grad (1 - t^2)."""
    for i in prange(t.size):
        v = t[i]
        out[i] = (_ONE - v * v) * grad[i]


@kernel
def silu(x, sigmoid, out):
    """sigmoid = 1 / (1 + exp(-x)), out = x * sigmoid."""
    for i in prange(x.size):
        v = x[i]
        s = _sigmoid(v)
        sigmoid[i] = s
        out[i] = v * s


@kernel
def silu_grad(grad, x, s, out):
    """out = grad * s (1 + x (1 - s))."""
    for i in prange(x.size):
        v = s[i]
        out[i] = ((_ONE - v) * x[i] + _ONE) * v * grad[i]


@kernel
def gelu(x, out, cdf):
    """cdf = Phi(x) = (1 + tanh(x K(x^2))) / 2 = sigmoid(2 x K(x^2)), out = x cdf."""
    for i in prange(x.size):
        v = x[i]
        z = v * v
        k = _K[0] * z + _K[1]
        k = k * z + _K[2]
        k = k * z + _K[3]
        k = k * z + _K[4]
        k = k * z + _K[5]
        k = k * z + _K[6]
        phi = _sigmoid(np.float32(2.0) * v * k)
        cdf[i] = phi
        out[i] = v * phi


@kernel
def gelu_grad(grad, x, cdf, out):
    """out = grad (Phi(x) + x phi(x)), phi(x) = exp(-x^2 / 2) / sqrt(2 pi)."""
    for i in prange(x.size):
        v = x[i]
        density = exp32_nonpositive(_MINUS_HALF * v * v) * _INV_SQRT_2PI  # exponent <= 0
        out[i] = (density * v + cdf[i]) * grad[i]


@kernel
def gelu_tanh(x, out, gate):
    """gate = sigmoid(2u), u = sqrt(2/pi) (x + 0.044715 x^3); out = x gate."""
    for i in prange(x.size):
        v = x[i]
        s = _sigmoid((_TWO_K_CUBIC * v * v + _TWO_K) * v)
        gate[i] = s
        out[i] = v * s


@kernel
def gelu_tanh_grad(grad, x, gate, out):
    """out = grad * s (1 + 2 x u' (1 - s)), s = gate, u' = sqrt(2/pi) (1 + 3 * 0.044715 x^2),
    1 - s computed as sigmoid(-2u) (see the NumPy kernel)."""
    for i in prange(x.size):
        v = x[i]
        s = gate[i]
        slope = (_SIX_K_CUBIC * v * v + _TWO_K) * v
        rest = _sigmoid(-(_TWO_K_CUBIC * v * v + _TWO_K) * v)
        out[i] = (slope * rest + _ONE) * s * grad[i]


# log1p(e) = 2 atanh(s), s = e / (2 + e): for e in [0, 1], s <= 1/3, and the series
# 2 s (1 + s^2/3 + s^4/5 + ...) to s^14 is within float32 rounding
_ATANH = tuple(np.float32(1 / (2 * k + 1)) for k in range(7, -1, -1))
_TWO = np.float32(2.0)


@njit(inline="always", fastmath={"contract"})
def _log1p_small(e):
    """log(1 + e) for 0 <= e <= 1 (float32), vectorisable."""
    s = e / (_TWO + e)
    w = s * s
    p = _ATANH[0] * w + _ATANH[1]
    p = p * w + _ATANH[2]
    p = p * w + _ATANH[3]
    p = p * w + _ATANH[4]
    p = p * w + _ATANH[5]
    p = p * w + _ATANH[6]
    p = p * w + _ATANH[7]
    return _TWO * s * p


@kernel
def softplus(x, out, beta, threshold):
    """out = log(1 + exp(beta x)) / beta = (max(y, 0) + log1p(exp(-|y|))) / beta with y = beta x,
    and x itself where y > threshold."""
    beta = np.float32(beta)
    threshold = np.float32(threshold)
    for i in prange(x.size):
        v = x[i]
        y = v * beta
        positive = y if y > _ZERO else _ZERO  # NaN -> 0 here, and NaN from the log1p below
        soft = (positive + _log1p_small(exp32(-abs(y)))) / beta
        out[i] = v if y > threshold else soft


@kernel
def softplus_grad(grad, x, out, beta, threshold):
    """out = grad * sigmoid(beta x), and grad where beta x > threshold."""
    beta = np.float32(beta)
    threshold = np.float32(threshold)
    for i in prange(x.size):
        y = x[i] * beta
        g = grad[i]
        out[i] = g if y > threshold else g * _sigmoid(y)

"""exp and tanh for float32 inside numba loops, in a form LLVM vectorises.

numba calls libm's ``expf`` one value at a time, which keeps a loop scalar. Here exp(x) =
2^n exp(r), n = round(x / ln 2), r = x - n ln 2 (ln 2 in two parts, so r is exact), exp(r) a
degree-7 polynomial on |r| <= ln 2 / 2 (Cephes' ``expf`` coefficients) and 2^n built in the
exponent bits: within 1 unit in the last place of libm's result from ln(FLT_MIN) to 88. Above
ln(FLT_MAX) the result is inf and below ln(FLT_MIN) it is 0 (libm gives subnormals down to
-103.9; every caller here, sigmoids and softmax shifted by its maximum, adds them to at least
1). NaN stays NaN.

n is rounded by adding 1.5 * 2^23 (+ 127, the exponent bias): at that magnitude a float32 has
no fraction bits, so the addition rounds x / ln 2 to an integer, and the sum's low mantissa bits
are n + 127 itself, shifted into the exponent field by one integer shift. This replaces a floor
and a float-to-integer conversion (which AVX-512 does through 64-bit lanes). Below ln(FLT_MIN)
the bits mean nothing and a final select gives 0, so no lower clamp is needed.
"""

from __future__ import annotations

import numpy as np
from numba import njit

_LOG2E = np.float32(1.4426950408889634)
_LN2_HIGH = np.float32(0.693359375)
_LN2_LOW = np.float32(-2.12194440e-4)
_HIGHEST = np.float32(88.0)  # the clamp keeps 2^n a normal float32; past it the result saturates
_OVERFLOW = np.float32(88.72283)  # ln(FLT_MAX)
_UNDERFLOW = np.float32(-87.33654)  # ln(FLT_MIN)
_INF = np.float32(np.inf)
_ZERO = np.float32(0.0)
_HALF = np.float32(0.5)
_ONE = np.float32(1.0)
_ROUNDER = np.float32(1.5 * 2**23 + 127)  # x / ln 2 + this: n + 127 in the low mantissa bits
_P = tuple(
    np.float32(c)
    for c in (1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2, 1.6666665459e-1)
)


@njit(inline="always", fastmath={"contract"})
def _scaled_polynomial(x):
    """2^n exp(r) for float32 x in [ln(FLT_MIN), 88]; meaningless (but no trap) elsewhere."""
    rounded = x * _LOG2E + _ROUNDER
    n = rounded - _ROUNDER
    r = x - n * _LN2_HIGH
    r = r - n * _LN2_LOW
    p = _P[0] * r + _P[1]
    p = p * r + _P[2]
    p = p * r + _P[3]
    p = p * r + _P[4]
    p = p * r + _HALF
    p = p * r * r + r + _ONE
    scale = np.float32(rounded).view(np.int32) << np.int32(23)  # (n + 127) << 23: 2^n
    return p * np.int32(scale).view(np.float32)


@njit(inline="always", fastmath={"contract"})
def exp32(value):
    """exp(value) for a float32 scalar (see the module docstring for range and accuracy)."""
    x = _HIGHEST if value > _HIGHEST else value  # comparisons false for NaN: NaN passes through
    result = _scaled_polynomial(x)
    result = _INF if value > _OVERFLOW else result
    return _ZERO if value < _UNDERFLOW else result  # also where the polynomial meant nothing


@njit(inline="always", fastmath={"contract"})
def exp32_nonpositive(value):
    """exp(value) for a float32 scalar at most 0 (or -inf, or NaN), as ``exp32`` gives it,
    without the upper clamp and overflow test: about 30% fewer operations. For softmax rows
    shifted by their maximum and for log-probabilities."""
    result = _scaled_polynomial(value)
    return _ZERO if value < _UNDERFLOW else result


_TWO = np.float32(2.0)
_SMALL = np.float32(0.625)
_T = tuple(
    np.float32(c)
    for c in (-5.70498872745e-3, 2.06390887954e-2, -5.37397155531e-2, 1.33314422036e-1,
              -3.33332819422e-1)
)  # fmt: skip


@njit(inline="always", fastmath={"contract"})
def tanh32(x):
    """tanh of a float32 scalar, Cephes' ``tanhf`` form: an odd polynomial below 0.625,
    1 - 2 / (e^{2|x|} + 1) above (e^{2|x|} by ``exp32``), within a few units in the last place
    of libm's. NaN stays NaN, +-inf give +-1."""
    z = abs(x)
    large = _ONE - _TWO / (exp32(_TWO * z) + _ONE)
    large = -large if x < 0 else large
    square = x * x
    p = _T[0] * square + _T[1]
    p = p * square + _T[2]
    p = p * square + _T[3]
    p = p * square + _T[4]
    small = p * square * x + x
    return small if z < _SMALL else large

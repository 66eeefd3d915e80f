"""Exact GELU, x Phi(x), and its derivative Phi(x) + x phi(x), for float32 NumPy arrays.

NumPy has no erf, and a float32-grade rational erf (Eigen's, ``ops/special.py``'s reference) costs
about 24 array passes. Here Phi(x) = (1 + tanh(x K(x^2))) / 2, where K is a degree-6 polynomial
fitted (weighted minimax, float64) to atanh(erf(x / sqrt 2)) / x on [0, 4.5]: 17 passes and one
``tanh``, which NumPy vectorises and which saturates to +-1 by itself for large |x| (K grows without
bound, so no clamp pass is needed; inf and NaN propagate). Evaluated in float32, gelu is within
6.2e-7 (absolute) of the exact value over [-12, 12], and within about 1.3 units in the last place
where |gelu| > 1; Phi is within 1.3e-7. Registered as the ``gelu`` and ``gelu_grad`` records'
kernels ``gelu.float32_polynomial`` (``accel/activations.py``).
"""

from __future__ import annotations

import math

import numpy as np

from .compiled import ANY_SIZE, compiled_twin

# K(z), highest power first; erf(x / sqrt 2) = tanh(x K(x^2))
_K = tuple(
    np.float32(c)
    for c in (
        1.9758805445131433e-09,
        -1.4029606377280742e-07,
        4.069950997784103e-06,
        -5.5920934272512266e-05,
        -3.097048850184298e-05,
        0.03633135723926188,
        0.797885452124533,
    )
)
_HALF = np.float32(0.5)
_MINUS_HALF = np.float32(-0.5)
_LOG_INV_SQRT_2PI = np.float32(-0.5 * math.log(2 * math.pi))


@compiled_twin("activations.gelu", min_work=ANY_SIZE)
def gelu_forward(xp, x, out, cdf) -> None:
    """out = x Phi(x) and cdf = Phi(x) for float32 arrays of one shape (``out`` and ``cdf``
    distinct). Large |x| overflows x^2 and K harmlessly to inf (tanh(+-inf) = +-1)."""
    with np.errstate(over="ignore", invalid="ignore"):
        np.multiply(x, x, out=out)  # z = x^2, in out as scratch
        np.multiply(out, _K[0], out=cdf)
        cdf += _K[1]
        for coefficient in _K[2:]:
            cdf *= out
            cdf += coefficient
        cdf *= x
        np.tanh(cdf, out=cdf)
    cdf += 1
    cdf *= _HALF
    np.multiply(x, cdf, out=out)


@compiled_twin("activations.gelu_grad", min_work=ANY_SIZE)
def gelu_backward(xp, grad, x, cdf, out) -> None:
    """out = grad (Phi(x) + x phi(x)), phi(x) = exp(-x^2 / 2) / sqrt(2 pi), with ``cdf`` the
    forward's Phi(x); float32 arrays of one shape."""
    np.multiply(x, _MINUS_HALF, out=out)
    out *= x
    out += _LOG_INV_SQRT_2PI  # folds 1 / sqrt(2 pi) into the exponent: one pass less
    np.exp(out, out=out)
    out *= x
    out += cdf
    out *= grad

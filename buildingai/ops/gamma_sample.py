"""Gamma(alpha, 1) draws with implicit reparameterisation gradients (Figurnov, Mohamed and
Mnih, 2018).

A Gamma(alpha, 1) sample z is not a smooth function of alpha and fixed noise, but it is the
alpha-quantile of fixed uniform noise u = P(alpha, z) (P: the regularised lower incomplete gamma
function). Holding u fixed, dz/dalpha = -(dP/dalpha) / p(z; alpha), where p is the density.
Dividing through by p leaves two well-conditioned forms:

- below the mode's tail (z <= alpha + 1), a series:
  dz/dalpha = -sum_n z^(n+1) / (alpha (alpha+1) ... (alpha+n)) (log z - digamma(alpha+n+1));
- above it, the upper-tail integral
  dz/dalpha = integral_0^inf (log(z+s) - digamma(alpha)) (1 + s/z)^(alpha-1) e^(-s) ds,
  by Gauss-Laguerre quadrature after rescaling s so that the integrand decays like e^(-v).

Both are accurate to about 1e-9 relative for alpha up to ``_LARGE_ALPHA``; beyond it the
Wilson-Hilferty cube-root normal approximation z = alpha (1 - 1/(9 alpha) + e / (3 sqrt(alpha)))^3
is differentiated with its normal deviate e held fixed (relative error about 1e-6 at alpha = 400,
falling as alpha grows). ``STANDARD_GAMMA`` draws z (an effectful record, like every draw); its backward multiplies
the output gradient by dz/dalpha from ``STANDARD_GAMMA_SLOPE``, which is exact to first order and
not differentiated a second time.
"""

from __future__ import annotations

import numpy as np

from ..backend.device import CPU, device_of, to_device
from .base import Op
from .gamma_functions import polygamma_array
from .random import _stream

_SERIES_TERMS = 400
_LAGUERRE_NODES, _LAGUERRE_WEIGHTS = np.polynomial.laguerre.laggauss(80)
_LARGE_ALPHA = 400.0


class StandardGamma(Op):
    """One Gamma(alpha, 1) sample per element of ``alpha`` (any shape -> the same shape and
    dtype), differentiable in ``alpha`` through the implicit gradient dz/dalpha."""

    name = "standard_gamma"
    save_inputs, save_output = True, True
    effectful = True

    def forward(self, ctx, xp, alpha, *, generator=None):
        drawn = _stream(generator, device_of(alpha)).standard_gamma(alpha.astype(xp.float64))
        tiny = np.finfo(alpha.dtype).tiny  # a sample that underflows to 0 has no log
        return xp.maximum(xp.asarray(drawn), tiny).astype(alpha.dtype)

    def backward(self, ctx, grad):
        return (grad * STANDARD_GAMMA_SLOPE(ctx.inputs[0], ctx.output),)

    def infer(self, alpha, *, generator=None):
        return alpha


class StandardGammaSlope(Op):
    """dz/dalpha at fixed quantile for Gamma(alpha, 1) samples ``z`` (same shapes), in the
    dtype of ``alpha``; computed in float64 on the host. Not differentiable."""

    name = "standard_gamma_slope"
    save_inputs = False
    differentiable = False

    def forward(self, ctx, xp, alpha, z):
        host = [to_device(a, CPU).astype(np.float64) for a in (alpha, z)]
        slope = standard_gamma_grad(*host).astype(alpha.dtype)
        return xp.asarray(slope)

    def infer(self, alpha, z):
        return alpha


def standard_gamma_grad(alpha: np.ndarray, z: np.ndarray) -> np.ndarray:
    """dz/dalpha at fixed quantile for Gamma(alpha, 1) samples ``z`` (float64 arrays)."""
    alpha, z = np.broadcast_arrays(np.asarray(alpha, np.float64), np.asarray(z, np.float64))
    out = np.empty(alpha.shape)
    large = alpha > _LARGE_ALPHA
    lower = ~large & (z <= alpha + 1)
    upper = ~large & ~lower
    if lower.any():
        out[lower] = _lower_series(alpha[lower], z[lower])
    if upper.any():
        out[upper] = _upper_integral(alpha[upper], z[upper])
    if large.any():
        out[large] = _wilson_hilferty(alpha[large], z[large])
    return np.where(np.isfinite(out), out, 0.0)


def _lower_series(alpha, z):
    log_z = np.log(z)
    digamma = polygamma_array(np, 0, alpha)
    term = np.ones_like(alpha)
    total = np.zeros_like(alpha)
    for n in range(_SERIES_TERMS):
        term = term * z / (alpha + n)  # z^(n+1) / (alpha)_(n+1)
        digamma = digamma + 1.0 / (alpha + n)  # digamma(alpha + n + 1)
        contribution = term * (log_z - digamma)
        total += contribution
        if np.all(np.abs(contribution) <= 1e-17 * np.abs(total) + 1e-300):
            break
    return -total


def _upper_integral(alpha, z):
    digamma = polygamma_array(np, 0, alpha)
    # rescale s = v / rate so that (1 + s/z)^(alpha-1) e^(-s) decays like e^(-v) near s = 0
    rate = np.maximum(1.0 - (alpha - 1.0) / z, 1.0 / (1.0 + np.sqrt(np.abs(alpha))))
    v = _LAGUERRE_NODES[:, None]
    s = v / rate
    log_weight = (alpha - 1.0) * np.log1p(s / z) - s + v
    values = (np.log(z + s) - digamma) * np.exp(log_weight) / rate
    return (_LAGUERRE_WEIGHTS[:, None] * values).sum(axis=0)


def _wilson_hilferty(alpha, z):
    # z = alpha c^3, c = 1 - 1/(9 alpha) + e / (3 sqrt(alpha)); hold e fixed
    c = np.cbrt(z / alpha)
    deviate = (c - 1.0 + 1.0 / (9.0 * alpha)) * 3.0 * np.sqrt(alpha)
    dc = 1.0 / (9.0 * alpha**2) - deviate / (6.0 * alpha**1.5)
    return c**3 + 3.0 * alpha * c**2 * dc


STANDARD_GAMMA, STANDARD_GAMMA_SLOPE = StandardGamma(), StandardGammaSlope()

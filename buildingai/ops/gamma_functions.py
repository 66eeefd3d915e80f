"""The log-gamma function and its derivatives, the polygamma functions (digamma is order 0):
what the Gamma, Beta and Dirichlet-family densities, entropies and KL divergences need.

NumPy has none of them. Each is evaluated in float64 the textbook way: the recurrence
Gamma(x + 1) = x Gamma(x) moves every argument up to at least ``_ASYMPTOTIC_FROM``, where the
Stirling (lgamma) or the Bernoulli-number asymptotic series (polygamma) is accurate to about
1e-15; the reflection formulas handle x < 0.5 for lgamma, digamma and trigamma. Poles (0, -1,
-2, ...) give inf or nan as in PyTorch. The derivative of lgamma is digamma and that of
polygamma(n) is polygamma(n + 1), so every order differentiates again.
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import ArgumentError
from .families import FloatFunction
from .promotion import as_float

_ASYMPTOTIC_FROM = 15.0
# Bernoulli numbers B_2, B_4, ..., B_20
_BERNOULLI = (
    1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6, -3617 / 510, 43867 / 798,
    -174611 / 330,
)  # fmt: skip
_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)


def _shifted(xp, x, threshold: float):
    """``(z, steps)``: z = x + k with the least k >= 0 that puts z at or above ``threshold``, and
    the masks of each shift step (``steps[j]``: where x + j was still below it)."""
    z = x.copy()
    steps = []
    while True:
        below = z < threshold
        if not below.any():
            return z, steps
        steps.append((below, z.copy()))
        z = xp.where(below, z + 1.0, z)


def lgamma_array(xp, x):
    """log |Gamma(x)| elementwise, in the array's floating dtype."""
    dtype = x.dtype
    x = x.astype(xp.float64)
    reflect = x < 0.5
    positive = xp.where(reflect, 1.0 - x, x)  # lgamma(x) from lgamma(1 - x) below 0.5
    z, steps = _shifted(xp, positive, _ASYMPTOTIC_FROM)
    inverse = 1.0 / z
    inverse_sq = inverse * inverse
    series = 0.0
    for k in range(len(_BERNOULLI) - 1, -1, -1):  # sum B_2k / (2k (2k - 1) z^(2k - 1))
        series = series * inverse_sq + _BERNOULLI[k] / ((2 * k + 2) * (2 * k + 1))
    out = (z - 0.5) * xp.log(z) - z + _HALF_LOG_2PI + series * inverse
    for below, value in steps:  # Gamma(z) = Gamma(z + 1) / z
        out = out - xp.where(below, xp.log(value), 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):  # (NumPy warnings; CuPy raises none)
        sine = xp.abs(xp.sin(math.pi * x))
        reflected = math.log(math.pi) - xp.log(sine) - out
    out = xp.where(reflect, reflected, out)
    out = xp.where(reflect & (x == xp.floor(x)), xp.inf, out)  # poles at 0, -1, -2, ...
    return out.astype(dtype, copy=False)


def polygamma_array(xp, n: int, x):
    """The n-th derivative of digamma elementwise (n = 0: digamma), in the array's dtype."""
    dtype = x.dtype
    x = x.astype(xp.float64)
    reflect = (x < 0.5) if n <= 1 else xp.zeros(x.shape, dtype=bool)
    positive = xp.where(reflect, 1.0 - x, x)
    z, steps = _shifted(xp, positive, _ASYMPTOTIC_FROM)
    inverse = 1.0 / z
    inverse_sq = inverse * inverse
    sign = -1.0 if n % 2 == 0 else 1.0  # (-1)^(n + 1)
    if n == 0:
        series = 0.0
        for k in range(len(_BERNOULLI) - 1, -1, -1):  # sum B_2k / (2k z^2k)
            series = series * inverse_sq + _BERNOULLI[k] / (2 * k + 2)
        out = xp.log(z) - 0.5 * inverse - series * inverse_sq
    else:
        series = 0.0
        for k in range(len(_BERNOULLI) - 1, -1, -1):  # sum B_2k (2k + n - 1)! / (2k)! / z^2k
            weight = math.factorial(2 * k + 2 + n - 1) / math.factorial(2 * k + 2)
            series = series * inverse_sq + _BERNOULLI[k] * weight
        leading = math.factorial(n - 1) + math.factorial(n) * 0.5 * inverse
        out = sign * inverse**n * (leading + series * inverse_sq)
    term_scale = -1.0 if n == 0 else sign * math.factorial(n)
    for below, value in steps:  # psi_n(z) = psi_n(z + 1) + (-1)^(n+1) n! / z^(n+1)
        out = out + xp.where(below, term_scale / value ** (n + 1), 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):  # (NumPy warnings; CuPy raises none)
        if n == 0:  # psi(x) = psi(1 - x) - pi / tan(pi x)
            reflected = out - math.pi / xp.tan(math.pi * x)
        else:  # psi_1(x) = pi^2 / sin^2(pi x) - psi_1(1 - x)
            reflected = (math.pi / xp.sin(math.pi * x)) ** 2 - out
    out = xp.where(reflect, reflected, out)
    pole = x == xp.floor(x)
    pole &= x <= 0
    if pole.any():
        # PyTorch: digamma(0) = -inf, nan at the negative integers; polygamma(n >= 1) inf or nan
        out = xp.where(pole, xp.nan, out)
        if n == 0:
            out = xp.where(x == 0, -xp.inf, out)
    return out.astype(dtype, copy=False)


# ----- op records ----------------------------------------------------------------------------


class Lgamma(FloatFunction):
    name = "lgamma"  # ONNX has no log-gamma operator
    flops_per_element = 60  # shifts, logs and a ten-term series

    def forward(self, ctx, xp, x):
        return lgamma_array(xp, as_float(x))

    def backward(self, ctx, grad):
        (x,) = ctx.inputs
        return (grad * POLYGAMMA(x, n=0),)


class Polygamma(FloatFunction):
    """polygamma(x, n): the (n + 1)-th derivative of lgamma; n = 0 is digamma."""

    name = "polygamma"  # ONNX has no polygamma operator
    flops_per_element = 60

    def check(self, x, *, n) -> None:
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise ArgumentError(
                f"[polygamma] the order n must be an int >= 0, got {n!r}",
                help="polygamma(0, x) is digamma, polygamma(1, x) trigamma, ...",
            )

    def forward(self, ctx, xp, x, *, n: int):
        return polygamma_array(xp, n, as_float(x))

    def backward(self, ctx, grad):
        (x,) = ctx.inputs
        return (grad * POLYGAMMA(x, n=ctx.attrs["n"] + 1),)


LGAMMA, POLYGAMMA = Lgamma(), Polygamma()

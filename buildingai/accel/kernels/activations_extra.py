"""Array kernels of the activations in ``ops/activation_extra.py``: each forward and each first
derivative in a few in-place passes over preallocated arrays, so ``split.elementwise`` can cut
them across threads. ``kernel(xp, x, out)`` writes f(x) or f'(x) into ``out`` (x's shape and
float dtype); the comparisons send NaN to the branch PyTorch's kernels send it to. They are
registered against their records in ``accel/activations.py``.
"""

from __future__ import annotations

import numpy as np

# Branches are blended arithmetically (masked writes over irregular masks are slow; see
# docs/design_notes/performance.md); the rare NaN is patched with copyto over a near-empty mask.

# ----- the exponential-linear family: scale * x above 0, alpha * scale * expm1(input_scale * x)


def exponential_linear(xp, x, out, *, alpha, scale, input_scale) -> None:
    """expm1(input_scale * min(x, 0)) * alpha * scale + scale * max(x, 0) (NaN stays NaN)."""
    xp.clip(x, -xp.inf, 0, out=out)
    if input_scale != 1:
        out *= input_scale
    xp.expm1(out, out=out)
    out *= alpha * scale
    positive = xp.clip(x, 0, xp.inf, out=xp.empty_like(out))
    if scale != 1:
        positive *= scale
    out += positive


def exponential_linear_derivative(xp, x, out, *, alpha, scale, input_scale) -> None:
    """alpha * scale * input_scale * exp(input_scale * x) up to 0, then scale (NaN: scale)."""
    xp.clip(x, -xp.inf, 0, out=out)
    if input_scale != 1:
        out *= input_scale
    xp.exp(out, out=out)
    out *= alpha * scale * input_scale
    below = xp.less_equal(x, 0, out=xp.empty_like(out))  # 1.0 or 0.0
    out *= below
    below -= 1
    below *= -scale  # scale where x > 0
    out += below
    _patch_nan(xp, x, out, scale)


def _patch_nan(xp, x, out, value) -> None:
    """out = value where x is NaN (PyTorch's kernels send NaN to their else branch)."""
    nan = xp.isnan(x)
    if nan.any():
        xp.copyto(out, value, where=nan)


# ----- the hard functions: ramps clipped to [0, 6] ------------------------------------------------


def _ramp(xp, x, out) -> None:
    """out = min(max(x + 3, 0), 6) (NaN stays NaN)."""
    xp.add(x, 3, out=out)
    xp.clip(out, 0, 6, out=out)


def hardsigmoid(xp, x, out) -> None:
    _ramp(xp, x, out)
    out /= 6


def hardsigmoid_derivative(xp, x, out, *, one_sixth) -> None:
    """one_sixth strictly inside (-3, 3), else 0 (NaN: 0)."""
    xp.abs(x, out=out)
    xp.less(out, 3, out=out)
    out *= one_sixth


def hardswish(xp, x, out) -> None:
    _ramp(xp, x, out)
    out *= x
    out /= 6


def hardswish_derivative(xp, x, out) -> None:
    """0 up to -3, x / 3 + 0.5 inside (-3, 3), then 1 (NaN: 1)."""
    xp.clip(x, -3, 3, out=out)
    out /= 3
    out += 0.5
    inside = xp.abs(x, out=xp.empty_like(out))
    xp.less(inside, 3, out=inside)
    out *= inside
    above = xp.greater_equal(x, 3, out=inside)
    out += above
    _patch_nan(xp, x, out, 1)


def threshold(xp, x, out, *, threshold, value) -> None:
    """value where x <= threshold, else x (NaN stays NaN)."""
    replaced = xp.less_equal(x, threshold, out=xp.empty_like(out))  # 1.0 or 0.0
    xp.subtract(1, replaced, out=out)
    with np.errstate(invalid="ignore"):  # -inf * 0, patched below
        out *= x
    if value != 0:
        replaced *= value
        out += replaced
    infinite = xp.isinf(x)  # -inf * 0 is NaN: those replaced write value directly
    if infinite.any():
        xp.copyto(out, value, where=infinite & (x <= threshold))


# ----- the smooth functions -----------------------------------------------------------------------


def mish(xp, x, out) -> None:
    """x * tanh(log1p(exp(x))) as x * n / (n + 2), n = e (e + 2), e = exp(x): tanh(log1p(e))
    is ((1 + e)^2 - 1) / ((1 + e)^2 + 1), one exp instead of three rounded functions. x is
    clipped at ``MISH_CLIP`` for the exp: the fraction is 1 in float32 long before, and n stays
    finite."""
    xp.minimum(x, MISH_CLIP, out=out)
    xp.exp(out, out=out)
    n = out + 2
    n *= out  # e (e + 2)
    xp.add(n, 2, out=out)
    xp.divide(n, out, out=out)  # tanh(softplus(x))
    out *= x


MISH_CLIP = 40.0


def mish_derivative(xp, x, out) -> None:
    """t + x sigmoid(x) (1 - t^2) with t = tanh(softplus(x)) = 1 - d, d = 2 / (n + 2),
    n = e (e + 2), e = exp(x): 1 - t^2 = d (2 - d) keeps its digits where t is near 1, and
    sigmoid(x) = 1 / (1 + 1/e) is 1 where e overflows, 0 where it underflows."""
    e = xp.empty_like(out)
    with np.errstate(over="ignore", divide="ignore"):
        xp.exp(x, out=e)
        xp.add(e, 2, out=out)
        out *= e
        out += 2
        xp.divide(2, out, out=out)  # d: 0 where n overflowed
        xp.reciprocal(e, out=e)
    e += 1
    xp.reciprocal(e, out=e)  # sigmoid(x)
    e *= x
    e *= out
    xp.subtract(2, out, out=out)  # 2 - d
    e *= out
    out -= 1  # t = 1 - d
    out += e


def logsigmoid(xp, x, out) -> None:
    """min(x, 0) - log1p(exp(-|x|)): exp never overflows."""
    xp.abs(x, out=out)
    xp.negative(out, out=out)
    xp.exp(out, out=out)
    xp.log1p(out, out=out)
    xp.subtract(xp.clip(x, -xp.inf, 0, out=xp.empty_like(out)), out, out=out)


def logsigmoid_derivative(xp, x, out) -> None:
    """sigmoid(-x) = 1 / (1 + exp(x)): 0 where exp overflows."""
    with np.errstate(over="ignore"):
        xp.exp(x, out=out)
    out += 1
    xp.reciprocal(out, out=out)


def softsign(xp, x, out) -> None:
    xp.abs(x, out=out)
    out += 1
    xp.divide(x, out, out=out)


def softsign_derivative(xp, x, out) -> None:
    """1 / (1 + |x|)^2, NaN at infinities as PyTorch's composite derivative gives."""
    xp.abs(x, out=out)
    out += 1
    out *= out
    xp.reciprocal(out, out=out)
    xp.copyto(out, xp.nan, where=xp.isinf(x))

"""Drawing category positions from weights (``multinomial``): a random draw, so ``effectful``,
with no gradient; the result is int64 category positions."""

from __future__ import annotations

import numpy as np

from ..backend.device import array_namespace, device_of
from ..errors import BuildingAIError, ShapeError
from .abstract import ValueSpec
from .base import Op
from .random import _stream
from .sort import first_in_order


class Multinomial(Op):
    """``num_samples`` category positions per row of ``weights``, each drawn with probability
    proportional to its weight (weights need not sum to 1).

    weights: (C,) or (N, C) non-negative -> (num_samples,) or (N, num_samples) int64. Without
    ``replacement`` the positions in a row are distinct (each next draw among the categories not
    drawn yet); a zero weight is never drawn."""

    name = "multinomial"
    save_inputs = False
    differentiable = False
    effectful = True
    checks_values = True  # the weights, on every run of a traced graph too

    def check(self, weights, *, num_samples, replacement, generator=None):
        _check_weights(array_namespace(weights), weights, num_samples, replacement)

    def forward(self, ctx, xp, weights, *, num_samples, replacement, generator=None):
        rows = weights.reshape(-1, weights.shape[-1]).astype(xp.float64)
        stream = _stream(generator, device_of(weights))
        count, categories = rows.shape
        if replacement:
            uniform = xp.asarray(stream.random((count, num_samples), dtype=np.float64))
            cdf = xp.cumsum(rows, axis=-1)
            cdf /= cdf[:, -1:]
            # Row r's cumulative weights shifted into [r, r + 1] make one sorted array, so a
            # single search places every u of every row; a zero weight spans no interval.
            offsets = xp.arange(count)[:, None]
            flat = (cdf + offsets).reshape(-1)
            drawn = xp.searchsorted(flat, (uniform + offsets).reshape(-1), side="right")
            drawn = drawn.reshape(count, num_samples) - offsets * categories
            last_positive = categories - 1 - xp.argmax(rows[:, ::-1] > 0, axis=-1)
            drawn = xp.minimum(drawn, last_positive[:, None])  # u + r rounded up to r + 1
        else:
            # Exponential races: the k earliest arrivals, at rate = weight, are a draw without
            # replacement (Efraimidis-Spirakis); a zero weight never arrives.
            arrival = xp.full(rows.shape, xp.inf)
            race = xp.asarray(stream.random(rows.shape, dtype=np.float64))
            positive = rows > 0
            arrival[positive] = -xp.log1p(-race[positive]) / rows[positive]
            drawn = first_in_order(xp, arrival, 1, num_samples, descending=False)
        shape = (num_samples,) if weights.ndim == 1 else (count, num_samples)
        return drawn.astype(xp.int64).reshape(shape)

    def infer(self, weights, *, num_samples, replacement, generator=None) -> ValueSpec:
        shape = (num_samples,) if len(weights.shape) == 1 else (weights.shape[0], num_samples)
        return ValueSpec(shape, np.dtype(np.int64), weights.device)


def _check_weights(xp, weights, num_samples: int, replacement: bool) -> None:
    if weights.ndim not in (1, 2) or weights.shape[-1] == 0:
        raise ShapeError(
            f"[multinomial] expects weights shaped (categories,) or (rows, categories) with at "
            f"least one category, got shape {tuple(weights.shape)}",
            help="pass one row of non-negative weights per distribution",
        )
    if not bool(xp.isfinite(weights).all()) or bool((weights < 0).any()):
        raise BuildingAIError(
            "[multinomial] weights must be finite and non-negative",
            help="pass probabilities or unnormalised weights (softmax output, counts...)",
        )
    positive = (weights > 0).sum(axis=-1)
    if bool((positive == 0).any()):
        raise BuildingAIError(
            "[multinomial] a row of weights sums to 0: there is nothing to draw from",
            help="give every row at least one positive weight",
        )
    if not replacement and int(positive.min()) < num_samples:
        raise BuildingAIError(
            f"[multinomial] cannot draw {num_samples} distinct categories without replacement "
            f"from a row with only {int(positive.min())} positive weights",
            help="ask for fewer samples, or pass replacement=True",
        )


MULTINOMIAL = Multinomial()

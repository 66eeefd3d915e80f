"""Drawing category indices from weights: ``multinomial``, as ``torch.multinomial``.

Like ``rand`` and ``randint`` it is a draw from a ``Generator``, not a differentiable op: the
result is an int64 tensor of category positions.
"""

from __future__ import annotations

import numpy as np

from ..autograd.tensor import Tensor
from ..backend.device import array_namespace
from ..backend.random import Generator, resolve_generator
from ..errors import BuildingAIError, ShapeError
from ..ops.sort import first_in_order


def _check_weights(xp, weights, num_samples: int, replacement: bool) -> None:
    if weights.ndim not in (1, 2) or weights.shape[-1] == 0:
        raise ShapeError(
            f"[multinomial] expects weights shaped (categories,) or (rows, categories) with at "
            f"least one category, got shape {tuple(weights.shape)}",
            help="pass one row of non-negative weights per distribution",
        )
    if isinstance(num_samples, bool) or not isinstance(num_samples, (int, np.integer)):
        raise TypeError(f"[multinomial] num_samples must be an int, got {num_samples!r}")
    if num_samples <= 0:
        raise BuildingAIError(
            f"[multinomial] num_samples must be positive, got {num_samples}",
            help="ask for at least one sample",
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


def multinomial(
    input: Tensor,  # noqa: A002 - PyTorch's name
    num_samples: int,
    replacement: bool = False,
    *,
    generator: Generator | None = None,
) -> Tensor:
    """Draw ``num_samples`` category positions per row, each with probability proportional to
    its weight (weights need not sum to 1).

    input: (C,) or (N, C) non-negative weights -> (num_samples,) or (N, num_samples) int64.
    Without ``replacement`` the positions in a row are distinct (each next draw among the
    categories not drawn yet); a zero weight is never drawn. ``generator`` defaults to the
    default generator (``buildingai.manual_seed``).
    """
    if not isinstance(input, Tensor):
        raise TypeError(f"[multinomial] expects a Tensor of weights, got {type(input).__name__}")
    weights = input.data
    xp = array_namespace(weights)
    _check_weights(xp, weights, num_samples, replacement)
    rows = weights.reshape(-1, weights.shape[-1]).astype(xp.float64)
    stream = resolve_generator(generator).backend_generator(input.device)
    if replacement:
        count, categories = rows.shape
        uniform = xp.asarray(stream.random((count, int(num_samples)), dtype=np.float64))
        cdf = xp.cumsum(rows, axis=-1)
        cdf /= cdf[:, -1:]
        # Row r's cumulative weights shifted into [r, r + 1] make one sorted array, so a single
        # search places every u of every row; a zero weight spans no interval, so is never hit.
        offsets = xp.arange(count)[:, None]
        flat = (cdf + offsets).reshape(-1)
        drawn = xp.searchsorted(flat, (uniform + offsets).reshape(-1), side="right")
        drawn = drawn.reshape(count, int(num_samples)) - offsets * categories
        last_positive = categories - 1 - xp.argmax(rows[:, ::-1] > 0, axis=-1)
        drawn = xp.minimum(drawn, last_positive[:, None])  # u + r rounded up to r + 1
    else:
        # Exponential races: the k earliest arrivals, at rate = weight, are a draw without
        # replacement (Efraimidis-Spirakis); a zero weight never arrives.
        arrival = xp.full(rows.shape, xp.inf)
        race = xp.asarray(stream.random(rows.shape, dtype=np.float64))
        positive = rows > 0
        arrival[positive] = -xp.log1p(-race[positive]) / rows[positive]
        drawn = first_in_order(xp, arrival, 1, int(num_samples), descending=False)
    drawn = drawn.astype(xp.int64)
    shape = (int(num_samples),) if weights.ndim == 1 else (weights.shape[0], int(num_samples))
    return Tensor(drawn.reshape(shape))


__all__ = ["multinomial"]

TENSOR_METHODS = {"multinomial": multinomial}

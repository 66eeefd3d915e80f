"""Filling a tensor in place with random numbers: ``normal_``, ``uniform_``, ``exponential_``,
``bernoulli_``, ``random_``, ``cauchy_``, ``log_normal_`` and ``geometric_``, as PyTorch's
Tensor methods (``nn.init`` style code: ``w.array.normal_(0, 0.02)`` becomes
``with no_grad(): w.normal_(0, 0.02)``).

Each draws through the random draw records (``rand``, ``randn``, ``randint``, ``bernoulli``),
from ``generator`` or the default generator, so a traced step draws afresh on every run, and
writes through the in-place path of ``inplace.py``: the version counter moves, a leaf that
requires grad is refused while gradients are recorded, and inside a recorded graph the filled
tensor depends on its old value with a zero gradient (as PyTorch's ``NormalBackward``).
"""

from __future__ import annotations

import math

import numpy as np

from ..autograd.tensor import Tensor
from ..backend.device import array_namespace
from ..backend.dtypes import as_dtype, bfloat16, is_floating
from ..errors import BuildingAIError, DTypeError
from .creation import astype, full, rand, randint, randn
from .inplace import _in_place, _keep_none_of
from .sampling import bernoulli

_FLOAT64 = np.dtype(np.float64)


def _fill_with(x: Tensor, name: str, draw) -> Tensor:
    """Write ``draw()`` (a Tensor shaped like ``x``) into ``x`` in place; ``draw`` runs once,
    on whichever path ``_in_place`` takes."""
    xp = array_namespace(x.array)
    return _in_place(
        x,
        name,
        (),
        lambda previous: _keep_none_of(previous, draw(), x.shape),
        lambda array: xp.copyto(array, draw().array, casting="unsafe"),
    )


def _require_floating(x: Tensor, name: str) -> None:
    if not is_floating(x.dtype):
        raise DTypeError(
            f"[{name}] draws real numbers, so it fills floating tensors only; got {x.dtype}",
            help=f"fill a float tensor (x.float().{name}(...)), or use random_ for integers",
        )


def _uniform(x: Tensor, generator) -> Tensor:
    """Uniform [0, 1) samples in float64, shaped like ``x``, on its device."""
    return rand(tuple(x.shape), dtype=_FLOAT64, device=x.device, generator=generator)


def normal_(x: Tensor, mean: float = 0.0, std: float = 1.0, *, generator=None) -> Tensor:
    """Fill ``x`` with samples of N(mean, std^2); floating tensors only."""
    _require_floating(x, "normal_")
    if not std >= 0:
        raise BuildingAIError(f"[normal_] std must be >= 0, got {std}")

    def draw():
        noise = randn(tuple(x.shape), dtype=x.dtype, device=x.device, generator=generator)
        return noise * std + mean

    return _fill_with(x, "normal_", draw)


def uniform_(
    x: Tensor, low: float = 0.0, high: float = 1.0, *, generator=None, **from_to
) -> Tensor:
    """Fill ``x`` with samples uniform in [low, high); floating tensors only. PyTorch's keyword
    names, ``from`` and ``to``, are accepted too (``x.uniform_(**{"from": -1, "to": 1})``)."""
    unknown = set(from_to) - {"from", "to"}
    if unknown:
        raise TypeError(f"[uniform_] unexpected keyword argument(s) {sorted(unknown)}")
    low, high = from_to.get("from", low), from_to.get("to", high)
    _require_floating(x, "uniform_")
    if low > high:
        raise BuildingAIError(
            f"[uniform_] expects low <= high, got low={low} > high={high}",
            help="swap the bounds: uniform_(low, high)",
        )

    def draw():
        samples = rand(tuple(x.shape), dtype=x.dtype, device=x.device, generator=generator)
        return samples * (high - low) + low

    return _fill_with(x, "uniform_", draw)


def exponential_(x: Tensor, lambd: float = 1.0, *, generator=None) -> Tensor:
    """Fill ``x`` with samples of the exponential distribution of rate ``lambd`` (mean
    ``1 / lambd``), drawn as ``-log(1 - u) / lambd``; floating tensors only."""
    _require_floating(x, "exponential_")
    if not lambd > 0:
        raise BuildingAIError(f"[exponential_] expects lambd > 0, got {lambd}")
    return _fill_with(x, "exponential_", lambda: -(-_uniform(x, generator)).log1p() / lambd)


def cauchy_(x: Tensor, median: float = 0.0, sigma: float = 1.0, *, generator=None) -> Tensor:
    """Fill ``x`` with samples of the Cauchy distribution, ``median + sigma * tan(pi (u -
    1/2))``; floating tensors only."""
    _require_floating(x, "cauchy_")
    if not sigma > 0:
        raise BuildingAIError(f"[cauchy_] expects sigma > 0, got {sigma}")

    def draw():
        angle = (_uniform(x, generator) - 0.5) * math.pi
        return angle.sin() / angle.cos() * sigma + median

    return _fill_with(x, "cauchy_", draw)


def log_normal_(x: Tensor, mean: float = 1.0, std: float = 2.0, *, generator=None) -> Tensor:
    """Fill ``x`` with ``exp`` of samples of N(mean, std^2) (``mean`` and ``std`` are those of
    the logarithm, as in PyTorch); floating tensors only."""
    _require_floating(x, "log_normal_")
    if not std > 0:
        raise BuildingAIError(f"[log_normal_] expects std > 0, got {std}")

    def draw():
        noise = randn(tuple(x.shape), dtype=_FLOAT64, device=x.device, generator=generator)
        return (noise * std + mean).exp()

    return _fill_with(x, "log_normal_", draw)


def geometric_(x: Tensor, p: float, *, generator=None) -> Tensor:
    """Fill ``x`` with the number of Bernoulli(p) trials up to and including the first
    success (1, 2, ...), drawn as ``ceil(log(1 - u) / log(1 - p))``."""
    if not 0 < p < 1:
        raise BuildingAIError(f"[geometric_] expects p in (0, 1), got {p}")

    def draw():
        trials = ((-_uniform(x, generator)).log1p() / math.log1p(-p)).ceil()
        return trials.clamp(min=1.0)  # u = 0 gives 0 trials; the first trial is number 1

    return _fill_with(x, "geometric_", draw)


def bernoulli_(x: Tensor, p=0.5, *, generator=None) -> Tensor:
    """Fill ``x`` with 1 where a draw succeeds, with probability ``p`` (a number, or a tensor
    that broadcasts to ``x``'s shape), else 0; any dtype, bool included."""
    if isinstance(p, Tensor):
        probabilities = p.astype(_FLOAT64).expand(tuple(x.shape))
    else:
        if not 0 <= p <= 1:
            raise BuildingAIError(f"[bernoulli_] expects p in [0, 1], got {p}")
        probabilities = None

    def draw():
        chances = probabilities
        if chances is None:
            chances = full(tuple(x.shape), p, dtype=_FLOAT64, device=x.device)
        return bernoulli(chances, generator=generator)

    return _fill_with(x, "bernoulli_", draw)


def _default_high(dtype: np.dtype) -> int:
    """One past the largest value ``random_()`` draws for ``dtype``: every integer a float
    dtype holds exactly (2**mantissa bits + 1 values), or the integer dtype's maximum."""
    if dtype == np.bool_:
        return 2
    if bfloat16 is not None and dtype == bfloat16:
        return 2**8 + 1
    if dtype.kind == "f":
        return 2 ** (np.finfo(dtype).nmant + 1) + 1
    # numpy's integers() takes an exclusive bound within the dtype: int64 stops at 2**63 - 2
    return int(np.iinfo(dtype).max) + (1 if dtype.itemsize < 8 else 0)


def random_(
    x: Tensor, low: int | None = None, high: int | None = None, *, generator=None
) -> Tensor:
    """Fill ``x`` with integers uniform in [low, high): ``random_()`` draws from 0 to the
    largest integer the dtype holds exactly, ``random_(high)`` from [0, high),
    ``random_(low, high)`` from [low, high). Floating tensors hold the integers as floats."""
    if high is None and low is not None:  # random_(to), as PyTorch spells it
        low, high = 0, low
    low = 0 if low is None else int(low)
    dtype = as_dtype(x.dtype)
    if high is None:
        high = _default_high(dtype)
    if low >= high:
        raise BuildingAIError(
            f"[random_] expects low < high, got low={low} >= high={high}",
            help="random_(high) draws from [0, high); random_(low, high) from [low, high)",
        )
    if dtype.kind in "iub":
        info = np.iinfo(dtype) if dtype.kind != "b" else None
        lowest, highest = (0, 1) if info is None else (int(info.min), int(info.max))
        if low < lowest or high - 1 > highest:
            raise BuildingAIError(
                f"[random_] [{low}, {high}) does not fit in {dtype} (values {lowest} .. {highest})",
                help="choose bounds inside the dtype's range, or convert the tensor first",
            )

    def draw():
        drawn = randint(low, high, tuple(x.shape), device=x.device, generator=generator)
        return astype(drawn, dtype)

    return _fill_with(x, "random_", draw)


__all__: list[str] = []  # in-place draws are Tensor methods only, as in PyTorch

TENSOR_METHODS = {
    "normal_": normal_, "uniform_": uniform_, "exponential_": exponential_, "cauchy_": cauchy_,
    "log_normal_": log_normal_, "geometric_": geometric_, "bernoulli_": bernoulli_,
    "random_": random_,
}  # fmt: skip

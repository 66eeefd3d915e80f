"""Discrete families: Bernoulli and Categorical, given by probabilities or by logits."""

from __future__ import annotations

import math

import numpy as np

from .. import functions as F
from ..autograd.mode import no_grad
from ..autograd.tensor import Tensor
from ..errors import ArgumentError
from .distribution import Distribution, as_parameters, require


def _one_of(family: str, probs, logits) -> None:
    if (probs is None) == (logits is None):
        raise ArgumentError(
            f"[{family}] give exactly one of probs and logits",
            help=f"{family}(probs=p) or {family}(logits=l)",
        )


class Bernoulli(Distribution):
    """1 with probability ``probs`` (or sigmoid(``logits``)), else 0. No ``rsample``: a 0/1
    sample has no gradient; use ``log_prob`` in a score-function estimator."""

    arg_names = ("logits",)

    def __init__(self, probs=None, logits=None, validate_args: bool = True) -> None:
        _one_of("Bernoulli", probs, logits)
        self.validate_args = validate_args
        if probs is not None:
            (probs,) = as_parameters("Bernoulli", probs=probs)
            if validate_args:
                require("Bernoulli", "probs", probs, lambda p: (p >= 0) & (p <= 1), "in [0, 1]")
            self.probs = probs
            eps = float(np.finfo(probs.dtype).eps)
            clamped = probs.clamp(eps, 1 - eps)
            self.logits = clamped.log() - (-clamped).log1p()
        else:
            (self.logits,) = as_parameters("Bernoulli", logits=logits)
            self.probs = self.logits.sigmoid()
        super().__init__(self.logits.shape)

    def sample(self, sample_shape=(), generator=None) -> Tensor:
        with no_grad():
            uniform = self._noise("uniform", sample_shape, generator, self.logits)
            return (uniform < self.probs).astype(self.logits.dtype)

    def log_prob(self, value) -> Tensor:
        value = self._value(value)
        if self.validate_args:
            require("Bernoulli.log_prob", "value", value, lambda v: (v == 0) | (v == 1), "0 or 1")
        # x log p + (1 - x) log(1 - p) = x * logits - softplus(logits), without overflow
        return value * self.logits - self.logits.softplus()

    def entropy(self) -> Tensor:
        return self.logits.softplus() - self.probs * self.logits

    @property
    def mean(self) -> Tensor:
        return self.probs

    @property
    def variance(self) -> Tensor:
        return self.probs * (1 - self.probs)


class Categorical(Distribution):
    """One of K categories, with probabilities ``probs`` (..., K) (normalised to sum to 1) or
    ``logits`` (..., K). ``batch_shape`` is the leading shape; samples are int64 indices."""

    arg_names = ("logits",)

    def __init__(self, probs=None, logits=None, validate_args: bool = True) -> None:
        _one_of("Categorical", probs, logits)
        self.validate_args = validate_args
        if probs is not None:
            (probs,) = as_parameters("Categorical", probs=probs)
            if probs.ndim == 0:
                raise ArgumentError("[Categorical] probs must have at least one axis (K,)")
            if validate_args:
                require("Categorical", "probs", probs, lambda p: p >= 0, "non-negative")
            self.probs = probs / probs.sum(axis=-1, keepdims=True)
            tiny = float(np.finfo(probs.dtype).tiny)
            self.logits = self.probs.clamp(tiny, None).log()
        else:
            (logits,) = as_parameters("Categorical", logits=logits)
            if logits.ndim == 0:
                raise ArgumentError("[Categorical] logits must have at least one axis (K,)")
            self.logits = logits - F.logsumexp(logits, axis=-1, keepdims=True)
            self.probs = self.logits.exp()
        self.num_categories = self.logits.shape[-1]
        super().__init__(self.logits.shape[:-1])

    def sample(self, sample_shape=(), generator=None) -> Tensor:
        with no_grad():
            uniform = self._noise("uniform", sample_shape, generator, self.logits)
            cumulative = F.cumsum(self.probs, axis=-1)  # (*batch, K)
            # the index of the first category whose cumulative probability exceeds u
            below = (cumulative < uniform.unsqueeze(-1)).astype("int64").sum(axis=-1)
            return below.clamp(None, self.num_categories - 1)

    def log_prob(self, value) -> Tensor:
        if not isinstance(value, Tensor):
            value = F.tensor(np.asarray(value, dtype=np.int64))
        if self.validate_args:
            k = self.num_categories
            require(
                "Categorical.log_prob", "value", value,
                lambda v: (v >= 0) & (v < k) & (v == np.floor(v)),
                f"an integer category in [0, {k})",
            )  # fmt: skip
        value = value.astype("int64")
        shape = np.broadcast_shapes(tuple(value.shape), self.batch_shape)
        logits = F.broadcast_to(self.logits, shape + (self.num_categories,))
        index = F.broadcast_to(value, shape).unsqueeze(-1)
        return F.take_along_axis(logits, index, axis=-1).squeeze(-1)

    def entropy(self) -> Tensor:
        lowest = float(np.finfo(self.logits.dtype).min)  # 0 * log 0 counts as 0, not nan
        return -(self.probs * self.logits.clamp(lowest, None)).sum(axis=-1)

    @property
    def mean(self) -> Tensor:
        return F.full(self.batch_shape, math.nan, dtype=self.logits.dtype)

    @property
    def variance(self) -> Tensor:
        return F.full(self.batch_shape, math.nan, dtype=self.logits.dtype)

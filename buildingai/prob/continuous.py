"""Scalar continuous families: Normal, Uniform, Laplace, Gamma, Beta."""

from __future__ import annotations

import math

import numpy as np

from .. import functions as F
from ..autograd.dispatch import apply
from ..autograd.tensor import Tensor
from ..ops.gamma_sample import STANDARD_GAMMA
from .distribution import Distribution, as_parameters, require

_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)


class _LocationScale(Distribution):
    """A distribution given by ``loc`` and a positive ``scale``.

    ``batch_shape`` is the broadcast shape of loc and scale (``()`` for two numbers), and
    ``event_shape`` is ``()``: ``sample(sample_shape)`` has shape ``sample_shape + batch_shape``;
    ``log_prob(value)`` the broadcast shape of ``value`` and ``batch_shape``; ``entropy()``,
    ``mean`` and ``variance`` shape ``batch_shape``.
    """

    has_rsample = True
    arg_names = ("loc", "scale")

    def __init__(self, loc, scale, validate_args: bool = True) -> None:
        name = type(self).__name__
        self.loc, self.scale = as_parameters(name, loc=loc, scale=scale)
        if validate_args:
            require(name, "scale", self.scale, lambda s: s > 0, "positive")
        super().__init__(self.loc.shape)


class Normal(_LocationScale):
    """The normal distribution N(loc, scale^2); shapes as ``_LocationScale`` states."""

    def rsample(self, sample_shape=(), generator=None) -> Tensor:
        noise = self._noise("normal", sample_shape, generator, self.loc)
        return self.loc + self.scale * noise

    def log_prob(self, value) -> Tensor:
        value = self._value(value)
        z = (value - self.loc) / self.scale
        return -0.5 * z * z - self.scale.log() - _HALF_LOG_2PI

    def entropy(self) -> Tensor:
        return 0.5 + _HALF_LOG_2PI + self.scale.log()

    @property
    def mean(self) -> Tensor:
        return self.loc

    @property
    def variance(self) -> Tensor:
        return self.scale * self.scale

    @property
    def stddev(self) -> Tensor:
        return self.scale


class Uniform(Distribution):
    """The uniform distribution on [low, high).

    ``batch_shape`` is the broadcast shape of low and high (``()`` for two numbers), and
    ``event_shape`` is ``()``: ``sample(sample_shape)`` has shape ``sample_shape + batch_shape``;
    ``log_prob(value)`` the broadcast shape of ``value`` and ``batch_shape``; ``entropy()``,
    ``mean`` and ``variance`` shape ``batch_shape``.
    """

    has_rsample = True
    arg_names = ("low", "high")

    def __init__(self, low, high, validate_args: bool = True) -> None:
        self.low, self.high = as_parameters("Uniform", low=low, high=high)
        if validate_args:
            gap = self.high - self.low
            require("Uniform", "high - low", gap, lambda g: g > 0, "positive (low < high)")
        super().__init__(self.low.shape)

    def rsample(self, sample_shape=(), generator=None) -> Tensor:
        noise = self._noise("uniform", sample_shape, generator, self.low)
        return self.low + (self.high - self.low) * noise

    def log_prob(self, value) -> Tensor:
        value = self._value(value)
        inside = F.logical_and(value >= self.low, value < self.high)
        return F.where(inside, -(self.high - self.low).log(), -math.inf)

    def entropy(self) -> Tensor:
        return (self.high - self.low).log()

    @property
    def mean(self) -> Tensor:
        return (self.low + self.high) / 2

    @property
    def variance(self) -> Tensor:
        return (self.high - self.low) ** 2 / 12


class Laplace(_LocationScale):
    """The Laplace distribution with density exp(-|x - loc| / scale) / (2 scale); shapes as
    ``_LocationScale`` states."""

    def rsample(self, sample_shape=(), generator=None) -> Tensor:
        # u uniform in (-1, 1): loc - scale sign(u) log(1 - |u|) (inverse of the CDF)
        uniform = self._noise("uniform", sample_shape, generator, self.loc)
        tiny = np.finfo(uniform.dtype).tiny
        u = (uniform * 2 - 1).clamp(-1 + np.finfo(uniform.dtype).eps, 1 - tiny)
        return self.loc - self.scale * u.sign() * (-u.abs()).log1p()

    def log_prob(self, value) -> Tensor:
        value = self._value(value)
        return -(2 * self.scale).log() - (value - self.loc).abs() / self.scale

    def entropy(self) -> Tensor:
        return 1 + (2 * self.scale).log()

    @property
    def mean(self) -> Tensor:
        return self.loc

    @property
    def variance(self) -> Tensor:
        return 2 * self.scale * self.scale


class Gamma(Distribution):
    """The gamma distribution with shape ``concentration`` and ``rate`` (mean
    concentration / rate). ``rsample`` uses implicit reparameterisation gradients."""

    has_rsample = True
    arg_names = ("concentration", "rate")

    def __init__(self, concentration, rate, validate_args: bool = True) -> None:
        self.concentration, self.rate = as_parameters(
            "Gamma", concentration=concentration, rate=rate
        )
        if validate_args:
            require("Gamma", "concentration", self.concentration, lambda a: a > 0, "positive")
            require("Gamma", "rate", self.rate, lambda b: b > 0, "positive")
        super().__init__(self.concentration.shape)

    def rsample(self, sample_shape=(), generator=None) -> Tensor:
        concentration = F.broadcast_to(self.concentration, self._extended(sample_shape))
        standard = apply(STANDARD_GAMMA, concentration, generator=generator)
        return standard / self.rate

    def log_prob(self, value) -> Tensor:
        value = self._value(value)
        a, b = self.concentration, self.rate
        return a * b.log() + (a - 1) * value.log() - b * value - F.lgamma(a)

    def entropy(self) -> Tensor:
        a = self.concentration
        return a - self.rate.log() + F.lgamma(a) + (1 - a) * F.digamma(a)

    @property
    def mean(self) -> Tensor:
        return self.concentration / self.rate

    @property
    def variance(self) -> Tensor:
        return self.concentration / (self.rate * self.rate)


class Beta(Distribution):
    """The beta distribution on (0, 1) with density x^(c1 - 1) (1 - x)^(c0 - 1) / B(c1, c0).
    ``rsample`` is X / (X + Y) for X ~ Gamma(c1), Y ~ Gamma(c0), with their implicit gradients."""

    has_rsample = True
    arg_names = ("concentration1", "concentration0")

    def __init__(self, concentration1, concentration0, validate_args: bool = True) -> None:
        self.concentration1, self.concentration0 = as_parameters(
            "Beta", concentration1=concentration1, concentration0=concentration0
        )
        if validate_args:
            for name in self.arg_names:
                require("Beta", name, getattr(self, name), lambda c: c > 0, "positive")
        super().__init__(self.concentration1.shape)

    def rsample(self, sample_shape=(), generator=None) -> Tensor:
        shape = self._extended(sample_shape)
        x = apply(STANDARD_GAMMA, F.broadcast_to(self.concentration1, shape), generator=generator)
        y = apply(STANDARD_GAMMA, F.broadcast_to(self.concentration0, shape), generator=generator)
        tiny = float(np.finfo(x.dtype).tiny)
        return (x / (x + y)).clamp(tiny, 1 - float(np.finfo(x.dtype).eps) / 2)

    def _log_normaliser(self) -> Tensor:
        c1, c0 = self.concentration1, self.concentration0
        return F.lgamma(c1) + F.lgamma(c0) - F.lgamma(c1 + c0)

    def log_prob(self, value) -> Tensor:
        value = self._value(value)
        c1, c0 = self.concentration1, self.concentration0
        return (c1 - 1) * value.log() + (c0 - 1) * (-value).log1p() - self._log_normaliser()

    def entropy(self) -> Tensor:
        c1, c0 = self.concentration1, self.concentration0
        total = c1 + c0
        return (
            self._log_normaliser()
            - (c1 - 1) * F.digamma(c1)
            - (c0 - 1) * F.digamma(c0)
            + (total - 2) * F.digamma(total)
        )

    @property
    def mean(self) -> Tensor:
        return self.concentration1 / (self.concentration1 + self.concentration0)

    @property
    def variance(self) -> Tensor:
        total = self.concentration1 + self.concentration0
        return self.concentration1 * self.concentration0 / (total * total * (total + 1))

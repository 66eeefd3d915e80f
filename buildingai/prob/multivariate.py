"""Distributions over vectors: the multivariate normal (full or diagonal covariance) and
``Independent``, which treats batch axes of another distribution as one event."""

from __future__ import annotations

import math

import numpy as np

from .. import functions as F
from ..autograd.tensor import Tensor
from ..errors import ArgumentError, ShapeError
from .distribution import Distribution, as_parameters, sum_rightmost
from .triangular import cholesky, diagonal, solve_lower

_LOG_2PI = math.log(2 * math.pi)


class MultivariateNormal(Distribution):
    """N(loc, Sigma) over vectors of size D. ``loc``: (..., D). Give exactly one of
    ``covariance_matrix`` (..., D, D), ``scale_tril`` (..., D, D; lower triangular with a
    positive diagonal, Sigma = L L^T) or ``covariance_diag`` (..., D; a diagonal Sigma)."""

    has_rsample = True
    arg_names = ("loc", "scale_tril")

    def __init__(
        self,
        loc,
        covariance_matrix=None,
        scale_tril=None,
        covariance_diag=None,
        validate_args: bool = True,
    ) -> None:
        given = [v is not None for v in (covariance_matrix, scale_tril, covariance_diag)]
        if sum(given) != 1:
            raise ArgumentError(
                "[MultivariateNormal] give exactly one of covariance_matrix, scale_tril and "
                "covariance_diag"
            )
        (loc,) = as_parameters("MultivariateNormal", loc=loc)
        if loc.ndim == 0:
            raise ShapeError("[MultivariateNormal] loc must be a vector (..., D), got a scalar")
        size = loc.shape[-1]
        if covariance_diag is not None:
            (variances,) = as_parameters("MultivariateNormal", covariance_diag=covariance_diag)
            _check_positive(variances, "covariance_diag", validate_args)
            scale_tril = variances.sqrt().unsqueeze(-1) * F.eye(size, dtype=loc.dtype)
        elif covariance_matrix is not None:
            (covariance,) = as_parameters("MultivariateNormal", covariance=covariance_matrix)
            _check_square(covariance, size, "covariance_matrix")
            scale_tril = cholesky(covariance)
        else:
            (scale_tril,) = as_parameters("MultivariateNormal", scale_tril=scale_tril)
            _check_square(scale_tril, size, "scale_tril")
            _check_positive(diagonal(scale_tril), "the diagonal of scale_tril", validate_args)
        self.scale_tril = scale_tril
        batch = np.broadcast_shapes(tuple(loc.shape[:-1]), tuple(scale_tril.shape[:-2]))
        self.loc = F.broadcast_to(loc, batch + (size,))
        super().__init__(batch, (size,))

    @property
    def covariance_matrix(self) -> Tensor:
        return self.scale_tril @ self.scale_tril.swapaxes(-1, -2)

    def rsample(self, sample_shape=(), generator=None) -> Tensor:
        noise = self._noise("normal", sample_shape, generator, self.loc)  # (*S, *B, D)
        return self.loc + (self.scale_tril @ noise.unsqueeze(-1)).squeeze(-1)

    def _half_log_det(self) -> Tensor:
        return diagonal(self.scale_tril).log().sum(axis=-1)

    def log_prob(self, value) -> Tensor:
        value = self._value(value)
        whitened = solve_lower(self.scale_tril, value - self.loc)  # L^-1 (x - mu)
        mahalanobis = (whitened * whitened).sum(axis=-1)
        size = self.event_shape[0]
        return -0.5 * (size * _LOG_2PI + mahalanobis) - self._half_log_det()

    def entropy(self) -> Tensor:
        size = self.event_shape[0]
        entropy = 0.5 * size * (1.0 + _LOG_2PI) + self._half_log_det()
        return F.broadcast_to(entropy, self.batch_shape)

    @property
    def mean(self) -> Tensor:
        return self.loc

    @property
    def variance(self) -> Tensor:
        variance = (self.scale_tril * self.scale_tril).sum(axis=-1)
        return F.broadcast_to(variance, self.batch_shape + self.event_shape)


class Independent(Distribution):
    """``base`` with its last ``reinterpreted_batch_ndims`` batch axes read as event axes:
    ``log_prob`` and ``entropy`` sum over them. ``Independent(Normal(mu, sigma), 1)`` is a
    diagonal Gaussian over vectors."""

    def __init__(self, base: Distribution, reinterpreted_batch_ndims: int) -> None:
        if not isinstance(base, Distribution):
            raise ArgumentError(
                f"[Independent] base must be a Distribution, got {type(base).__name__}"
            )
        count = int(reinterpreted_batch_ndims)
        if not 0 <= count <= len(base.batch_shape):
            raise ShapeError(
                f"[Independent] reinterpreted_batch_ndims={count} but the base has batch shape "
                f"{base.batch_shape}",
                help=f"use a number from 0 to {len(base.batch_shape)}",
            )
        self.base = base
        self.reinterpreted_batch_ndims = count
        self.has_rsample = base.has_rsample
        split = len(base.batch_shape) - count
        super().__init__(base.batch_shape[:split], base.batch_shape[split:] + base.event_shape)

    def arguments(self) -> list[Tensor]:
        return self.base.arguments()

    def rsample(self, sample_shape=(), generator=None) -> Tensor:
        return self.base.rsample(sample_shape, generator)

    def sample(self, sample_shape=(), generator=None) -> Tensor:
        return self.base.sample(sample_shape, generator)

    def log_prob(self, value) -> Tensor:
        return sum_rightmost(self.base.log_prob(value), self.reinterpreted_batch_ndims)

    def entropy(self) -> Tensor:
        return sum_rightmost(self.base.entropy(), self.reinterpreted_batch_ndims)

    @property
    def mean(self) -> Tensor:
        return self.base.mean

    @property
    def variance(self) -> Tensor:
        return self.base.variance

    def __repr__(self) -> str:
        return f"Independent({self.base!r}, {self.reinterpreted_batch_ndims})"


def _check_square(matrix: Tensor, size: int, name: str) -> None:
    if matrix.ndim < 2 or tuple(matrix.shape[-2:]) != (size, size):
        raise ShapeError(
            f"[MultivariateNormal] {name} must be (..., {size}, {size}) for loc (..., {size}), "
            f"got {tuple(matrix.shape)}"
        )


def _check_positive(values: Tensor, name: str, validate: bool) -> None:
    if validate and not (values.numpy() > 0).all():
        raise ArgumentError(
            f"[MultivariateNormal] {name} must be positive, got minimum {values.numpy().min():g}",
            help="a covariance has a positive diagonal; check the values or their transform",
        )

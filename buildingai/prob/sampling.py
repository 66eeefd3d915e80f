"""``sample(distribution)``: a reparameterised draw that also tells the Parameters the
distribution is built from what their variational posterior is, so that
``parameter.kl_divergence()`` gives KL(posterior || prior) for an ELBO::

    w = sample(Distribution.Normal(self.w_mean, self.w_std))     # prior: N(0, 1)
    ...
    kl = sum(p.kl_divergence() for p in self.parameters())

The record is per thread and replaced by the next sample, so nothing accumulates across steps.
"""

from __future__ import annotations

from collections.abc import Sequence

from .. import functions as F
from ..autograd.tensor import Tensor
from ..backend.random import Generator
from ..errors import ArgumentError
from ..nn.parameter import Parameter
from .continuous import Normal
from .distribution import Distribution
from .kl import kl_divergence
from .multivariate import Independent, MultivariateNormal


def sample(
    distribution: Distribution,
    sample_shape: Sequence[int] = (),
    *,
    prior: Distribution | None = None,
    generator: Generator | None = None,
) -> Tensor:
    """``distribution.rsample(sample_shape)`` (``sample`` for families without a
    reparameterisation, e.g. Bernoulli), recording ``distribution`` as the posterior of the
    Parameters its arguments are computed from. ``prior`` defaults to a standard normal of the
    same shape; KL(distribution || prior) must have a closed form (see ``register_kl``)."""
    if not isinstance(distribution, Distribution):
        raise ArgumentError(
            f"[sample] expects a Distribution, got {type(distribution).__name__}",
            help="build one first, e.g. sample(Distribution.Normal(mean, std))",
        )
    if distribution.has_rsample:
        value = distribution.rsample(sample_shape, generator)
    else:
        value = distribution.sample(sample_shape, generator)
    owners = _parameters_behind(distribution.arguments())
    if owners:
        record = _KLRecord(distribution, prior)
        owners[0].set_posterior(record)
        for other in owners[1:]:  # the KL is counted once, on the first parameter
            other.set_posterior(None)
    return value


class _KLRecord:
    """KL(posterior || prior) summed over every element, computed when asked."""

    def __init__(self, posterior: Distribution, prior: Distribution | None) -> None:
        self.posterior = posterior
        self.prior = prior

    def __call__(self) -> Tensor:
        prior = self.prior if self.prior is not None else standard_normal_like(self.posterior)
        return kl_divergence(self.posterior, prior).sum()


def standard_normal_like(distribution: Distribution) -> Distribution:
    """N(0, I) with ``distribution``'s batch and event shapes: the default prior."""
    reference = distribution.arguments()[0]
    zeros = F.zeros(
        distribution.batch_shape + distribution.event_shape,
        dtype=reference.dtype,
        device=reference.device,
    )
    if isinstance(distribution, MultivariateNormal):
        return MultivariateNormal(zeros, covariance_diag=zeros + 1.0)
    if distribution.event_shape:
        return Independent(Normal(zeros, zeros + 1.0), len(distribution.event_shape))
    return Normal(zeros, zeros + 1.0)


def _parameters_behind(arguments: list[Tensor]) -> list[Parameter]:
    """The Parameters (leaves) that ``arguments`` are computed from, in order of first
    appearance, found by walking their graph."""
    found: list[Parameter] = []
    seen_tensors: set[int] = set()
    seen_nodes: set[int] = set()
    stack = list(reversed(arguments))
    while stack:
        tensor = stack.pop()
        if id(tensor) in seen_tensors:
            continue
        seen_tensors.add(id(tensor))
        if isinstance(tensor, Parameter):
            found.append(tensor)
            continue
        node = tensor._node
        if node is None or id(node) in seen_nodes:
            continue
        seen_nodes.add(id(node))
        stack.extend(value for value in reversed(node.inputs) if isinstance(value, Tensor))
    return found

"""Probability distributions, reparameterised sampling and KL divergences, built from
differentiable Tensor ops::

    from buildingai.prob import Distribution, sample

    q = Distribution.Normal(mean, std)
    w = sample(q)                      # reparameterised: gradients reach mean and std
    q.log_prob(w), q.entropy(), kl_divergence(q, Distribution.Normal(0.0, 1.0))
"""

from .continuous import Beta, Gamma, Laplace, Normal, Uniform
from .discrete import Bernoulli, Categorical
from .distribution import Distribution
from .kl import kl_divergence, register_kl
from .multivariate import Independent, MultivariateNormal
from .sampling import sample, standard_normal_like

# Every family is also reachable as Distribution.<Family>, as users write it.
for _family in (
    Bernoulli, Beta, Categorical, Gamma, Independent, Laplace, MultivariateNormal, Normal, Uniform
):  # fmt: skip
    setattr(Distribution, _family.__name__, _family)
del _family

__all__ = [
    "Bernoulli",
    "Beta",
    "Categorical",
    "Distribution",
    "Gamma",
    "Independent",
    "Laplace",
    "MultivariateNormal",
    "Normal",
    "Uniform",
    "kl_divergence",
    "register_kl",
    "sample",
    "standard_normal_like",
]

"""Bayesian layers (Bayes by Backprop, Blundell et al. 2015): every weight has a factorised
normal posterior N(mu, softplus(rho)^2), and each call draws fresh weights from it through
``buildingai.prob.sample``, so an ELBO is ``log_likelihood - model_kl`` with

    kl = sum(p.kl_divergence() for p in model.parameters())   # or layer.kl_divergence()
"""

from __future__ import annotations

import math

from .. import functions
from ..autograd.tensor import Tensor
from ..errors import ArgumentError
from ..prob import Distribution, Normal, kl_divergence, sample
from . import init
from ._utils import empty_parameter, init_like_linear_
from .functional import conv2d
from .module import Module


class _BayesianLayer(Module):
    """What the Bayesian layers share: the (mu, rho) pairs, their prior and their KL."""

    def _setup_prior(self, prior_std: float, rho_init: float) -> None:
        if not prior_std > 0:
            raise ArgumentError(
                f"[{type(self).__name__}] prior_std must be positive, got {prior_std}"
            )
        self.prior_std = float(prior_std)
        self.rho_init = float(rho_init)

    def _make_posterior(self, weight_shape: tuple, bias_size: int | None, dtype, device) -> None:
        """``weight_mu``/``weight_rho`` of ``weight_shape`` and ``bias_mu``/``bias_rho`` of
        ``(bias_size,)`` (None: no bias), initialised by ``reset_parameters``."""
        self.weight_mu = empty_parameter(weight_shape, dtype, device)
        self.weight_rho = empty_parameter(weight_shape, dtype, device)
        if bias_size is not None:
            self.bias_mu = empty_parameter((bias_size,), dtype, device)
            self.bias_rho = empty_parameter((bias_size,), dtype, device)
        else:
            self.register_parameter("bias_mu", None)
            self.register_parameter("bias_rho", None)
        self.reset_parameters()

    def _names(self) -> list[str]:
        names = ["weight"]
        if self.bias_mu is not None:
            names.append("bias")
        return names

    def reset_parameters(self) -> None:
        """Posterior means as PyTorch initialises the plain layer; rho = ``rho_init`` (a
        standard deviation of softplus(rho_init))."""
        init_like_linear_(self.weight_mu, self.bias_mu)
        for name in self._names():
            init.constant_(getattr(self, name + "_rho"), self.rho_init)

    def posterior(self, name: str) -> Normal:
        """The posterior N(mu, softplus(rho)^2) of ``'weight'`` or ``'bias'``."""
        mu, rho = getattr(self, name + "_mu"), getattr(self, name + "_rho")
        return Distribution.Normal(mu, functions.softplus(rho), validate_args=False)

    def prior(self, name: str) -> Normal:
        mu = getattr(self, name + "_mu")
        zeros = functions.zeros_like(mu)
        return Distribution.Normal(zeros, zeros + self.prior_std)

    def sampled(self, name: str) -> Tensor:
        """Fresh weights from the posterior (reparameterised), recorded on mu and rho."""
        return sample(self.posterior(name), prior=self.prior(name))

    def kl_divergence(self) -> Tensor:
        """KL(posterior || prior) of all this layer's weights, from the current parameters."""
        total = 0
        for name in self._names():
            total = total + kl_divergence(self.posterior(name), self.prior(name)).sum()
        return total


class BayesianLinear(_BayesianLayer):
    """A Linear layer with a normal posterior over its weights: x (*, in) -> (*, out).
    Parameters ``weight_mu``/``weight_rho`` (out, in) and ``bias_mu``/``bias_rho`` (out,);
    prior N(0, prior_std^2) on every weight."""

    def __init__(
        self,
        in_features: int,
        out_features: int,
        bias: bool = True,
        prior_std: float = 1.0,
        rho_init: float = -5.0,
        dtype=None,
        device=None,
    ) -> None:
        super().__init__()
        self._setup_prior(prior_std, rho_init)
        self.in_features, self.out_features = in_features, out_features
        self._make_posterior((out_features, in_features), out_features if bias else None,
                             dtype, device)  # fmt: skip

    def forward(self, x: Tensor) -> Tensor:
        bias = self.sampled("bias") if self.bias_mu is not None else None
        return functions.linear(x, self.sampled("weight"), bias)

    def extra_repr(self) -> str:
        return (
            f"in_features={self.in_features}, out_features={self.out_features}, "
            f"bias={self.bias_mu is not None}, prior_std={self.prior_std}"
        )


class BayesianConv2d(_BayesianLayer):
    """A Conv2d layer with a normal posterior over its kernels: x (N, C_in, H, W) ->
    (N, C_out, H', W'). ``weight_mu``/``weight_rho`` are (C_out, C_in / groups, kH, kW)."""

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size,
        stride=1,
        padding=0,
        dilation=1,
        groups: int = 1,
        bias: bool = True,
        prior_std: float = 1.0,
        rho_init: float = -5.0,
        dtype=None,
        device=None,
    ) -> None:
        super().__init__()
        self._setup_prior(prior_std, rho_init)
        if isinstance(kernel_size, int):
            kernel_size = (kernel_size, kernel_size)
        if in_channels % groups or out_channels % groups:
            raise ArgumentError(
                f"[BayesianConv2d] in_channels={in_channels} and out_channels={out_channels} "
                f"must both be divisible by groups={groups}"
            )
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size = tuple(kernel_size)
        self.stride, self.padding, self.dilation, self.groups = stride, padding, dilation, groups
        shape = (out_channels, in_channels // groups, *self.kernel_size)
        self._make_posterior(shape, out_channels if bias else None, dtype, device)

    def forward(self, x: Tensor) -> Tensor:
        bias = self.sampled("bias") if self.bias_mu is not None else None
        weight = self.sampled("weight")
        return conv2d(x, weight, bias, self.stride, self.padding, self.dilation, self.groups)

    def extra_repr(self) -> str:
        return (
            f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
            f"stride={self.stride}, padding={self.padding}, prior_std={self.prior_std}"
        )


def softplus_inverse(std: float) -> float:
    """The rho with softplus(rho) = ``std``: to start a posterior at a chosen spread."""
    return math.log(math.expm1(std))

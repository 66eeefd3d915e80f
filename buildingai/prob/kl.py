"""``kl_divergence(p, q)``: KL(p || q) in closed form, looked up in a registry of pairs of
families. ``@register_kl(P, Q)`` adds a rule; the most specific registered pair (by each class's
method resolution order) wins, as in ``torch.distributions``."""

from __future__ import annotations

from collections.abc import Callable

from .. import functions as F
from ..autograd.tensor import Tensor
from ..errors import ArgumentError
from .continuous import Beta, Gamma, Laplace, Normal, Uniform
from .discrete import Bernoulli, Categorical
from .distribution import Distribution, sum_rightmost
from .multivariate import Independent, MultivariateNormal
from .triangular import diagonal, solve_lower

_RULES: dict[tuple[type, type], Callable] = {}


def register_kl(p_type: type, q_type: type) -> Callable:
    """Decorator: ``@register_kl(Normal, Normal) def kl(p, q): ...`` adds the rule for that
    pair of families (subclasses use it unless a more specific rule is registered)."""
    for kind in (p_type, q_type):
        if not (isinstance(kind, type) and issubclass(kind, Distribution)):
            raise ArgumentError(f"[register_kl] expects two Distribution subclasses, got {kind!r}")

    def decorator(rule: Callable) -> Callable:
        _RULES[(p_type, q_type)] = rule
        return rule

    return decorator


def kl_divergence(p: Distribution, q: Distribution) -> Tensor:
    """KL(p || q) = E_p[log p(x) - log q(x)], one number per distribution of the batch
    (shape: the broadcast batch shapes)."""
    rule = _lookup(type(p), type(q))
    if rule is None:
        raise NotImplementedError(
            f"[kl_divergence] no closed form registered for KL({type(p).__name__} || "
            f"{type(q).__name__})\n  help: register one with @buildingai.prob.register_kl("
            f"{type(p).__name__}, {type(q).__name__}), or estimate it by sampling: "
            "(p.log_prob(x) - q.log_prob(x)).mean() with x = p.rsample((n,))"
        )
    return rule(p, q)


def _lookup(p_type: type, q_type: type) -> Callable | None:
    for p_base in p_type.__mro__:
        for q_base in q_type.__mro__:
            rule = _RULES.get((p_base, q_base))
            if rule is not None:
                return rule
    return None


# ----- closed forms -------------------------------------------------------------------------------
@register_kl(Normal, Normal)
def _normal_normal(p: Normal, q: Normal) -> Tensor:
    ratio = p.scale / q.scale
    gap = (p.loc - q.loc) / q.scale
    return 0.5 * (ratio * ratio + gap * gap - 1) - ratio.log()


@register_kl(Laplace, Laplace)
def _laplace_laplace(p: Laplace, q: Laplace) -> Tensor:
    ratio = p.scale / q.scale
    gap = (p.loc - q.loc).abs()
    return -ratio.log() + gap / q.scale + ratio * (-gap / p.scale).exp() - 1


@register_kl(Uniform, Uniform)
def _uniform_uniform(p: Uniform, q: Uniform) -> Tensor:
    inside = F.logical_and(q.low <= p.low, p.high <= q.high)
    ratio = ((q.high - q.low) / (p.high - p.low)).log()
    return F.where(inside, ratio, float("inf"))


@register_kl(Bernoulli, Bernoulli)
def _bernoulli_bernoulli(p: Bernoulli, q: Bernoulli) -> Tensor:
    # sum over x of p(x) (log p(x) - log q(x)), with logits for stability
    return p.probs * (p.logits - q.logits) + (q.logits.softplus() - p.logits.softplus())


@register_kl(Categorical, Categorical)
def _categorical_categorical(p: Categorical, q: Categorical) -> Tensor:
    terms = p.probs * (p.logits - q.logits)
    return F.where(p.probs == 0, 0.0, terms).sum(axis=-1)


@register_kl(Gamma, Gamma)
def _gamma_gamma(p: Gamma, q: Gamma) -> Tensor:
    a_p, b_p, a_q, b_q = p.concentration, p.rate, q.concentration, q.rate
    return (
        (a_p - a_q) * F.digamma(a_p)
        - F.lgamma(a_p)
        + F.lgamma(a_q)
        + a_q * (b_p.log() - b_q.log())
        + a_p * (b_q - b_p) / b_p
    )


@register_kl(Beta, Beta)
def _beta_beta(p: Beta, q: Beta) -> Tensor:
    c1_p, c0_p, c1_q, c0_q = p.concentration1, p.concentration0, q.concentration1, q.concentration0
    total_p = c1_p + c0_p
    return (
        q._log_normaliser()
        - p._log_normaliser()
        + (c1_p - c1_q) * F.digamma(c1_p)
        + (c0_p - c0_q) * F.digamma(c0_p)
        + (c1_q - c1_p + c0_q - c0_p) * F.digamma(total_p)
    )


@register_kl(MultivariateNormal, MultivariateNormal)
def _mvn_mvn(p: MultivariateNormal, q: MultivariateNormal) -> Tensor:
    size = p.event_shape[0]
    # tr(Sq^-1 Sp) = ||Lq^-1 Lp||_F^2: solve for each column of Lp (columns as a batch axis)
    columns = p.scale_tril.swapaxes(-1, -2)  # (..., D columns, D)
    whitened = solve_lower(q.scale_tril.unsqueeze(-3), columns)
    trace = (whitened * whitened).sum(axis=(-1, -2))
    gap = solve_lower(q.scale_tril, q.loc - p.loc)
    log_det_ratio = diagonal(q.scale_tril).log().sum(axis=-1) - (
        diagonal(p.scale_tril).log().sum(axis=-1)
    )
    return 0.5 * (trace + (gap * gap).sum(axis=-1) - size) + log_det_ratio


@register_kl(Independent, Independent)
def _independent_independent(p: Independent, q: Independent) -> Tensor:
    if p.reinterpreted_batch_ndims != q.reinterpreted_batch_ndims:
        raise NotImplementedError(
            "[kl_divergence] Independent distributions that reinterpret different numbers of "
            f"batch axes ({p.reinterpreted_batch_ndims} and {q.reinterpreted_batch_ndims})"
        )
    return sum_rightmost(kl_divergence(p.base, q.base), p.reinterpreted_batch_ndims)

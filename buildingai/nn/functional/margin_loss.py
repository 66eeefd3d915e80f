"""Margin, ranking and likelihood losses with PyTorch's signatures and formulas:
``margin_ranking_loss``, ``hinge_embedding_loss``, ``soft_margin_loss``,
``multilabel_soft_margin_loss``, ``multi_margin_loss``, ``multilabel_margin_loss``,
``triplet_margin_loss``, ``triplet_margin_with_distance_loss``, ``poisson_nll_loss`` and
``gaussian_nll_loss``. Each is composed from element-wise ops and reductions, so its gradients
of any order come from those records; ``reduction`` is ``'none'``, ``'mean'`` or ``'sum'``
(and the deprecated ``size_average`` / ``reduce`` flags are translated, as PyTorch does)."""

from __future__ import annotations

import math

from ...autograd.tensor import Tensor
from ...errors import ShapeError
from ...functions.elementwise import minimum, softplus, where
from ...functions.index import one_hot
from .distance import clamped_keeping_gradient, pairwise_distance
from .loss import _as_target, _reduce, _reduction

__all__ = [
    "gaussian_nll_loss",
    "hinge_embedding_loss",
    "margin_ranking_loss",
    "multi_margin_loss",
    "multilabel_margin_loss",
    "multilabel_soft_margin_loss",
    "poisson_nll_loss",
    "soft_margin_loss",
    "triplet_margin_loss",
    "triplet_margin_with_distance_loss",
]


def _same_shapes(op: str, **tensors: Tensor) -> None:
    shapes = {name: tuple(t.shape) for name, t in tensors.items()}
    if len(set(shapes.values())) > 1:
        listed = ", ".join(f"{name} {shape}" for name, shape in shapes.items())
        raise ShapeError(f"[{op}] expects inputs of one shape, got {listed}")


def margin_ranking_loss(
    input1: Tensor,
    input2: Tensor,
    target,
    margin: float = 0.0,
    size_average=None,
    reduce=None,
    reduction: str = "mean",
) -> Tensor:
    """``max(0, -target * (input1 - input2) + margin)``: target 1 asks input1 to rank above
    input2 by ``margin``, target -1 below. All three of one shape."""
    op = "margin_ranking_loss"
    reduction = _reduction(op, size_average, reduce, reduction)
    target = _as_target(target, input1)
    _same_shapes(op, input1=input1, input2=input2, target=target)
    return _reduce((-target * (input1 - input2) + margin).clamp(min=0.0), reduction)


def hinge_embedding_loss(
    input: Tensor,  # noqa: A002 - PyTorch's name
    target,
    margin: float = 1.0,
    size_average=None,
    reduce=None,
    reduction: str = "mean",
) -> Tensor:
    """x where target is 1, ``max(0, margin - x)`` where it is -1 (x a distance, as in
    PyTorch: a target neither 1 nor -1 gets both terms)."""
    op = "hinge_embedding_loss"
    reduction = _reduction(op, size_average, reduce, reduction)
    target = _as_target(target, input)
    below_margin = where(target != 1, (margin - input).clamp(min=0.0), 0.0)
    return _reduce(below_margin + where(target != -1, input, 0.0), reduction)


def soft_margin_loss(
    input: Tensor,  # noqa: A002
    target,
    size_average=None,
    reduce=None,
    reduction: str = "mean",
) -> Tensor:
    """``log(1 + exp(-target * input))``, the logistic loss of targets 1 and -1 (computed as
    softplus, which does not overflow)."""
    op = "soft_margin_loss"
    reduction = _reduction(op, size_average, reduce, reduction)
    target = _as_target(target, input)
    _same_shapes(op, input=input, target=target)
    return _reduce(softplus(-target * input), reduction)


def multilabel_soft_margin_loss(
    input: Tensor,  # noqa: A002
    target,
    weight: Tensor | None = None,
    size_average=None,
    reduce=None,
    reduction: str = "mean",
) -> Tensor:
    """Binary cross-entropy of each class's logit against a 0/1 target, averaged over the
    classes (the last dimension): input and target (N, C) or (C,) -> (N,) with ``'none'``.
    ``weight`` (C,) scales each class."""
    op = "multilabel_soft_margin_loss"
    reduction = _reduction(op, size_average, reduce, reduction)
    target = _as_target(target, input)
    _same_shapes(op, input=input, target=target)
    # -(y log sigmoid(x) + (1 - y) log sigmoid(-x)), each log sigmoid a stable -softplus
    loss = target * softplus(-input) + (1 - target) * softplus(input)
    if weight is not None:
        loss = loss * weight
    return _reduce(loss.sum(-1) / input.shape[-1], reduction)


def triplet_margin_loss(
    anchor: Tensor,
    positive: Tensor,
    negative: Tensor,
    margin: float = 1.0,
    p: float = 2.0,
    eps: float = 1e-6,
    swap: bool = False,
    size_average=None,
    reduce=None,
    reduction: str = "mean",
) -> Tensor:
    """``max(0, d(a, p) - d(a, n) + margin)`` with d the ``pairwise_distance`` (p-norm, with
    ``eps``); ``swap`` takes d(a, n) as the smaller of it and d(p, n). Inputs (N, D) or (D,)."""
    op = "triplet_margin_loss"
    reduction = _reduction(op, size_average, reduce, reduction)
    if not anchor.ndim == positive.ndim == negative.ndim or anchor.ndim not in (1, 2):
        raise ShapeError(
            f"[{op}] expects anchor, positive and negative all (N, D) or all (D,), got "
            f"{tuple(anchor.shape)}, {tuple(positive.shape)} and {tuple(negative.shape)}"
        )
    to_positive = pairwise_distance(anchor, positive, p, eps)
    to_negative = pairwise_distance(anchor, negative, p, eps)
    if swap:
        to_negative = minimum(to_negative, pairwise_distance(positive, negative, p, eps))
    return _reduce((margin + to_positive - to_negative).clamp(min=0.0), reduction)


def poisson_nll_loss(
    input: Tensor,  # noqa: A002
    target,
    log_input: bool = True,
    full: bool = False,
    size_average=None,
    eps: float = 1e-8,
    reduce=None,
    reduction: str = "mean",
) -> Tensor:
    """The negative log-likelihood of ``target`` counts under a Poisson of rate ``input``:
    ``exp(input) - target * input`` with ``log_input`` (input the log-rate), else ``input -
    target * log(input + eps)``; ``full`` adds Stirling's approximation of log(target!) where
    target > 1."""
    op = "poisson_nll_loss"
    reduction = _reduction(op, size_average, reduce, reduction)
    target = _as_target(target, input)
    if log_input:
        loss = input.exp() - target * input
    else:
        loss = input - target * (input + eps).log()
    if full:
        counts = where(target > 1, target, 1.0)  # the term is 0 at and below 1
        stirling = counts * counts.log() - counts + 0.5 * (2 * math.pi * counts).log()
        loss = loss + where(target > 1, stirling, 0.0)
    return _reduce(loss, reduction)


def gaussian_nll_loss(
    input: Tensor,  # noqa: A002
    target,
    var,
    full: bool = False,
    eps: float = 1e-6,
    reduction: str = "mean",
) -> Tensor:
    """The negative log-likelihood of ``target`` under a Gaussian of mean ``input`` and
    variance ``var``: ``0.5 * (log(max(var, eps)) + (input - target)^2 / max(var, eps))``, plus
    ``0.5 * log(2 pi)`` with ``full``. ``var`` has input's shape, or one dimension fewer, or a
    last dimension of 1 (one variance per sample). As in PyTorch, the clamp to ``eps`` leaves
    the gradient of ``var`` as if unclamped."""
    op = "gaussian_nll_loss"
    reduction = _reduction(op, None, None, reduction)
    target = _as_target(target, input)
    var = _as_target(var, input)
    shape, var_shape = tuple(input.shape), tuple(var.shape)
    if var_shape != shape:
        if var_shape == shape[:-1]:
            var = var.unsqueeze(-1)
        elif not (var_shape[:-1] == shape[:-1] and var_shape[-1:] == (1,)):
            raise ShapeError(
                f"[{op}] var {var_shape} does not fit input {shape}",
                help="give var input's shape, input's shape without its last dimension, or "
                "that with a last dimension of 1",
            )
    if bool((var.detach() < 0).any()):
        raise ValueError(f"[{op}] var has negative entries")
    var = clamped_keeping_gradient(var, eps)
    loss = 0.5 * (var.log() + (input - target).square() / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)


def _class_scores(op: str, input: Tensor, target: Tensor, target_ndim: int):  # noqa: A002
    """input (N, C) or (C,) as (N, C), and target with the matching batch axis."""
    if input.ndim not in (1, 2) or target.ndim != input.ndim - 1 + target_ndim:
        raise ShapeError(
            f"[{op}] expects input (N, C) or (C,) and a matching target, got "
            f"{tuple(input.shape)} and {tuple(target.shape)}"
        )
    if input.ndim == 1:
        return input.unsqueeze(0), target.unsqueeze(0), True
    return input, target, False


def multi_margin_loss(
    input: Tensor,  # noqa: A002
    target: Tensor,
    p: int = 1,
    margin: float = 1.0,
    weight: Tensor | None = None,
    size_average=None,
    reduce=None,
    reduction: str = "mean",
) -> Tensor:
    """The multi-class hinge loss: per sample, the sum over the classes i other than the
    target y of ``max(0, margin - x[y] + x[i])^p``, divided by C (``weight[y]`` scales a
    sample's terms). input (N, C) or (C,), target (N,) or () class indices; p is 1 or 2."""
    op = "multi_margin_loss"
    reduction = _reduction(op, size_average, reduce, reduction)
    if p not in (1, 2):
        raise ValueError(f"[{op}] p must be 1 or 2, got {p}")
    x, y, single = _class_scores(op, input, target, 0)
    classes = x.shape[1]
    scored = x.gather(1, y.unsqueeze(1))  # (N, 1): the target class's score
    terms = (margin - scored + x).clamp(min=0.0)
    if p == 2:
        terms = terms * terms
    terms = where(one_hot(y, classes) == 1, 0.0, terms)  # the target class itself counts not
    if weight is not None:
        terms = terms * weight[y].unsqueeze(1)
    loss = terms.sum(1) / classes
    return _reduce(loss.squeeze(0) if single else loss, reduction)


def multilabel_margin_loss(
    input: Tensor,  # noqa: A002
    target: Tensor,
    size_average=None,
    reduce=None,
    reduction: str = "mean",
) -> Tensor:
    """The multi-label hinge loss: per sample, the sum over its target classes j and its other
    classes i of ``max(0, 1 - (x[j] - x[i]))``, divided by C. input (N, C) or (C,); target of
    the same shape holds the target classes first, ended by the first -1."""
    op = "multilabel_margin_loss"
    reduction = _reduction(op, size_average, reduce, reduction)
    x, y, single = _class_scores(op, input, target, 1)
    classes = x.shape[1]
    # the targets before the first -1: a running product of "not -1" along each row
    listed = (y != -1).long().cumprod(1)  # (N, T), 1 while listed
    chosen = one_hot(y.clamp(min=0), classes) * listed.unsqueeze(2)  # (N, T, C)
    is_target = chosen.sum(1) > 0  # (N, C)
    scored = x.gather(1, y.clamp(min=0))  # (N, T): each listed target's score
    hinge = (1.0 - (scored.unsqueeze(2) - x.unsqueeze(1))).clamp(min=0.0)  # (N, T, C)
    kept = listed.unsqueeze(2) * where(is_target, 0, 1).unsqueeze(1)  # (N, T, C)
    loss = (hinge * kept).sum((1, 2)) / classes
    return _reduce(loss.squeeze(0) if single else loss, reduction)


def triplet_margin_with_distance_loss(
    anchor: Tensor,
    positive: Tensor,
    negative: Tensor,
    *,
    distance_function=None,
    margin: float = 1.0,
    swap: bool = False,
    reduction: str = "mean",
) -> Tensor:
    """``max(0, d(a, p) - d(a, n) + margin)`` with any distance ``d`` (a callable on two
    tensors, by default ``pairwise_distance``); ``swap`` takes d(a, n) as the smaller of it
    and d(p, n)."""
    op = "triplet_margin_with_distance_loss"
    reduction = _reduction(op, None, None, reduction)
    distance = pairwise_distance if distance_function is None else distance_function
    to_positive, to_negative = distance(anchor, positive), distance(anchor, negative)
    if swap:
        to_negative = minimum(to_negative, distance(positive, negative))
    return _reduce((margin + to_positive - to_negative).clamp(min=0.0), reduction)

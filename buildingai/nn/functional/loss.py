"""Loss functions, with ``torch.nn.functional``'s names, arguments and semantics.

Every loss takes ``reduction``: ``'mean'`` (default), ``'sum'`` or ``'none'`` (the per-element or
per-sample losses); the deprecated ``size_average``/``reduce`` flags are still understood. Losses
on logits go through ``log_softmax`` or ``softplus``, so logits of any size give finite values and
gradients.
"""

from __future__ import annotations

import math

from ...autograd.dispatch import apply
from ...autograd.tensor import Tensor
from ...errors import ArgumentError, DTypeError, ShapeError
from ...functions.creation import as_tensor
from ...functions.elementwise import softplus, where
from ...functions.index import one_hot
from ...functions.nn import log_softmax
from ...ops import loss as ops

_REDUCTIONS = ("mean", "sum", "none")


def legacy_reduction(size_average: bool | None, reduce: bool | None, reduction: str) -> str:
    """Translate PyTorch's deprecated ``size_average``/``reduce`` flags into ``reduction``."""
    if size_average is None and reduce is None:
        return reduction
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    if not reduce:
        return "none"
    return "mean" if size_average else "sum"


def _reduction(op: str, size_average, reduce, reduction: str, extra: tuple = ()) -> str:
    reduction = legacy_reduction(size_average, reduce, reduction)
    if reduction not in _REDUCTIONS + extra:
        raise ArgumentError(
            f"[{op}] reduction {reduction!r} is not valid",
            help="use one of " + ", ".join(repr(r) for r in _REDUCTIONS + extra),
        )
    return reduction


def _weighted(op: str, loss: Tensor, weight: Tensor | None, reduction: str) -> Tensor:
    """``loss * weight`` reduced; ``'mean'`` divides by the sum of the weights (PyTorch's
    weighted mean for mse_loss and l1_loss)."""
    if weight is None:
        return _reduce(loss, reduction)
    if tuple(weight.shape) != tuple(loss.shape):
        raise ShapeError(
            f"[{op}] weight {tuple(weight.shape)} and input {tuple(loss.shape)} have different "
            "shapes",
            help="pass one weight per element of the input",
        )
    loss = loss * weight
    if reduction == "mean":
        return loss.sum() / weight.sum()
    return _reduce(loss, reduction)


def _reduce(loss: Tensor, reduction: str) -> Tensor:
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    return loss


def _as_target(target, like: Tensor) -> Tensor:
    if isinstance(target, Tensor):
        return target
    target = as_tensor(target)
    if target.dtype.kind == "f" and target.dtype != like.dtype:
        target = target.astype(like.dtype)
    return target


def _target_like(op: str, input: Tensor, target) -> Tensor:  # noqa: A002
    """``target`` as a tensor (a float one in the input's dtype), which must have the input's
    shape: the losses compare the two element by element."""
    target = _as_target(target, input)
    if tuple(input.shape) != tuple(target.shape):
        raise ShapeError(
            f"[{op}] input {tuple(input.shape)} and target {tuple(target.shape)} have different "
            "shapes",
            help="the target must have the input's shape; reshape or unsqueeze it (a silent "
            "broadcast would average the wrong pairs)",
        )
    return target


def _check_floating(op: str, name: str, value: Tensor) -> None:
    if value.dtype.kind not in "fV":
        raise DTypeError(
            f"[{op}] {name} must be floating point, got {value.dtype} of shape "
            f"{tuple(value.shape)}",
            help=f"convert it, e.g. {name}.astype('float32')",
        )


# ----- regression losses ------------------------------------------------------------------------


def mse_loss(
    input: Tensor,  # noqa: A002 - PyTorch's argument name
    target,
    size_average=None,
    reduce=None,
    reduction: str = "mean",
    weight: Tensor | None = None,
) -> Tensor:
    """Squared error ``(input - target)^2``, reduced. input and target: the same shape.
    With ``weight`` (the input's shape) each error is weighted and ``'mean'`` divides by the
    sum of the weights."""
    reduction = _reduction("mse_loss", size_average, reduce, reduction)
    target = _target_like("mse_loss", input, target)
    return _weighted("mse_loss", (input - target).square(), weight, reduction)


def l1_loss(
    input: Tensor,  # noqa: A002 - PyTorch's argument name
    target,
    size_average=None,
    reduce=None,
    reduction: str = "mean",
    weight: Tensor | None = None,
) -> Tensor:
    """Absolute error ``|input - target|``, reduced; ``weight`` as in ``mse_loss``. input,
    target: the same shape."""
    reduction = _reduction("l1_loss", size_average, reduce, reduction)
    target = _target_like("l1_loss", input, target)
    return _weighted("l1_loss", (input - target).abs(), weight, reduction)


def huber_loss(
    input: Tensor,  # noqa: A002 - PyTorch's argument name
    target,
    reduction: str = "mean",
    delta: float = 1.0,
    weight: Tensor | None = None,
) -> Tensor:
    """``0.5 d^2`` where ``|d| < delta``, ``delta (|d| - 0.5 delta)`` elsewhere (d = input -
    target): quadratic near zero, linear (robust to outliers) far from it. input, target: the
    same shape."""
    reduction = _reduction("huber_loss", None, None, reduction)
    if delta <= 0:
        raise ArgumentError(f"[huber_loss] delta must be positive, got {delta}")
    target = _target_like("huber_loss", input, target)
    difference = input - target
    size = difference.abs()
    loss = where(size < delta, 0.5 * difference.square(), delta * (size - 0.5 * delta))
    return _reduce(loss if weight is None else loss * weight, reduction)


def smooth_l1_loss(
    input: Tensor,  # noqa: A002 - PyTorch's argument name
    target,
    size_average=None,
    reduce=None,
    reduction: str = "mean",
    beta: float = 1.0,
) -> Tensor:
    """``0.5 d^2 / beta`` where ``|d| < beta``, ``|d| - 0.5 beta`` elsewhere; ``beta=0`` is the
    L1 loss. Equals ``huber_loss(delta=beta) / beta``. input, target: the same shape."""
    reduction = _reduction("smooth_l1_loss", size_average, reduce, reduction)
    if beta < 0:
        raise ArgumentError(f"[smooth_l1_loss] beta must be non-negative, got {beta}")
    target = _target_like("smooth_l1_loss", input, target)
    difference = input - target
    size = difference.abs()
    if beta == 0:
        return _reduce(size, reduction)
    loss = where(size < beta, (0.5 / beta) * difference.square(), size - 0.5 * beta)
    return _reduce(loss, reduction)


# ----- classification on class indices ------------------------------------------------------------


def _class_axis(op: str, input: Tensor) -> int:
    if input.ndim == 0:
        raise ShapeError(
            f"[{op}] input must be (C,), (N, C) or (N, C, d1, ...), got a scalar",
            help="the class scores lie along dimension 1 (dimension 0 for a single sample)",
        )
    return 1 if input.ndim >= 2 else 0


def _check_weight(op: str, weight: Tensor | None, classes: int) -> None:
    if weight is not None and tuple(weight.shape) != (classes,):
        raise ShapeError(
            f"[{op}] weight has shape {tuple(weight.shape)} but the input has {classes} classes",
            help=f"pass one weight per class: shape ({classes},)",
        )


def _check_class_targets(op: str, input: Tensor, target: Tensor, axis: int):
    """Targets must be integers shaped like the input without its class axis. (That each is a
    class index or ``ignore_index`` the ``cross_entropy`` and ``nll_loss`` ops check, on every
    run of a traced graph too: ``ops.loss.check_target_classes``.)"""
    expected = tuple(input.shape[:axis]) + tuple(input.shape[axis + 1 :])
    if target.dtype.kind not in "iu":
        raise DTypeError(
            f"[{op}] class-index targets must be integers, got {target.dtype} of shape "
            f"{tuple(target.shape)} (input {tuple(input.shape)})",
            help="convert them with target.astype('int64'); class probabilities must have the "
            "input's shape",
        )
    if tuple(target.shape) != expected:
        raise ShapeError(
            f"[{op}] target {tuple(target.shape)} does not fit input {tuple(input.shape)}: "
            f"class-index targets must have shape {expected}",
            help="the input is (N, C, d1, ...) and the target (N, d1, ...), with the classes "
            "along dimension 1 of the input",
        )


def _weighted_nll(log_probs, target, weight, ignore_index, reduction, axis) -> Tensor:
    """The NLL part shared by nll_loss and cross_entropy: the ``nll_loss`` op, which takes the
    target as an input (so a traced graph picks each call's classes). Class weights that
    require a gradient multiply the per-sample losses as tensor ops, so the gradient reaches
    them."""
    if weight is None or not weight.requires_grad:
        weights = () if weight is None else (weight,)
        return apply(
            ops.NLL_LOSS,
            log_probs,
            target,
            *weights,
            axis=axis,
            ignore_index=ignore_index,
            reduction=reduction,
        )
    losses = apply(
        ops.NLL_LOSS, log_probs, target, axis=axis, ignore_index=ignore_index, reduction="none"
    )
    sample_weight = _sample_weights(target, weight.astype(log_probs.dtype), ignore_index)
    losses = losses * sample_weight
    if reduction == "none":
        return losses
    total = losses.sum()
    return total if reduction == "sum" else total / sample_weight.sum()


def _sample_weights(target: Tensor, weight: Tensor | None, ignore_index: int, dtype=None):
    """``weight[target]`` (1 without weights) for each counted target and 0 for ignored ones,
    shaped like target: the terms of a weighted mean's normalizer."""
    valid = target != ignore_index
    if weight is None:
        return valid.astype(dtype)
    classes = one_hot(where(valid, target, 0), weight.shape[0]).astype(weight.dtype)
    return where(valid, (classes * weight).sum(axis=-1), 0.0)


def nll_loss(
    input: Tensor,  # noqa: A002 - PyTorch's argument name
    target,
    weight: Tensor | None = None,
    size_average=None,
    ignore_index: int = -100,
    reduce=None,
    reduction: str = "mean",
) -> Tensor:
    """Negative log-likelihood of the target classes: ``-weight[t] * input[n, t]``.

    input: log-probabilities (C,), (N, C) or (N, C, d1, ...); target: class indices (), (N,) or
    (N, d1, ...). Entries equal to ``ignore_index`` contribute nothing; ``'mean'`` divides by
    the sum of the weights of the counted entries (nan when none is counted, as in PyTorch).
    """
    reduction = _reduction("nll_loss", size_average, reduce, reduction)
    target = _as_target(target, input)
    axis = _class_axis("nll_loss", input)
    _check_weight("nll_loss", weight, input.shape[axis])
    _check_class_targets("nll_loss", input, target, axis)
    return _weighted_nll(input, target, weight, ignore_index, reduction, axis)


def cross_entropy(
    input: Tensor,  # noqa: A002 - PyTorch's argument name
    target,
    weight: Tensor | None = None,
    size_average=None,
    ignore_index: int = -100,
    reduce=None,
    reduction: str = "mean",
    label_smoothing: float = 0.0,
) -> Tensor:
    """Cross-entropy between logits and targets: ``log_softmax`` then the negative
    log-likelihood, stable for logits of any size.

    input: logits (C,), (N, C) or (N, C, d1, ...). target: class indices (), (N,) or
    (N, d1, ...), or class probabilities shaped like the input. ``weight`` (C,) rescales each
    class; ``ignore_index`` skips targets (class indices only); ``label_smoothing`` in [0, 1]
    mixes the target with the uniform distribution. Normalisation of ``'mean'`` follows
    PyTorch: by the summed weights of the counted targets for class indices, by the number of
    samples (N * d1 * ...) for probabilities.
    """
    reduction = _reduction("cross_entropy", size_average, reduce, reduction)
    if not 0.0 <= label_smoothing <= 1.0:
        raise ArgumentError(
            f"[cross_entropy] label_smoothing must be in [0, 1], got {label_smoothing}"
        )
    target = _as_target(target, input)
    axis = _class_axis("cross_entropy", input)
    classes = input.shape[axis]
    _check_weight("cross_entropy", weight, classes)
    class_targets = not (tuple(target.shape) == tuple(input.shape) and target.dtype.kind in "fV")
    if (
        class_targets
        and label_smoothing == 0.0
        and classes > 0
        and input.dtype.kind in "fV"
        and (weight is None or not weight.requires_grad)
    ):
        # the common case as one op: no log-probabilities tensor, gradient softmax - one_hot
        _check_class_targets("cross_entropy", input, target, axis)
        weights = () if weight is None else (weight,)
        return apply(
            ops.CROSS_ENTROPY,
            input,
            target,
            *weights,
            axis=axis,
            ignore_index=ignore_index,
            reduction=reduction,
        )
    log_probs = log_softmax(input, axis=axis)
    weight_view = None
    if weight is not None:
        view_shape = [1] * input.ndim
        view_shape[axis] = classes
        weight_view = weight.astype(input.dtype).reshape(tuple(view_shape))

    if tuple(target.shape) == tuple(input.shape) and target.dtype.kind in "fV":
        if ignore_index >= 0:
            raise ArgumentError(
                "[cross_entropy] ignore_index is not supported for class-probability targets",
                help="give an ignored sample a zero probability row, or use class indices",
            )
        return _cross_entropy_probabilities(
            log_probs, target, weight_view, reduction, label_smoothing, axis
        )

    _check_class_targets("cross_entropy", input, target, axis)
    nll = _weighted_nll(log_probs, target, weight, ignore_index, reduction, axis)
    if label_smoothing == 0.0:
        return nll
    # The smoothing term: minus the (weighted) sum of every class's log-probability.
    scaled = log_probs if weight_view is None else log_probs * weight_view
    smooth = where(target != ignore_index, -scaled.sum(axis=axis), 0.0)
    if reduction == "mean":
        weights = None if weight is None else weight.astype(input.dtype)
        smooth = smooth.sum() / _sample_weights(target, weights, ignore_index, input.dtype).sum()
    elif reduction == "sum":
        smooth = smooth.sum()
    return (1.0 - label_smoothing) * nll + (label_smoothing / classes) * smooth


def _cross_entropy_probabilities(log_probs, target, weight_view, reduction, smoothing, axis):
    classes = log_probs.shape[axis]
    if smoothing > 0.0:
        target = target * (1.0 - smoothing) + smoothing / classes
    product = log_probs * target
    if weight_view is not None:
        product = product * weight_view
    if reduction == "none":
        return -product.sum(axis=axis)
    total = -product.sum()
    if reduction == "sum":
        return total
    samples = log_probs.array.size // classes if classes else 0
    return total / samples if samples else total * math.nan


# ----- binary classification ----------------------------------------------------------------------


def binary_cross_entropy(
    input: Tensor,  # noqa: A002 - PyTorch's argument name
    target,
    weight: Tensor | None = None,
    size_average=None,
    reduce=None,
    reduction: str = "mean",
) -> Tensor:
    """``-weight * (t log x + (1 - t) log(1 - x))`` on probabilities x in [0, 1], with each
    log clamped to >= -100 as in PyTorch. Prefer ``binary_cross_entropy_with_logits`` on raw
    scores: it is exact where this one saturates. input, target: the same shape."""
    reduction = _reduction("binary_cross_entropy", size_average, reduce, reduction)
    target = _target_like("binary_cross_entropy", input, target)
    _check_floating("binary_cross_entropy", "target", target)
    loss = apply(ops.BINARY_CROSS_ENTROPY, input, target)
    return _reduce(loss if weight is None else loss * weight, reduction)


def binary_cross_entropy_with_logits(
    input: Tensor,  # noqa: A002 - PyTorch's argument name
    target,
    weight: Tensor | None = None,
    size_average=None,
    reduce=None,
    reduction: str = "mean",
    pos_weight: Tensor | None = None,
) -> Tensor:
    """Binary cross-entropy on logits x: ``(1 - t) x + (1 + (pos_weight - 1) t) softplus(-x)``,
    which equals ``-(pos_weight t log sigmoid(x) + (1 - t) log(1 - sigmoid(x)))`` and stays
    exact for logits of any size. ``pos_weight`` (broadcast along the last dimension, e.g. (C,))
    weighs the positive term; ``weight`` rescales each element."""
    reduction = _reduction("binary_cross_entropy_with_logits", size_average, reduce, reduction)
    target = _target_like("binary_cross_entropy_with_logits", input, target)
    _check_floating("binary_cross_entropy_with_logits", "target", target)
    # softplus(-x) = log(1 + exp(-x)) = -log sigmoid(x); no threshold: exact everywhere
    log_one_plus = softplus(-input, threshold=math.inf)
    if pos_weight is not None:
        log_one_plus = log_one_plus * ((pos_weight - 1) * target + 1)
    loss = (1 - target) * input + log_one_plus
    return _reduce(loss if weight is None else loss * weight, reduction)


# ----- distributions and embeddings ---------------------------------------------------------------


def kl_div(
    input: Tensor,  # noqa: A002 - PyTorch's argument name
    target,
    size_average=None,
    reduce=None,
    reduction: str = "mean",
    log_target: bool = False,
) -> Tensor:
    """Kullback-Leibler divergence ``t (log t - input)`` with ``input`` log-probabilities and
    ``target`` probabilities (log-probabilities with ``log_target=True``); ``0 log 0 = 0``.
    input (N, *) and target of the same shape.

    ``reduction='batchmean'`` divides the sum by the batch size (the true KL divergence per
    sample); ``'mean'`` divides by the number of elements, as in PyTorch.
    """
    reduction = _reduction("kl_div", size_average, reduce, reduction, extra=("batchmean",))
    target = _target_like("kl_div", input, target)
    if log_target:
        loss = target.exp() * (target - input)
    else:
        is_zero = Tensor(target.array == 0)
        safe = where(is_zero, 1.0, target)
        loss = where(is_zero, 0.0, target * safe.log()) - target * input
    if reduction == "batchmean":
        batch = input.shape[0] if input.ndim else 1
        return loss.sum() / batch
    return _reduce(loss, reduction)


def cosine_embedding_loss(
    input1: Tensor,
    input2: Tensor,
    target,
    margin: float = 0.0,
    size_average=None,
    reduce=None,
    reduction: str = "mean",
) -> Tensor:
    """``1 - cos(x1, x2)`` where target is 1, ``max(0, cos(x1, x2) - margin)`` where it is -1.

    input1, input2: (N, D) or (D,); target: (N,) or () of 1 and -1.
    """
    op = "cosine_embedding_loss"
    reduction = _reduction(op, size_average, reduce, reduction)
    target = _as_target(target, input1)
    if (
        tuple(input1.shape) != tuple(input2.shape)
        or input1.ndim not in (1, 2)
        or tuple(target.shape) != tuple(input1.shape[:-1])
    ):
        raise ShapeError(
            f"[{op}] expects input1 and input2 of shape (N, D) or (D,) and target (N,) or (), "
            f"got {tuple(input1.shape)}, {tuple(input2.shape)} and {tuple(target.shape)}",
            help="the target holds 1 (similar) or -1 (dissimilar) per pair of rows",
        )
    epsilon = 1e-12  # PyTorch's guard against zero vectors
    dot = (input1 * input2).sum(axis=-1)
    norms = (input1.square().sum(axis=-1) + epsilon) * (input2.square().sum(axis=-1) + epsilon)
    cosine = dot / norms.sqrt()
    loss = where(Tensor(target.array == 1), 1 - cosine, 0.0) + where(
        Tensor(target.array == -1), (cosine - margin).clamp(min=0), 0.0
    )
    return _reduce(loss, reduction)


__all__ = [
    "mse_loss",
    "l1_loss",
    "huber_loss",
    "smooth_l1_loss",
    "nll_loss",
    "cross_entropy",
    "binary_cross_entropy",
    "binary_cross_entropy_with_logits",
    "kl_div",
    "cosine_embedding_loss",
]

"""Connectionist temporal classification (CTC): the negative log-likelihood of a label sequence
summed over every frame-level alignment, and its gradient, as PyTorch's ``ctc_loss`` computes them.

Both records work on the *extended* label sequence ``l'`` (length ``L = 2 S + 1``): a blank
before, between and after the S labels. ``alpha[t, n, s]`` is the log-probability of emitting the
first ``s + 1`` symbols of ``l'`` in frames 0..t and ``beta[t, n, s]`` that of emitting the rest
from frame t on; both include frame t's emission, as in PyTorch.
"""

from __future__ import annotations

import numpy as np

from ..backend.device import array_namespace
from ..errors import ArgumentError, BuildingAIError, DTypeError, IndexingError, ShapeError
from .abstract import ValueSpec, memory_cost, total
from .base import Op

_REDUCTIONS = ("none", "mean", "sum")
FLOPS_PER_STATE = 10  # a three-way log-sum-exp and the emission's addition per (t, n, s)


def check_ctc_shapes(log_probs, targets, input_lengths, target_lengths, blank: int) -> None:
    """Raise unless log_probs is (T, N, C), targets (N, S) or 1-D, both lengths (N,) integers
    and ``blank`` a class: PyTorch's checks, on shapes and dtypes only."""
    if len(log_probs.shape) != 3:
        raise ShapeError(
            f"[ctc_loss] log_probs must be (T, N, C), got {tuple(log_probs.shape)}",
            help="pass (time, batch, classes) log-probabilities, or (time, classes) for one sample",
        )
    _, batch, classes = log_probs.shape
    if not 0 <= blank < classes:
        raise ArgumentError(
            f"[ctc_loss] blank must be in label range: blank {blank} for {classes} classes",
            help=f"choose blank in [0, {classes - 1}]",
        )
    for name, lengths in (("input_lengths", input_lengths), ("target_lengths", target_lengths)):
        if np.dtype(lengths.dtype).kind not in "iu":
            raise DTypeError(
                f"[ctc_loss] {name} must be integral, got {np.dtype(lengths.dtype)}",
                help=f"pass {name} as integers (a tuple of ints or an int64 tensor)",
            )
        if tuple(lengths.shape) != (batch,):
            raise ShapeError(
                f"[ctc_loss] {name} must be of size batch_size ({batch}), got "
                f"{tuple(lengths.shape)}",
                help="give one length per sample of the batch",
            )
    if len(targets.shape) not in (1, 2) or (len(targets.shape) == 2 and targets.shape[0] != batch):
        raise ShapeError(
            f"[ctc_loss] targets {tuple(targets.shape)} fit neither (N, S) = ({batch}, S) nor "
            f"the 1-D concatenation of every target",
            help="pad the targets to (batch, max target length), or concatenate them",
        )


def check_ctc_values(log_probs, targets, input_lengths, target_lengths) -> None:
    """Raise unless every length is in range (0 <= input length <= T, 0 <= target length <= S,
    or summing to the concatenated targets' size) and every label inside a target is a class."""
    steps, _, classes = log_probs.shape
    for name, lengths in (("input_lengths", input_lengths), ("target_lengths", target_lengths)):
        if lengths.size and lengths.min() < 0:
            raise ArgumentError(
                f"[ctc_loss] Expected {name} to have value at least 0, but got value "
                f"{int(lengths.min())}",
                help="lengths count frames or labels: they cannot be negative",
            )
    if input_lengths.size and input_lengths.max() > steps:
        raise ArgumentError(
            f"[ctc_loss] Expected input_lengths to have value at most {steps}, but got value "
            f"{int(input_lengths.max())}",
            help=f"log_probs has {steps} frames (its first axis): no sample can have more",
        )
    if targets.ndim == 2:
        longest = int(target_lengths.max()) if target_lengths.size else 0
        if longest > targets.shape[1]:
            raise ShapeError(
                f"[ctc_loss] Expected targets to have size at least {longest} at dimension 1, "
                f"but got size {targets.shape[1]} (targets {tuple(targets.shape)})",
                help="pad every target to the longest target length",
            )
        xp = array_namespace(targets)
        labels = targets[xp.arange(targets.shape[1])[None, :] < target_lengths[:, None]]
    else:
        needed = int(target_lengths.sum())
        if needed != targets.shape[0]:
            raise ShapeError(
                f"[ctc_loss] Expected targets to have size {needed} at dimension 0 (the sum of "
                f"target_lengths), but got size {targets.shape[0]}",
                help="concatenated targets hold exactly the labels the target lengths count",
            )
        labels = targets
    if labels.size and (labels.min() < 0 or labels.max() >= classes):
        bad = int(labels[(labels < 0) | (labels >= classes)].reshape(-1)[0])
        raise IndexingError(
            f"[ctc_loss] target label {bad} is out of range for {classes} classes",
            help=f"labels must lie in [0, {classes - 1}]; check the model's number of classes",
        )


def extended_labels(xp, targets, target_lengths):
    """The extended label sequences (N, L = 2 S + 1) with blanks at even positions marked -1
    (filled in by the caller), S the padded width or, for concatenated targets, the longest."""
    batch = target_lengths.shape[0]
    lengths = target_lengths.astype(np.int64)
    if targets.ndim == 1:  # concatenated: cut each sample's labels out at its offset
        width = int(lengths.max()) if batch else 0
        starts = xp.cumsum(lengths) - lengths
        positions = starts[:, None] + xp.arange(width)[None, :]
        inside = xp.arange(width)[None, :] < lengths[:, None]
        flat = targets.astype(np.int64)
        padded = xp.where(inside, flat[xp.minimum(positions, max(flat.shape[0] - 1, 0))], 0)
        if flat.shape[0] == 0:
            padded = xp.zeros((batch, width), dtype=np.int64)
    else:
        width = targets.shape[1]
        padded = targets.astype(np.int64)
    labels = xp.full((batch, 2 * width + 1), -1, dtype=np.int64)
    labels[:, 1::2] = padded
    return labels


def _logsumexp3(a, b, c, xp):
    """log(exp(a) + exp(b) + exp(c)) element-wise, -inf where all three are -inf."""
    top = xp.maximum(xp.maximum(a, b), c)
    shift = xp.where(xp.isfinite(top), top, 0)  # all -inf: no shift, the sum is 0, log -inf
    return xp.log(xp.exp(a - shift) + xp.exp(b - shift) + xp.exp(c - shift)) + shift


def _shifted(xp, values, by: int, fill):
    """``values`` moved ``by`` places along the last axis (toward higher s), ``fill`` before."""
    out = xp.full(values.shape, fill, dtype=values.dtype)
    if by < values.shape[-1]:
        out[..., by:] = values[..., : values.shape[-1] - by]
    return out


def _backshifted(xp, values, by: int, fill):
    """``values`` moved ``by`` places along the last axis toward lower s, ``fill`` after."""
    out = xp.full(values.shape, fill, dtype=values.dtype)
    if by < values.shape[-1]:
        out[..., : values.shape[-1] - by] = values[..., by:]
    return out


class CTCLoss(Op):
    """CTC negative log-likelihood, reduced as PyTorch's ``ctc_loss``.

    log_probs (T, N, C): log-probabilities per frame; targets (N, S) padded or 1-D
    (sum(target_lengths)) concatenated labels; input_lengths, target_lengths (N,) integers.
    ``blank``: the blank class; ``reduction``: ``"none"`` -> (N,), ``"sum"`` -> (), ``"mean"`` ->
    () the mean over the batch of each loss divided by max(target length, 1); ``zero_infinity``:
    infinite losses (an input too short for its target) count 0 and get no gradient. The
    forward keeps ``alpha`` and the per-sample losses; the gradient is ``ctc_loss_grad``.
    """

    name = "ctc_loss"
    autocast = "float32"
    checks_values = True  # lengths and labels in range, on every run of a traced graph too

    def check(
        self, log_probs, targets, input_lengths, target_lengths, *, blank, reduction, zero_infinity
    ):
        check_ctc_shapes(log_probs, targets, input_lengths, target_lengths, blank)
        check_ctc_values(log_probs, targets, input_lengths, target_lengths)

    def forward(
        self,
        ctx,
        xp,
        log_probs,
        targets,
        input_lengths,
        target_lengths,
        *,
        blank,
        reduction,
        zero_infinity,
    ):
        steps, batch, _ = log_probs.shape
        dtype = log_probs.dtype
        labels = extended_labels(xp, targets, target_lengths)  # (N, L)
        labels = xp.where(labels < 0, blank, labels)
        extent = labels.shape[1]
        input_lengths = input_lengths.astype(np.int64)
        target_lengths = target_lengths.astype(np.int64)
        ends = 2 * target_lengths + 1  # each sample's extended length
        states = xp.arange(extent)[None, :]
        inside = states < ends[:, None]  # (N, L)
        skip = _may_skip(xp, labels, blank)
        minus_inf = dtype.type(-np.inf)
        # emissions[t, n, s] = log_probs[t, n, l'(n, s)]
        emissions = log_probs[:, xp.arange(batch)[:, None], labels]  # (T, N, L)
        log_alpha = xp.full((steps, batch, extent), minus_inf, dtype=dtype)
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            if steps:
                # a path starts with the blank or with the first label
                log_alpha[0] = xp.where(inside & (states < 2), emissions[0], minus_inf)
            for t in range(1, steps):
                previous = log_alpha[t - 1]
                from_skip = xp.where(skip, _shifted(xp, previous, 2, minus_inf), minus_inf)
                summed = _logsumexp3(previous, _shifted(xp, previous, 1, minus_inf), from_skip, xp)
                log_alpha[t] = xp.where(inside, summed + emissions[t], minus_inf)
            # a path ends on the last label or on the blank after it
            last = xp.maximum(input_lengths - 1, 0)
            final = log_alpha[last, xp.arange(batch)] if steps else xp.full((batch, extent), 0.0)
            at_end = xp.take_along_axis(final, (ends - 1)[:, None], axis=1)[:, 0]
            before_end = xp.take_along_axis(final, xp.maximum(ends - 2, 0)[:, None], axis=1)[:, 0]
            before_end = xp.where(target_lengths > 0, before_end, minus_inf)
            top = xp.maximum(at_end, before_end)
            shift = xp.where(xp.isfinite(top), top, 0)
            likelihood = xp.log(xp.exp(at_end - shift) + xp.exp(before_end - shift)) + shift
            # no frames: the empty target is emitted with certainty, any other never
            empty = xp.where(target_lengths == 0, 0.0, minus_inf).astype(dtype)
            losses = -xp.where(input_lengths == 0, empty, likelihood).astype(dtype, copy=False)
        ctx.log_alpha, ctx.losses, ctx.labels = log_alpha, losses, labels
        return _reduce(xp, losses, target_lengths, reduction, zero_infinity).astype(dtype)

    def infer(
        self, log_probs, targets, input_lengths, target_lengths, *, blank, reduction, zero_infinity
    ):
        check_ctc_shapes(log_probs, targets, input_lengths, target_lengths, blank)
        if reduction not in _REDUCTIONS:
            raise ArgumentError(f"[ctc_loss] reduction {reduction!r} is not valid")
        shape = (log_probs.shape[1],) if reduction == "none" else ()
        return ValueSpec(shape, log_probs.dtype, log_probs.device)

    def cost(
        self, log_probs, targets, input_lengths, target_lengths, *, blank, reduction, zero_infinity
    ):
        out = self.infer(
            log_probs,
            targets,
            input_lengths,
            target_lengths,
            blank=blank,
            reduction=reduction,
            zero_infinity=zero_infinity,
        )
        _, read, written = memory_cost((log_probs, targets, input_lengths, target_lengths), out)
        states = _state_count(log_probs, targets)
        return FLOPS_PER_STATE * states, read, written

    def backward(self, ctx, grad):
        log_probs, _, input_lengths, target_lengths = ctx.inputs
        grad_log_probs = CTC_LOSS_GRAD(
            grad,
            log_probs,
            ctx.tensor(ctx.log_alpha),
            ctx.tensor(ctx.losses),
            labels=ctx.labels,
            input_lengths=input_lengths.array,
            target_lengths=target_lengths.array,
            blank=ctx.attrs["blank"],
            reduction=ctx.attrs["reduction"],
            zero_infinity=ctx.attrs["zero_infinity"],
        )
        return grad_log_probs, None, None, None


class CTCLossGrad(Op):
    """The gradient of ``ctc_loss`` in log_probs, PyTorch's formula:
    ``(exp(lp[t, n, c]) - exp(log(sum_{s: l'(s) = c} alpha beta) + nll[n] - lp[t, n, c])) * g[n]``
    for frames t below the sample's input length, 0 after it.

    Inputs: grad (the loss's gradient: (N,) or ()), log_probs (T, N, C), log_alpha (T, N, L)
    and losses (N,) kept by the forward (constants). Attributes: ``labels`` (N, L) the extended
    labels, the lengths, ``blank``, ``reduction`` and ``zero_infinity``. ``exp(lp)`` is the
    log-softmax part PyTorch folds in: it cancels through ``log_softmax``'s backward, so only
    the composed gradient is the derivative. Not differentiable again (nor is PyTorch's).
    """

    name = "ctc_loss_grad"

    def forward(
        self,
        ctx,
        xp,
        grad,
        log_probs,
        log_alpha,
        losses,
        *,
        labels,
        input_lengths,
        target_lengths,
        blank,
        reduction,
        zero_infinity,
    ):
        steps, batch, classes = log_probs.shape
        dtype = np.result_type(log_probs.dtype, grad.dtype)
        extent = labels.shape[1]
        input_lengths = input_lengths.astype(np.int64)
        ends = 2 * target_lengths.astype(np.int64) + 1
        states = xp.arange(extent)[None, :]
        inside = states < ends[:, None]
        minus_inf = log_probs.dtype.type(-np.inf)
        emissions = log_probs[:, xp.arange(batch)[:, None], labels]  # (T, N, L)
        # reversed skip: from s to s + 2 when s + 2 may skip its predecessor
        skip_ahead = _backshifted(xp, _may_skip(xp, labels, blank), 2, False)
        log_beta = xp.full(emissions.shape, minus_inf, dtype=log_probs.dtype)
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            ending = inside & (states >= ends[:, None] - 2)  # the last label or the last blank
            following = xp.full((batch, extent), minus_inf, dtype=log_probs.dtype)
            for t in range(steps - 1, -1, -1):
                ahead = _backshifted(xp, following, 2, minus_inf)
                from_skip = xp.where(skip_ahead, ahead, minus_inf)
                summed = _logsumexp3(
                    following, _backshifted(xp, following, 1, minus_inf), from_skip, xp
                )
                recursed = xp.where(inside, summed + emissions[t], minus_inf)
                first = xp.where(ending, emissions[t], minus_inf)
                last_frame = (input_lengths - 1 == t)[:, None]
                log_beta[t] = xp.where(last_frame, first, recursed)
                following = log_beta[t]
            # log of sum of alpha * beta over the states of each class, shifted per (t, n)
            joint = log_alpha + log_beta  # (T, N, L)
            top = joint.max(axis=2, keepdims=True)
            shift = xp.where(xp.isfinite(top), top, 0)
            one_hot = (labels[:, :, None] == xp.arange(classes)[None, None, :]).astype(
                log_probs.dtype
            )  # (N, L, C)
            per_class = xp.matmul(xp.exp(joint - shift).transpose(1, 0, 2), one_hot)
            log_per_class = xp.log(per_class).transpose(1, 0, 2) + shift  # (T, N, C)
            gradient = xp.exp(log_probs) - xp.exp(log_per_class + losses[None, :, None] - log_probs)
        coefficient = xp.broadcast_to(grad * _scale(xp, target_lengths, reduction, dtype), (batch,))
        frames = xp.arange(steps)[:, None] < input_lengths[None, :]  # (T, N)
        live = frames[:, :, None]
        if zero_infinity:
            live = live & ~xp.isinf(losses)[None, :, None]
        out = xp.where(live, gradient * coefficient[None, :, None], 0)
        return out.astype(dtype, copy=False)

    def infer(self, grad, log_probs, log_alpha, losses, **attrs):
        return log_probs.with_dtype(np.result_type(log_probs.dtype, grad.dtype))

    def cost(self, grad, log_probs, log_alpha, losses, *, labels, **attrs):
        # the beta recursion, the class sums (a product per state and class) and the formula
        out = self.infer(grad, log_probs, log_alpha, losses)
        _, read, written = memory_cost((grad, log_probs, log_alpha, losses), out)
        states = log_alpha.numel
        flops = total((FLOPS_PER_STATE * states, states * log_probs.shape[2], 4 * out.numel))
        return flops, total((read, labels.nbytes)), written

    def backward(self, ctx, grad_of_output):
        raise BuildingAIError(
            "[ctc_loss_grad] ctc_loss has no second derivative (PyTorch's neither)",
            help="differentiate ctc_loss once: drop create_graph=True or the higher-order grad",
        )


CTC_LOSS, CTC_LOSS_GRAD = CTCLoss(), CTCLossGrad()


def _may_skip(xp, labels, blank: int):
    """(N, L) True where a path may jump from s - 2 straight to s: s holds a label that differs
    from the label two places before (a repeated label needs a blank between its copies)."""
    before = _shifted(xp, labels, 2, blank)
    return (labels != blank) & (labels != before)


def _scale(xp, target_lengths, reduction: str, dtype):
    """Each sample's share of the reduced loss: (N,)."""
    batch = target_lengths.shape[0]
    if reduction != "mean":
        return xp.ones(batch, dtype=dtype)
    return (1.0 / (xp.maximum(target_lengths, 1) * batch)).astype(dtype)


def _reduce(xp, losses, target_lengths, reduction: str, zero_infinity: bool):
    """The per-sample losses (N,) with infinities zeroed when asked, reduced as PyTorch does."""
    if zero_infinity:
        losses = xp.where(xp.isinf(losses), 0, losses).astype(losses.dtype)
    if reduction == "none":
        return losses
    if reduction == "sum":
        return xp.asarray(losses.sum())
    with np.errstate(invalid="ignore"):  # an empty batch: nan, as PyTorch
        return xp.asarray((losses / xp.maximum(target_lengths, 1).astype(losses.dtype)).mean())


def _state_count(log_probs, targets):
    """The (t, n, s) states of the alpha recursion: T N (2 S + 1) for padded targets, T (2 sum
    + N) for concatenated ones (each sample's own extended length)."""
    steps, batch, _ = log_probs.shape
    if len(targets.shape) == 2:
        return steps * batch * (2 * targets.shape[1] + 1)
    return steps * (2 * targets.shape[0] + batch)

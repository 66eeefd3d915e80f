"""Loss primitives: element-wise binary cross-entropy on probabilities, cross-entropy on
logits with class-index targets fused into one op, and the negative log-likelihood of
class-index targets.

``binary_cross_entropy`` is one op rather than a composite because its PyTorch semantics cannot be
composed faithfully from log and clamp: the logarithms are clamped to >= -100 (so a probability of
exactly 0 or 1 gives a finite loss), and the gradient is ``(x - t) / max(x (1 - x), 1e-12)``,
finite even there, where the chain rule through a clamped log would give 0 or nan.
"""

from __future__ import annotations

import numpy as np

from ..errors import ArgumentError, IndexingError, ShapeError
from .abstract import ValueSpec, broadcast_shapes, memory_cost, total
from .base import Op

LOG_FLOOR = -100.0  # PyTorch's lower bound on log(x) and log(1 - x)
GRAD_EPSILON = 1e-12  # PyTorch's lower bound on x (1 - x) in the gradient


def weighted_losses(ctx, xp, picked, index, valid, weight, dtype, *, axis, reduction):
    """The negative log-likelihoods ``-picked`` (log-probabilities at the targets: the input's
    shape with 1 along ``axis``), weighted by ``weight[target]`` (0 where ``valid`` is False)
    and reduced; keeps on ``ctx`` the target ``index`` and each sample's share of the result,
    ``scale``, which the gradient ops read."""
    if weight is None:  # the weight of each sample: 0 where ignored
        scale = valid.astype(dtype)
    else:
        scale = xp.where(valid, weight.astype(dtype, copy=False)[index.squeeze(axis)], 0)
        scale = scale.astype(dtype, copy=False)
    # an ignored sample's pick may be -inf (a log-probability of 0): it counts 0, not nan
    losses = xp.where(valid, picked.squeeze(axis), 0) * -scale
    if reduction == "none":
        out = losses
    else:
        out = losses.sum()
        if reduction == "mean":
            normalizer = scale.sum()
            with np.errstate(invalid="ignore", divide="ignore"):  # nothing counted: nan
                out = out / normalizer
                # ignored samples get no gradient even then (as with the composite form)
                scale = xp.where(valid, scale / normalizer, 0).astype(dtype, copy=False)
    ctx.index, ctx.scale = index, scale
    return xp.asarray(out, dtype=dtype)


def check_target_classes(op: str, x, target, axis: int, ignore_index: int) -> None:
    """Raise IndexingError unless every target is a class of x (0 .. C - 1, C = x's extent
    along ``axis``) or ``ignore_index``: a negative target would otherwise pick a class from
    the end, silently."""
    classes = x.shape[axis]
    if not target.size or (target.min() >= 0 and target.max() < classes):  # two reductions
        return
    bad = ((target < 0) | (target >= classes)) & (target != ignore_index)
    if bad.any():
        value = int(target[bad].reshape(-1)[0])
        raise IndexingError(
            f"[{op}] target class {value} is out of range for {classes} classes (input "
            f"{tuple(x.shape)}, target {tuple(target.shape)})",
            help=f"targets must lie in [0, {classes - 1}] or equal ignore_index "
            f"({ignore_index}); check the number of output classes of the model",
        )


def _check_class_target_shape(op: str, x, target, axis: int) -> tuple:
    """The target's shape: x's without the class axis."""
    expected = tuple(extent for k, extent in enumerate(x.shape) if k != axis % x.ndim)
    if tuple(target.shape) != expected:
        raise ShapeError(
            f"[{op}] target {target.shape} does not fit input {x.shape}: expected "
            f"{expected} (the input without the class axis {axis})",
            help="targets are class indices, one per sample",
        )
    return expected


class BinaryCrossEntropy(Op):
    """``-(t * max(log x, -100) + (1 - t) * max(log(1 - x), -100))``, element-wise.

    x (probabilities in [0, 1]) and t (targets in [0, 1]) have the same shape -> same shape.
    """

    name = "binary_cross_entropy"
    autocast = "float32"

    checks_values = True  # on every run of a traced graph too

    def check(self, x, t):
        if x.size and (x.min() < 0 or x.max() > 1):
            raise ArgumentError(
                f"[binary_cross_entropy] all elements of input should be between 0 and 1, got "
                f"values in [{float(x.min())}, {float(x.max())}] (input {tuple(x.shape)})",
                help="apply sigmoid first, or use binary_cross_entropy_with_logits on the raw "
                "scores (more accurate)",
            )

    def forward(self, ctx, xp, x, t):
        floor = x.dtype.type(LOG_FLOOR)
        with np.errstate(divide="ignore"):  # log(0) = -inf is clamped just below
            log_x = xp.maximum(xp.log(x), floor)
            log_not_x = xp.maximum(xp.log1p(-x), floor)
        return (t - 1) * log_not_x - t * log_x

    def infer(self, x, t):
        if not isinstance(t, ValueSpec):  # a Python number: weakly typed, x's dtype wins
            return x
        # forward's own expression on one-element stand-ins: NumPy's promotion of (t - 1) (bool
        # or integer targets become int64) and of the products with x's logarithms
        target, log = np.zeros(1, t.dtype), np.zeros(1, x.dtype)
        dtype = ((target - 1) * log - target * log).dtype
        return ValueSpec(broadcast_shapes(x.shape, t.shape), dtype, x.device)

    def cost(self, x, t):
        # two logarithms, two clamps, two products and two differences per element
        return memory_cost((x, t), self.infer(x, t), 8)

    def to_onnx(self, emit, inputs, output, attrs):
        # (t - 1) * max(log(1 - x), -100) - t * max(log x, -100), as forward computes it
        x, t = emit.operands(list(inputs), emit.dtypes.get(output))
        floor = emit.scalar(LOG_FLOOR, x)
        one = emit.scalar(1.0, x)
        log_x = emit.node("Max", [emit.node("Log", [x]), floor])
        log_not_x = emit.node("Max", [emit.node("Log", [emit.node("Sub", [one, x])]), floor])
        kept = emit.node("Mul", [emit.node("Sub", [t, one]), log_not_x])
        emit.node("Sub", [kept, emit.node("Mul", [t, log_x])], output)

    def backward(self, ctx, grad):
        x, t = ctx.inputs
        grad_x = grad * (x - t) / (x * (1 - x)).clamp(min=GRAD_EPSILON)
        grad_t = None
        if isinstance(t, type(x)) and t.requires_grad:
            grad_t = grad * ((-x).log1p().clamp(min=LOG_FLOOR) - x.log().clamp(min=LOG_FLOOR))
        return grad_x, grad_t


BINARY_CROSS_ENTROPY = BinaryCrossEntropy()


class CrossEntropy(Op):
    """``log_softmax`` and the negative log-likelihood of the target classes in one op.

    x: logits (C,), (N, C) or (N, C, d1, ...) with the classes along ``axis``; target: class
    indices shaped like x without that axis (entries equal to ``ignore_index`` count for nothing);
    weight (optional, (C,), a constant): per-class weights. -> per-sample losses (``"none"``) or
    their sum, or their weighted mean (``"mean"``: divided by the summed weights of the counted
    targets, nan when there are none). ``check`` rejects a target that is not a class. The
    gradient, ``(softmax(x) - one_hot(target)) * weight[target] / normalizer``, is the
    ``cross_entropy_grad`` op, built from the softmax the forward kept.
    """

    name = "cross_entropy"
    autocast = "float32"
    checks_values = True  # the targets' classes, on every run of a traced graph too

    def check(self, x, target, weight=None, *, axis, ignore_index, reduction):
        check_target_classes(self.name, x, target, axis, ignore_index)

    def forward(self, ctx, xp, x, target, weight=None, *, axis, ignore_index, reduction):
        valid = target != ignore_index
        index = xp.expand_dims(xp.where(valid, target, 0), axis)  # ignored samples: class 0
        shifted = x - x.max(axis=axis, keepdims=True)  # every exponential is at most 1
        probs = xp.exp(shifted)
        total = probs.sum(axis=axis, keepdims=True)  # at least 1: its log is finite
        probs /= total  # softmax(x), kept for the gradient
        log_probs = xp.take_along_axis(shifted, index, axis=axis) - xp.log(total)
        return self.weighted_losses(
            ctx, xp, log_probs, probs, index, valid, weight, axis=axis, reduction=reduction
        )

    def weighted_losses(self, ctx, xp, log_probs, probs, index, valid, weight, *, axis, reduction):
        """The losses ``-log_probs`` (log_softmax at the targets: x's shape with 1 along
        ``axis``) weighted and reduced; keeps on ``ctx`` what backward reads: the softmax
        ``probs``, the target ``index`` and each sample's share of the result, ``scale``."""
        ctx.probs = probs
        return weighted_losses(
            ctx, xp, log_probs, index, valid, weight, probs.dtype, axis=axis, reduction=reduction
        )

    def infer(self, x, target, weight=None, *, axis, ignore_index, reduction):
        expected = _check_class_target_shape("cross_entropy", x, target, axis)
        shape = expected if reduction == "none" else ()
        return ValueSpec(shape, x.dtype, x.device)

    def cost(self, x, target, weight=None, *, axis, ignore_index, reduction):
        # the softmax kept for backward (max, subtract, exp, sum, divide), the pick and the sum
        _, read, written = memory_cost(
            (x, target, weight),
            self.infer(
                x, target, weight, axis=axis, ignore_index=ignore_index, reduction=reduction
            ),
        )
        return 5 * x.numel, read, written

    def backward(self, ctx, grad):
        x = ctx.inputs[0]
        grad_x = CROSS_ENTROPY_GRAD(
            grad,
            x,
            ctx.tensor(ctx.probs),
            ctx.tensor(ctx.scale),
            index=ctx.index,
            axis=ctx.attrs["axis"],
        )
        return (grad_x,) + (None,) * (len(ctx.inputs) - 1)

    def to_onnx(self, emit, inputs, output, attrs):
        # LogSoftmax along the classes, then nll_loss's NegativeLogLikelihoodLoss
        _emit_nll_loss(emit, inputs, output, attrs, log_softmax_first=True)


class CrossEntropyGrad(Op):
    """The gradient of ``cross_entropy``: ``(p - one_hot) * expand(grad * scale)`` along ``axis``.

    Inputs: grad (the loss's gradient, () or the target's shape), x (the logits), probs
    (softmax(x) kept by the forward, a constant) and scale (per-sample weight over the
    normalizer, a constant); ``index``: the target classes, x's shape with 1 along ``axis``. Linear
    in grad; the gradient in x goes through softmax written with Tensor ops, so derivatives of
    every order are exact.
    """

    name = "cross_entropy_grad"

    def forward(self, ctx, xp, grad, x, probs, scale, *, index, axis):
        coefficient = xp.expand_dims(grad * scale, axis)  # x's shape with 1 along the axis
        out = probs * coefficient
        at_target = xp.take_along_axis(out, index, axis=axis)
        at_target -= coefficient  # the one-hot part, at each sample's target class
        xp.put_along_axis(out, index, at_target, axis=axis)
        return out

    def infer(self, grad, x, probs, scale, *, index, axis):
        return probs.with_dtype(np.result_type(probs.dtype, grad.dtype, scale.dtype))

    def cost(self, grad, x, probs, scale, *, index, axis):
        # a product per element, a subtraction per sample; x is not read, only the kept softmax
        out = self.infer(grad, x, probs, scale, index=index, axis=axis)
        _, read, written = memory_cost((grad, probs, scale), out)
        return total((out.numel, scale.numel)), total((read, index.nbytes)), written

    def backward(self, ctx, grad_of_output):
        grad, x, _, scale = ctx.inputs
        axis, index = ctx.attrs["axis"], ctx.attrs["index"]
        probs = x.softmax(axis=axis)
        grad_grad = grad_x = None
        if grad.requires_grad:
            # sum over classes of grad_of_output * (p - one_hot), times scale
            along = (grad_of_output * probs).sum(axis=axis) - grad_of_output.take_along_axis(
                ctx.tensor(index), axis=axis
            ).squeeze(axis)
            grad_grad = along * scale
        if x.requires_grad:
            # the transposed Jacobian of softmax applied to v = grad_of_output * coefficient
            v = grad_of_output * (grad * scale).unsqueeze(axis)
            grad_x = probs * (v - (probs * v).sum(axis=axis, keepdims=True))
        return grad_grad, grad_x, None, None


CROSS_ENTROPY, CROSS_ENTROPY_GRAD = CrossEntropy(), CrossEntropyGrad()


class NLLLoss(Op):
    """The negative log-likelihood of the target classes: ``-weight[t] * x[.., t, ..]``.

    x: log-probabilities (C,), (N, C) or (N, C, d1, ...) with the classes along ``axis``;
    target: class indices shaped like x without that axis (entries equal to ``ignore_index``
    count for nothing); weight (optional, (C,), a constant): per-class weights. -> per-sample
    losses (``"none"``) or their sum, or their weighted mean (``"mean"``: divided by the summed
    weights of the counted targets, nan when there are none). ``check`` rejects a target that
    is not a class. The target is an input, not an attribute, so a traced graph picks the
    classes of each call's targets. The gradient, ``-weight[target] / normalizer`` at each target class and
    0 elsewhere, is the ``nll_loss_grad`` op.
    """

    name = "nll_loss"
    autocast = "float32"
    checks_values = True  # the targets' classes, on every run of a traced graph too

    def check(self, x, target, weight=None, *, axis, ignore_index, reduction):
        check_target_classes(self.name, x, target, axis, ignore_index)

    def forward(self, ctx, xp, x, target, weight=None, *, axis, ignore_index, reduction):
        valid = target != ignore_index
        index = xp.expand_dims(xp.where(valid, target, 0), axis)  # ignored samples: class 0
        picked = xp.take_along_axis(x, index, axis=axis)
        return weighted_losses(
            ctx, xp, picked, index, valid, weight, x.dtype, axis=axis, reduction=reduction
        )

    def infer(self, x, target, weight=None, *, axis, ignore_index, reduction):
        expected = _check_class_target_shape("nll_loss", x, target, axis)
        return ValueSpec(expected if reduction == "none" else (), x.dtype, x.device)

    def cost(self, x, target, weight=None, *, axis, ignore_index, reduction):
        # per sample: a comparison, a pick, a weight and a product, then the sum; of x only
        # the picked values are read
        out = self.infer(
            x, target, weight, axis=axis, ignore_index=ignore_index, reduction=reduction
        )
        picked = target.with_dtype(x.dtype)
        _, read, written = memory_cost((target, picked, weight), out)
        return 4 * target.numel, read, written

    def backward(self, ctx, grad):
        x = ctx.inputs[0]
        grad_x = NLL_LOSS_GRAD(
            grad, x, ctx.tensor(ctx.scale), index=ctx.index, axis=ctx.attrs["axis"]
        )
        return (grad_x,) + (None,) * (len(ctx.inputs) - 1)

    def to_onnx(self, emit, inputs, output, attrs):
        _emit_nll_loss(emit, inputs, output, attrs, log_softmax_first=False)


class NLLLossGrad(Op):
    """The gradient of ``nll_loss``: zeros shaped like x, with ``-grad * scale`` at each
    sample's target class along ``axis``.

    Inputs: grad (the loss's gradient, () or the target's shape), x (the log-probabilities,
    read for their shape and dtype only) and scale (per-sample weight over the normalizer, a
    constant); ``index``: the target classes, x's shape with 1 along ``axis``. Linear in grad
    and constant in x, so its own gradient is a pick of the incoming gradient.
    """

    name = "nll_loss_grad"

    def forward(self, ctx, xp, grad, x, scale, *, index, axis):
        dtype = np.result_type(x.dtype, grad.dtype, scale.dtype)
        out = xp.zeros(x.shape, dtype=dtype)
        at_target = xp.expand_dims(-(grad * scale), axis).astype(dtype, copy=False)
        xp.put_along_axis(out, index, at_target, axis=axis)
        return out

    def infer(self, grad, x, scale, *, index, axis):
        return x.with_dtype(np.result_type(x.dtype, grad.dtype, scale.dtype))

    def cost(self, grad, x, scale, *, index, axis):
        # zeros written over x's shape, a product and a store per sample; x is not read
        out = self.infer(grad, x, scale, index=index, axis=axis)
        _, read, written = memory_cost((grad, scale), out)
        return scale.numel, total((read, index.nbytes)), written

    def backward(self, ctx, grad_of_output):
        grad, _, scale = ctx.inputs
        axis, index = ctx.attrs["axis"], ctx.attrs["index"]
        grad_grad = None
        if grad.requires_grad:
            picked = grad_of_output.take_along_axis(ctx.tensor(index), axis=axis).squeeze(axis)
            grad_grad = -(picked * scale)
        return grad_grad, None, None


NLL_LOSS, NLL_LOSS_GRAD = NLLLoss(), NLLLossGrad()


def _emit_nll_loss(emit, inputs, output, attrs, log_softmax_first: bool) -> None:
    """ONNX NegativeLogLikelihoodLoss for (x, target[, weight]) -> output: it takes the same
    ignore_index, per-class weights and reductions (a mean weighted over counted targets).
    ``log_softmax_first``: x holds logits (cross_entropy), else log-probabilities (nll_loss)."""
    x, target, *weight = inputs
    single = emit.rank(x) == 1  # one sample (C,): a batch of one, squeezed at the end
    if single:
        x, target = emit.unsqueeze(x, [0]), emit.unsqueeze(target, [0])
    log_probs = emit.node("LogSoftmax", [x], axis=1) if log_softmax_first else x
    if emit.dtype(target) != np.int64:
        target = emit.cast(target, np.int64)
    if weight and emit.dtype(weight[0]) != emit.dtype(x):
        weight = [emit.cast(weight[0], emit.dtype(x))]
    reduction = attrs["reduction"]
    squeeze = single and reduction == "none"
    losses = emit.node(
        "NegativeLogLikelihoodLoss",
        [log_probs, target, *weight],
        None if squeeze else output,
        reduction=reduction,
        ignore_index=int(attrs["ignore_index"]),
    )
    if squeeze:
        emit.squeeze(losses, [0], output)

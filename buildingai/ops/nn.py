"""Neural-network primitive ops: softmax, log_softmax, dropout, embedding.

These are fat primitives: each is one op (one dispatch, one pass over memory where possible)
instead of a chain of small ones, because they sit on every training step's hot path. Their
backward rules are still written with differentiable Tensor ops; the gradients of softmax and
log_softmax are ops of their own (``softmax_grad``, ``log_softmax_grad``), one dispatch each.
"""

from __future__ import annotations

import numpy as np

from ..errors import DTypeError, IndexingError, ShapeError
from .abstract import ValueSpec, bytes_of, memory_cost
from .base import Op


def _check_floating(name: str, x) -> None:
    if x.dtype.kind not in "fV":  # "V": ml_dtypes' bfloat16
        raise DTypeError(
            f"[{name}] expects a floating-point tensor, got {x.dtype} of shape {tuple(x.shape)}",
            help="convert first, e.g. x.astype('float32')",
        )


def _shifted(xp, x, axis: int):
    """``x - max(x)`` along ``axis``: every exponential of it is at most exp(0) = 1, so none
    overflows, and the sum of them is at least 1. (NumPy's error state: CuPy warns of nothing.)"""
    with np.errstate(invalid="ignore"):  # a row of -inf only: -inf - (-inf) is nan, as in PyTorch
        return x - x.max(axis=axis, keepdims=True)


class Softmax(Op):
    """``exp(x) / sum(exp(x))`` along ``axis``, computed as ``exp(x - max)`` so no exponent
    overflows. Saves only its output: the gradient is ``out * (g - sum(g * out))``."""

    name = "softmax"
    autocast = "float32"
    save_inputs, save_output = False, True

    def check(self, x, *, axis):
        _check_floating(self.name, x)

    def infer(self, x, *, axis):
        return x

    def cost(self, x, *, axis):
        return memory_cost((x,), x, 5)  # max, subtract, exp, sum, divide

    def forward(self, ctx, xp, x, *, axis):
        if x.size == 0:
            return xp.empty_like(x)
        exps = xp.exp(_shifted(xp, x, axis))
        exps /= exps.sum(axis=axis, keepdims=True)
        return exps

    def backward(self, ctx, grad):
        return (SOFTMAX_GRAD(grad, ctx.output, axis=ctx.attrs["axis"]),)

    def to_onnx(self, emit, inputs, output, attrs):
        emit.node("Softmax", inputs, output, axis=int(attrs["axis"]))


class _RowGradient(Op):
    """What softmax_grad and log_softmax_grad share: (g, out) -> an array of out's shape, made
    along ``axis`` from the upstream gradient g and the forward's output."""

    save_inputs = True

    def infer(self, grad, out, *, axis):
        return out.with_dtype(np.result_type(grad.dtype, out.dtype))

    def cost(self, grad, out, *, axis):
        return memory_cost((grad, out), self.infer(grad, out, axis=axis), 4)  # 4 per element


class SoftmaxGrad(_RowGradient):
    """The gradient of ``softmax`` given its output: ``out * (g - sum(g * out))`` along
    ``axis``; one op instead of four.

    Inputs: g (upstream gradient) and out (the softmax output, one shape). Its Jacobian in g is
    symmetric, so the gradient there is this op again; the gradient in ``out`` is
    ``G * (g - sum(g * out)) - g * sum(G * out)``.
    """

    name = "softmax_grad"

    def forward(self, ctx, xp, grad, out, *, axis):
        projection = (grad * out).sum(axis=axis, keepdims=True)  # g's component along out
        return (grad - projection) * out

    def backward(self, ctx, grad_of_result):
        grad, out = ctx.inputs
        axis = ctx.attrs["axis"]
        grad_grad = grad_out = None
        if grad.requires_grad:
            grad_grad = SOFTMAX_GRAD(grad_of_result, out, axis=axis)
        if out.requires_grad:
            grad_out = softmax_grad_out_gradient(grad_of_result, grad, out, axis)
        return grad_grad, grad_out


def softmax_grad_out_gradient(grad_of_result, grad, out, axis: int):
    """The gradient of ``softmax_grad(grad, out)`` in ``out``, Tensors all:
    ``G * (g - sum(g * out)) - g * sum(G * out)`` along ``axis``, G the result's gradient."""
    grad_out = grad_of_result * (grad - (grad * out).sum(axis=axis, keepdims=True))
    return grad_out - grad * (grad_of_result * out).sum(axis=axis, keepdims=True)


class LogSoftmax(Op):
    """``x - log(sum(exp(x)))`` along ``axis``, with the maximum subtracted first for stability.
    Saves only its output: the gradient is ``g - exp(out) * sum(g)``."""

    name = "log_softmax"
    autocast = "float32"
    save_inputs, save_output = False, True

    def check(self, x, *, axis):
        _check_floating(self.name, x)

    def infer(self, x, *, axis):
        return x

    def cost(self, x, *, axis):
        return memory_cost((x,), x, 5)  # max, subtract, exp, sum (and a log per row), subtract

    def forward(self, ctx, xp, x, *, axis):
        if x.size == 0:
            return xp.empty_like(x)
        shifted = _shifted(xp, x, axis)
        # the sum is >= 1 (its largest term is exp(0)), so its log is finite
        shifted -= xp.log(xp.exp(shifted).sum(axis=axis, keepdims=True))
        return shifted

    def backward(self, ctx, grad):
        return (LOG_SOFTMAX_GRAD(grad, ctx.output, axis=ctx.attrs["axis"]),)

    def to_onnx(self, emit, inputs, output, attrs):
        emit.node("LogSoftmax", inputs, output, axis=int(attrs["axis"]))


class LogSoftmaxGrad(_RowGradient):
    """The gradient of ``log_softmax`` given its output: ``g - exp(out) * sum(g)`` along
    ``axis``; one op instead of four.

    Inputs: g (upstream gradient) and out (the log_softmax output, one shape). Its gradient in g
    is ``G - sum(G * exp(out))``, in out ``-G * exp(out) * sum(g)``, written with Tensor ops.
    """

    name = "log_softmax_grad"

    def forward(self, ctx, xp, grad, out, *, axis):
        if grad.shape != out.shape:  # a broadcast gradient sums as the full one it stands for
            grad = xp.broadcast_to(grad, out.shape)
        return grad - xp.exp(out) * grad.sum(axis=axis, keepdims=True)

    def backward(self, ctx, grad_of_result):
        grad, out = ctx.inputs
        axis = ctx.attrs["axis"]
        grad_grad = grad_out = None
        probs = out.exp()
        if grad.requires_grad:
            grad_grad = grad_of_result - (grad_of_result * probs).sum(axis=axis, keepdims=True)
        if out.requires_grad:
            grad_out = -grad_of_result * probs * grad.sum(axis=axis, keepdims=True)
        return grad_grad, grad_out


class Dropout(Op):
    """Inverted dropout with an explicit mask: ``where(mask, x * scale, 0)``.

    ``mask`` (bool, broadcastable to ``x``) is an input, so tracers and users can see it; ``scale``
    is ``1 / (1 - p)`` (0 when every element is dropped). The op is linear in ``x``, so its
    backward is the same op applied to the gradient.
    """

    name = "dropout"

    def check(self, x, mask, *, scale):
        if mask.dtype.kind != "b":
            raise DTypeError(
                f"[dropout] mask must be bool, got {mask.dtype}",
                help="pass a boolean tensor: True keeps an element, False drops it",
            )
        if mask.ndim > x.ndim or any(
            m != 1 and m != e for m, e in zip(mask.shape[::-1], x.shape[::-1])
        ):
            raise ShapeError(
                f"[dropout] mask {tuple(mask.shape)} does not broadcast to input {tuple(x.shape)}",
                help="the mask must have the input's shape, or 1 in dimensions shared by a "
                "whole slice (e.g. (N, C, 1, 1) drops whole channels)",
            )

    def forward(self, ctx, xp, x, mask, *, scale):
        if scale == 0.0:  # p == 1: everything is dropped
            return xp.zeros_like(x)
        # where(), not x * mask: a dropped element is exactly 0, even where x holds inf or nan
        return xp.where(mask, x * x.dtype.type(scale), x.dtype.type(0))

    def infer(self, x, mask, *, scale):
        return x

    def cost(self, x, mask, *, scale):
        return memory_cost((x, mask), x, 2)  # a product and a select

    def backward(self, ctx, grad):
        x, mask = ctx.inputs
        return DROPOUT(grad, mask, scale=ctx.attrs["scale"]), None

    def to_onnx(self, emit, inputs, output, attrs):
        # the mask is an input, so the exported node is the formula itself, not ONNX's Dropout
        x, mask = inputs
        scaled = emit.node("Mul", [x, emit.scalar(attrs["scale"], x)])
        emit.node("Where", [mask, scaled, emit.scalar(0, x)], output)


class Embedding(Op):
    """Row lookup: ``weight[indices]``.

    indices: integer array of any shape, weight: (num_embeddings, dim) -> indices.shape + (dim,).
    The gradient scatters rows back (``embedding_grad``), adding where an index repeats.
    """

    name = "embedding"
    checks_values = True  # the indices' range, on every run of a traced graph too

    def check(self, indices, weight, *, padding_idx):
        if indices.dtype.kind not in "iu":
            raise DTypeError(
                f"[embedding] indices must be integers, got {indices.dtype}",
                help="convert them, e.g. indices.astype('int64')",
            )
        if weight.ndim != 2:
            raise ShapeError(
                f"[embedding] weight must be 2-D (num_embeddings, embedding_dim), got "
                f"{tuple(weight.shape)}"
            )
        _check_range("embedding", indices, weight.shape[0])

    def forward(self, ctx, xp, indices, weight, *, padding_idx):
        return xp.take(weight, indices, axis=0)

    def infer(self, indices, weight, *, padding_idx):
        return ValueSpec((*indices.shape, weight.shape[1]), weight.dtype, weight.device)

    def cost(self, indices, weight, *, padding_idx):
        # no arithmetic: the indices and only the rows they pick are read
        out = self.infer(indices, weight, padding_idx=padding_idx)
        return 0, bytes_of(indices, out), out.nbytes

    def backward(self, ctx, grad):
        indices, weight = ctx.inputs
        return None, EMBEDDING_GRAD(
            grad,
            indices,
            num_embeddings=weight.shape[0],
            padding_idx=ctx.attrs["padding_idx"],
        )

    def to_onnx(self, emit, inputs, output, attrs):
        indices, weight = inputs
        emit.node("Gather", [weight, indices], output, axis=0)


class EmbeddingGrad(Op):
    """The adjoint of ``embedding``: ``out = zeros(num_embeddings, dim)``, then every row of
    ``grad`` is added into ``out[index]``; the ``padding_idx`` row stays zero.

    grad: indices.shape + (dim,), indices: any shape -> (num_embeddings, dim)
    """

    name = "embedding_grad"

    def forward(self, ctx, xp, grad, indices, *, num_embeddings, padding_idx):
        dim = grad.shape[-1]
        rows = grad.reshape(-1, dim)
        # int64 cell numbers: row * dim overflows int32 for tables past 2**31 elements
        flat = indices.reshape(-1).astype("int64", copy=False)
        # One bincount over (row, column) cells sums repeated rows in one pass, unlike add.at.
        # When the table is larger than the batch, count over the distinct rows only, so the
        # work scales with the batch, not the vocabulary.
        if num_embeddings > flat.size:
            rows_used, flat = xp.unique(flat, return_inverse=True)
            flat = flat.reshape(-1)
            target = rows_used.size
        else:
            rows_used, target = None, num_embeddings
        cells = (flat[:, None] * dim + xp.arange(dim)).reshape(-1)
        sums = xp.bincount(cells, weights=rows.reshape(-1), minlength=target * dim)
        sums = sums.reshape(target, dim).astype(grad.dtype, copy=False)
        if rows_used is None:
            out = sums
        else:
            out = xp.zeros((num_embeddings, dim), dtype=grad.dtype)
            out[rows_used] = sums
        if padding_idx is not None:
            out[padding_idx] = 0
        return out

    def infer(self, grad, indices, *, num_embeddings, padding_idx):
        return grad.with_shape((num_embeddings, grad.shape[-1]))

    def cost(self, grad, indices, *, num_embeddings, padding_idx):
        # one addition per gradient element, into a table that is written whole
        out = self.infer(grad, indices, num_embeddings=num_embeddings, padding_idx=padding_idx)
        return grad.numel, bytes_of(grad, indices), out.nbytes

    def backward(self, ctx, grad):
        _, indices = ctx.inputs
        rows = EMBEDDING(indices, grad, padding_idx=None)
        padding_idx = ctx.attrs["padding_idx"]
        if padding_idx is not None:
            # rows at padding_idx received no gradient, so they contribute nothing here either
            keep = (indices != padding_idx).reshape(tuple(indices.shape) + (1,))
            rows = rows.where(keep, 0.0)
        return rows, None


def _check_range(name: str, indices, count: int) -> None:
    if indices.size == 0:
        return
    low, high = int(indices.min()), int(indices.max())
    if low < 0 or high >= count:
        bad = low if low < 0 else high
        raise IndexingError(
            f"[{name}] index {bad} is out of range for {count} embeddings "
            f"(indices of shape {tuple(indices.shape)})",
            help=f"indices must lie in [0, {count - 1}]; check the vocabulary size or the "
            "tokenizer",
        )


SOFTMAX, SOFTMAX_GRAD = Softmax(), SoftmaxGrad()
LOG_SOFTMAX, LOG_SOFTMAX_GRAD, DROPOUT = LogSoftmax(), LogSoftmaxGrad(), Dropout()
EMBEDDING, EMBEDDING_GRAD = Embedding(), EmbeddingGrad()

"""Scaled dot-product attention as one op: ``softmax(q k^T * scale [causal mask]) v``.

A fat primitive: composed of ops it costs six dispatches and several passes over the (L, S)
scores each way, while one op lets an accelerated kernel keep each item's scores in cache and
skip the keys a causal mask hides. ``nn.functional.scaled_dot_product_attention`` calls it where
no other mask, dropout or broadcast batch is asked for, and composes the general case.

- ``attention`` (q, k, v) -> out: the forward; it keeps its weights for the backward.
- ``attention_weights`` (weights, q, k) -> weights: those kept weights as a function of q and k
  (as ``lstm_activations``), so second derivatives see how they depend on the inputs.
- ``attention_grad`` (grad, q, k, v, weights) -> the three input gradients, packed: the fused
  first-order gradient, one op, with a backward of its own in Tensor ops.

Shapes: q (*batch, L, E), k (*batch, S, E), v (*batch, S, Ev), one batch shape for all three;
out (*batch, L, Ev), weights (*batch, L, S). ``causal``: query i attends to keys 0..i (top-left
aligned, as ``torch.ones(L, S).tril()``), so every row keeps key 0 and none is fully masked.
"""

from __future__ import annotations

import numpy as np

from ..errors import DTypeError, ShapeError
from .abstract import ValueSpec, bytes_of
from .base import Op
from .linalg import MATMUL, matmul_array
from .nn import SOFTMAX_GRAD, softmax_grad_out_gradient


def attention_weights_array(xp, q, k, *, scale, causal):
    """``softmax(q k^T * scale)`` over the keys, keys after query i masked out when ``causal``:
    q (..., L, E), k (..., S, E) -> (..., L, S). float16 and bfloat16 scores take their
    softmax in float32, as the softmax op does under autocast, and return to their dtype."""
    scores = matmul_array(xp, q * scale, k.swapaxes(-1, -2))
    dtype = scores.dtype
    if dtype.itemsize < 4:
        scores = scores.astype(np.float32)
    if causal:
        length, source = scores.shape[-2:]
        scores = xp.where(xp.tri(length, source, dtype=bool), scores, -xp.inf)
    scores -= scores.max(axis=-1, keepdims=True)
    weights = xp.exp(scores, out=scores)
    weights /= weights.sum(axis=-1, keepdims=True)
    return weights.astype(dtype, copy=False)


def attention_gradients_array(xp, grad, q, k, v, weights, *, scale):
    """``attention_grad``'s formulas: (dq, dk, dv) packed (``packed_gradients``) from grad
    (..., L, Ev), q, k, v and the forward's weights (..., L, S)."""
    grad_v = matmul_array(xp, weights.swapaxes(-1, -2), grad)
    grad_weights = matmul_array(xp, grad, v.swapaxes(-1, -2))
    grad_weights -= (grad_weights * weights).sum(axis=-1, keepdims=True)
    grad_scores = grad_weights * weights
    grad_q = matmul_array(xp, grad_scores, k) * scale
    grad_k = matmul_array(xp, grad_scores.swapaxes(-1, -2), q) * scale
    return packed_gradients(xp, grad_q, grad_k, grad_v)


def items(shape) -> int:
    """The number of (L, E) matrices in a (*batch, L, E) shape: the batch's product."""
    count = 1
    for extent in shape[:-2]:
        count *= extent
    return count


def heads(shape) -> int:
    """The heads H of a (*batch, H, L, E) shape: its axis -3 from rank 4 on, else one."""
    return shape[-3] if len(shape) >= 4 else 1


def entries(shape) -> int:
    """The batch entries of a (*batch, H, L, E) shape, each holding H heads: the product of
    the batch before the heads (a 3-D (N, L, E) shape: N entries of one head)."""
    count = 1
    for extent in shape[:-3] if len(shape) >= 4 else shape[:-2]:
        count *= extent
    return count


def entry_size(shape):
    """The elements of one batch entry of a (*batch, H, L, E) shape: H * L * E."""
    return heads(shape) * shape[-2] * shape[-1]


def packed_gradients(xp, dq, dk, dv):
    """dq (*batch, H, L, E), dk (*batch, H, S, E), dv (*batch, H, S, Ev) as one (B, H*L*E +
    H*S*E + H*S*Ev) array, B the batch entries: row b holds entry b's dq in (L, H, E) order,
    then dk in (S, H, E) and dv in (S, H, Ev) order. With the heads inside each position, the
    gradients' (*batch, L, H, E) views, which a model's head merge reads, are contiguous."""
    count = entries(dq.shape)
    parts = [_heads_inside(part).reshape(count, entry_size(part.shape)) for part in (dq, dk, dv)]
    return xp.concatenate(parts, axis=1)


def _heads_inside(array):
    """(*batch, H, L, E) as (*batch, L, H, E) (a view); 3-D and 2-D arrays as they are."""
    return array.swapaxes(-2, -3) if array.ndim >= 4 else array


def unpacked_gradients(packed, q_shape, k_shape, v_shape) -> tuple:
    """``packed_gradients``'s three parts again, as views of ``packed`` (a Tensor) shaped like
    q, k and v."""
    parts, start = [], 0
    for shape in (q_shape, k_shape, v_shape):
        stop = start + entry_size(shape)
        part = packed[:, start:stop]
        if len(shape) >= 4:  # stored (*batch, L, H, E): back to (*batch, H, L, E)
            stored = (*shape[:-3], shape[-2], shape[-3], shape[-1])
            parts.append(part.reshape(stored).swapaxes(-2, -3))
        else:
            parts.append(part.reshape(tuple(shape)))
        start = stop
    return tuple(parts)


class Attention(Op):
    """``softmax(q k^T * scale) v`` over the keys, with a causal mask when asked. Saves its
    inputs and the weights (as ``ctx.weights``); attributes ``scale`` (float), ``causal``."""

    name = "attention"
    autocast = "low"

    def check(self, q, k, v, *, scale, causal):
        _check_operands(self.name, q, k, v)
        if k.shape[-2] == 0:
            raise ShapeError(
                f"[{self.name}] got k {tuple(k.shape)}: no keys to attend to (S = 0)",
                help="scaled_dot_product_attention composes this case from other ops",
            )

    def forward(self, ctx, xp, q, k, v, *, scale, causal):
        weights = attention_weights_array(xp, q, k, scale=scale, causal=causal)
        ctx.weights = weights
        return matmul_array(xp, weights, v)

    def infer(self, q, k, v, *, scale, causal):
        _check_operands(self.name, q, k, v)
        dtype = np.result_type(q.dtype, k.dtype, v.dtype)
        return ValueSpec((*q.shape[:-1], v.shape[-1]), dtype, q.device)

    def cost(self, q, k, v, *, scale, causal):
        out = self.infer(q, k, v, scale=scale, causal=causal)
        count, length, source = items(q.shape), q.shape[-2], k.shape[-2]
        scores = count * length * source
        # two products, and the softmax's subtract, exp, sum and divide on every score
        flops = 2 * scores * (q.shape[-1] + v.shape[-1]) + 4 * scores
        return flops, bytes_of(q, k, v), out.nbytes + scores * out.dtype.itemsize

    def backward(self, ctx, grad):
        q, k, v = ctx.inputs
        attrs = ctx.attrs
        weights = ATTENTION_WEIGHTS(ctx.tensor(ctx.weights), q, k, **attrs)
        packed = ATTENTION_GRAD(grad, q, k, v, weights, **attrs)
        grads = unpacked_gradients(packed, q.shape, k.shape, v.shape)
        return tuple(g if x.requires_grad else None for g, x in zip(grads, (q, k, v)))

    def to_onnx(self, emit, inputs, output, attrs):
        q, k, v = inputs
        rank = emit.rank(q)
        scaled = emit.node("Mul", [q, emit.scalar(attrs["scale"], q)])
        keys = emit.node("Transpose", [k], perm=[*range(rank - 2), rank - 1, rank - 2])
        scores = emit.node("MatMul", [scaled, keys])
        if attrs["causal"]:
            extents = emit.node("Shape", [scores], dtype=np.int64, start=-2)
            ones = emit.node(
                "ConstantOfShape",
                [extents],
                dtype=np.bool_,
                value=emit.helper.make_tensor("one", emit.onnx.TensorProto.BOOL, [1], [True]),
            )
            allowed = emit.node("Trilu", [ones], dtype=np.bool_, upper=0)
            scores = emit.node("Where", [allowed, scores, emit.scalar(-np.inf, q)])
        weights = emit.node("Softmax", [scores], axis=-1)
        emit.node("MatMul", [weights, v], output)


class AttentionWeights(Op):
    """The weights ``attention``'s forward computed, given as the value they have: inputs
    weights (*batch, L, S) (that value), q, k -> weights. The output is the first input itself;
    the backward is the softmax's and the scores' product's, in Tensor ops, so a second
    derivative of ``attention`` sees how its weights depend on q and k."""

    name = "attention_weights"
    save_inputs, save_output = True, True
    view = True  # the output is its first input

    def forward(self, ctx, xp, weights, q, k, *, scale, causal):
        return weights

    def infer(self, weights, q, k, *, scale, causal):
        return weights

    def cost(self, weights, q, k, *, scale, causal):
        return 0, 0, 0  # nothing computed: the forward's values

    def backward(self, ctx, grad):
        _, q, k = ctx.inputs
        weights = ctx.output
        scale = ctx.attrs["scale"]
        # masked keys have weight 0, so the softmax's gradient is 0 there: no mask needed
        grad_scores = SOFTMAX_GRAD(grad, weights, axis=weights.ndim - 1) * scale
        grad_q = MATMUL(grad_scores, k) if q.requires_grad else None
        grad_k = MATMUL(grad_scores, q, transpose_a=True) if k.requires_grad else None
        return None, grad_q, grad_k


class AttentionGrad(Op):
    """The gradients of ``attention`` in its three inputs, one op: inputs grad (*batch, L, Ev),
    q, k, v and the forward's weights P (*batch, L, S) -> (B, H*(L*E + S*E + S*Ev)), each batch
    entry's dq, dk and dv with their heads inside (``packed_gradients``; ``unpacked_gradients``
    gives them back). With dp = grad v^T and ds = P (dp - rowsum(dp P)), the softmax's gradient:

        dq = scale ds k,   dk = scale ds^T q,   dv = P^T grad

    ``causal`` changes no formula (masked weights are 0); a kernel may skip those entries.
    """

    name = "attention_grad"

    def forward(self, ctx, xp, grad, q, k, v, weights, *, scale, causal):
        return attention_gradients_array(xp, grad, q, k, v, weights, scale=scale)

    def infer(self, grad, q, k, v, weights, *, scale, causal):
        width = entry_size(q.shape) + entry_size(k.shape) + entry_size(v.shape)
        dtype = np.result_type(grad.dtype, q.dtype, k.dtype, v.dtype, weights.dtype)
        return ValueSpec((entries(q.shape), width), dtype, q.device)

    def cost(self, grad, q, k, v, weights, *, scale, causal):
        out = self.infer(grad, q, k, v, weights, scale=scale, causal=causal)
        scores = items(q.shape) * q.shape[-2] * k.shape[-2]
        # four products, and the softmax's gradient on every score
        flops = 2 * scores * (2 * q.shape[-1] + 2 * v.shape[-1]) + 4 * scores
        return flops, bytes_of(grad, q, k, v, weights), out.nbytes

    def backward(self, ctx, grad_packed):
        # the vector-Jacobian product of forward's formulas, read from the last one to the first
        grad, q, k, v, weights = ctx.inputs
        scale = ctx.attrs["scale"]
        axis = weights.ndim - 1
        grad_dq, grad_dk, grad_dv = unpacked_gradients(grad_packed, q.shape, k.shape, v.shape)
        grad_weights = MATMUL(grad, v, transpose_b=True)  # dp, again
        grad_scores = SOFTMAX_GRAD(grad_weights, weights, axis=axis)  # ds, again
        # dq = scale ds k and dk = scale ds^T q
        g_scores = MATMUL(grad_dq, k, transpose_b=True) + MATMUL(q, grad_dk, transpose_b=True)
        g_scores = g_scores * scale
        g_q = MATMUL(grad_scores, grad_dk) * scale
        g_k = MATMUL(grad_scores, grad_dq, transpose_a=True) * scale
        # ds = softmax_grad(dp, P): its backward, SoftmaxGrad's
        g_dp = SOFTMAX_GRAD(g_scores, weights, axis=axis)
        g_weights = softmax_grad_out_gradient(g_scores, grad_weights, weights, axis)
        # dp = grad v^T and dv = P^T grad
        g_grad = MATMUL(g_dp, v) + MATMUL(weights, grad_dv)
        g_v = MATMUL(g_dp, grad, transpose_a=True)
        g_weights = g_weights + MATMUL(grad, grad_dv, transpose_b=True)
        return g_grad, g_q, g_k, g_v, g_weights


def _check_operands(name: str, q, k, v) -> None:
    """q (*batch, L, E), k (*batch, S, E), v (*batch, S, Ev) of floats, one batch shape."""
    shapes = f"q {tuple(q.shape)}, k {tuple(k.shape)}, v {tuple(v.shape)}"
    if q.ndim < 2 or k.ndim != q.ndim or v.ndim != q.ndim:
        raise ShapeError(
            f"[{name}] needs q, k, v of one rank >= 2 (*batch, length, features), got {shapes}",
            help="scaled_dot_product_attention broadcasts other batch shapes before this op",
        )
    if (
        tuple(k.shape[:-2]) != tuple(q.shape[:-2])
        or tuple(v.shape[:-2]) != tuple(q.shape[:-2])
        or k.shape[-1] != q.shape[-1]
        or v.shape[-2] != k.shape[-2]
    ):
        raise ShapeError(
            f"[{name}] got {shapes}: expected (*batch, L, E), (*batch, S, E), (*batch, S, Ev)",
            help="queries and keys share their feature size E, keys and values their length S",
        )
    if any(x.dtype.kind not in "fV" for x in (q, k, v)):
        raise DTypeError(
            f"[{name}] expects floating-point q, k, v, got {q.dtype}, {k.dtype}, {v.dtype}",
            help="convert first, e.g. x.astype('float32')",
        )


ATTENTION, ATTENTION_WEIGHTS, ATTENTION_GRAD = Attention(), AttentionWeights(), AttentionGrad()

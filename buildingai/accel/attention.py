"""Faster kernels of the attention records (``ops/attention.py``): the forward and the fused
gradient, on NumPy float32 and float64 arrays.

Each sees its operands as (B, H, rows, columns) stacks of batch entries and heads (views of a
model's (B, T, 3C) projection, read through their strides) and cuts the entries across
BuildingAI's threads (``kernels/split.py``), each part the record's own formulas. Their compiled
twins (``kernels/compiled/attention.py``) take float32 entries: one item's scores stay in cache
from the products through the softmax, and a causal mask's hidden keys are skipped rather than
computed and zeroed. Outputs keep each position's heads side by side, so that the head merge
after attention, and the split's gradient before it, copy nothing. Other arrays (CuPy, float16,
bfloat16) run the record.
"""

from __future__ import annotations

import functools

import numpy as np

from ..backend.precision import gemm_result_dtype
from ..ops.attention import (
    ATTENTION,
    ATTENTION_GRAD,
    attention_gradients_array,
    attention_weights_array,
    entries,
    entry_size,
    heads,
    items,
)
from .kernels.compiled import ANY_SIZE, compiled_twin
from .kernels.split import split_rows
from .registry import register

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


# any size: even a tiny item costs the NumPy kernel a dozen passes, the twin one call
@compiled_twin(
    "attention.attention_forward", params=("scale", "causal"), min_work=ANY_SIZE, strided=True
)
def _forward_entries(xp, q, k, v, out, weights, *, scale, causal):
    """out (B, L, H, Ev), each position's heads side by side, and weights (B, H, L, S) of
    entries q (B, H, L, E), k (B, H, S, E), v (B, H, S, Ev)."""
    weights[...] = attention_weights_array(xp, q, k, scale=scale, causal=causal)
    out[...] = xp.matmul(weights, v).swapaxes(1, 2)


@compiled_twin(
    "attention.attention_grad", params=("scale", "causal"), min_work=ANY_SIZE, strided=True
)
def _gradient_entries(xp, grad, q, k, v, weights, packed, *, scale, causal):
    """packed (B, H*(L*E + S*E + S*Ev)): each entry's dq, dk and dv, heads inside
    (``packed_gradients``), from grad (B, H, L, Ev), q, k, v and weights (B, H, L, S)."""
    packed[...] = attention_gradients_array(xp, grad, q, k, v, weights, scale=scale)


def _as_entries(*arrays):
    """``arrays`` (*batch, [H,] rows, columns) as (B, H, rows, columns) stacks (views where
    they can be: the twins read strides), or None where they are not NumPy arrays of one
    float32 or float64 dtype holding at least one item, or where the math precision in force
    rounds float32 products' operands first (the record's ``matmul_array`` does that; the
    twins multiply in float32)."""
    dtype = arrays[0].dtype
    for array in arrays:
        if type(array) is not np.ndarray or array.dtype != dtype:
            return None
    if dtype not in _FLOATS or not items(arrays[0].shape):
        return None
    if gemm_result_dtype(arrays[0], arrays[0]) is not None:
        return None
    return [a.reshape(entries(a.shape), heads(a.shape), *a.shape[-2:]) for a in arrays]


def attention(ctx, xp, q, k, v, *, scale, causal):
    """``Attention.forward`` on batch entries cut across threads; keeps the weights as it
    does. The output's heads sit side by side in memory, as PyTorch's fused attention leaves
    them: the (*batch, L, H, Ev) view a model's head merge reads is contiguous."""
    stacks = _as_entries(q, k, v)
    if stacks is None:
        return NotImplemented
    count, head_count, length = stacks[0].shape[:3]
    source, width = k.shape[-2], v.shape[-1]
    out = np.empty((count, length, head_count, width), q.dtype)
    weights = np.empty((count, head_count, length, source), q.dtype)
    kernel = functools.partial(_forward_entries, scale=scale, causal=causal)
    split_rows(xp, kernel, *stacks, out, weights)
    ctx.weights = weights.reshape(*q.shape[:-1], source)
    return out.swapaxes(1, 2).reshape(*q.shape[:-1], width)


def attention_grad(ctx, xp, grad, q, k, v, weights, *, scale, causal):
    """``AttentionGrad.forward`` on batch entries cut across threads."""
    stacks = _as_entries(grad, q, k, v, weights)
    if stacks is None:
        return NotImplemented
    width = entry_size(q.shape) + entry_size(k.shape) + entry_size(v.shape)
    packed = np.empty((len(stacks[0]), width), q.dtype)
    kernel = functools.partial(_gradient_entries, scale=scale, causal=causal)
    split_rows(xp, kernel, *stacks, packed)
    return packed


def _numpy(xp, *arrays, **attrs) -> bool:
    return xp is np


register(
    ATTENTION,
    _numpy,
    attention,
    name="attention.items",
    description="attention's items across threads; float32 items one pass each in numba, "
    "causal keys skipped",
)
register(
    ATTENTION_GRAD,
    _numpy,
    attention_grad,
    name="attention_grad.items",
    description="attention's fused gradient, items across threads; float32 items in numba",
)

"""Faster kernels of the attention records (``ops/attention.py``): the forward and the fused
gradient, on NumPy float32 and float64 arrays.

Each sees its operands as stacks of N items (batch x heads, made contiguous) and cuts the items
across BuildingAI's threads (``kernels/split.py``), each part the record's own formulas on its
items. Their compiled twins (``kernels/compiled/attention.py``) take float32 items: one item's
scores stay in cache from the products through the softmax, and a causal mask's hidden keys are
skipped rather than computed and zeroed. Other arrays (CuPy, float16, bfloat16) run the record.
"""

from __future__ import annotations

import functools

import numpy as np

from ..ops.attention import (
    ATTENTION,
    ATTENTION_GRAD,
    attention_gradients_array,
    attention_weights_array,
    items,
)
from .kernels.compiled import compiled_twin
from .kernels.split import split_rows
from .registry import register

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


# min_work=1: even a tiny item costs the NumPy kernel a dozen passes, the twin one call
@compiled_twin("attention.attention_forward", params=("scale", "causal"), min_work=1)
def _forward_items(xp, q, k, v, out, weights, *, scale, causal):
    """out (N, L, Ev) and weights (N, L, S) of items q (N, L, E), k (N, S, E), v (N, S, Ev)."""
    weights[...] = attention_weights_array(xp, q, k, scale=scale, causal=causal)
    xp.matmul(weights, v, out=out)


@compiled_twin("attention.attention_grad", params=("scale", "causal"), min_work=1)
def _gradient_items(xp, grad, q, k, v, weights, packed, *, scale, causal):
    """packed (N, L*E + S*E + S*Ev): each item's dq, dk and dv, from grad (N, L, Ev), q, k, v
    and weights (N, L, S)."""
    packed[...] = attention_gradients_array(xp, grad, q, k, v, weights, scale=scale)


def _as_items(*arrays):
    """``arrays`` as contiguous (N, rows, columns) stacks, or None where they are not NumPy
    arrays of one float32 or float64 dtype holding at least one item."""
    dtype = arrays[0].dtype
    for array in arrays:
        if type(array) is not np.ndarray or array.dtype != dtype:
            return None
    if dtype not in _FLOATS or not items(arrays[0].shape):
        return None
    return [np.ascontiguousarray(a).reshape(items(a.shape), *a.shape[-2:]) for a in arrays]


def attention(ctx, xp, q, k, v, *, scale, causal):
    """``Attention.forward`` on items cut across threads; keeps the weights as it does."""
    stacks = _as_items(q, k, v)
    if stacks is None:
        return NotImplemented
    count, length, source = len(stacks[0]), q.shape[-2], k.shape[-2]
    out = np.empty((count, length, v.shape[-1]), q.dtype)
    weights = np.empty((count, length, source), q.dtype)
    kernel = functools.partial(_forward_items, scale=scale, causal=causal)
    split_rows(xp, kernel, *stacks, out, weights)
    ctx.weights = weights.reshape(*q.shape[:-1], source)
    return out.reshape(*q.shape[:-1], v.shape[-1])


def attention_grad(ctx, xp, grad, q, k, v, weights, *, scale, causal):
    """``AttentionGrad.forward`` on items cut across threads."""
    stacks = _as_items(grad, q, k, v, weights)
    if stacks is None:
        return NotImplemented
    count, length, source = len(stacks[0]), q.shape[-2], k.shape[-2]
    width = length * q.shape[-1] + source * (k.shape[-1] + v.shape[-1])
    packed = np.empty((count, width), q.dtype)
    kernel = functools.partial(_gradient_items, scale=scale, causal=causal)
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

"""Attention as plain functions: scaled dot-product attention, the multi-head attention forward
pass, and sinusoidal positional encodings.

Attention with no mask but the causal one, no dropout and one batch shape is the ``attention``
op (``ops/attention.py``: one fused kernel each way); everything else here is composed from
primitives (matmul, softmax, dropout, where), so gradients, second derivatives, tracing and
export come from those ops. Masks follow PyTorch:

- in ``scaled_dot_product_attention`` a bool mask is True where a query *may* attend;
- in ``multi_head_attention_forward`` (and ``nn.MultiheadAttention``) a bool mask is True where a
  key is *masked out* (padding);
- float masks are added to the attention scores in both (``-inf`` blocks a position).

A query row whose every key is masked gets all-zero attention weights (and a zero output) instead
of the NaN a plain softmax would give, as in PyTorch's ``scaled_dot_product_attention``.
"""

from __future__ import annotations

import functools
import math
import numbers

import numpy as np

from ...autograd.tensor import Tensor
from ...backend.dtypes import as_dtype, get_default_dtype
from ...backend.random import Generator
from ...errors import ArgumentError, DTypeError, ShapeError
from ...functions import creation, elementwise, linalg, reduce, shape
from ...functions.nn import dropout, softmax
from ...ops.attention import ATTENTION
from ...ops.linalg import MATMUL

_SDPA = "scaled_dot_product_attention"
_MHA = "multi_head_attention"


# ----- scaled dot-product attention ----------------------------------------------------------------


def scaled_dot_product_attention(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    attn_mask: Tensor | None = None,
    dropout_p: float = 0.0,
    is_causal: bool = False,
    scale: float | None = None,
    enable_gqa: bool = False,
    *,
    generator: Generator | None = None,
) -> Tensor:
    """``softmax(query @ key^T * scale + mask) @ value``, as ``torch.nn.functional`` computes it.

    query: (*batch, L, E), key: (*batch, S, E), value: (*batch, S, Ev) -> (*batch, L, Ev); the
    batch dimensions (any number, heads included) broadcast.

    - ``attn_mask``: bool (True = may attend) or float (added to the scores), broadcastable to
      the scores (*batch, L, S). A float mask may require grad (a learned attention bias).
    - ``is_causal``: query i attends to keys 0..i only (top-left aligned when L != S); not
      combined with ``attn_mask``.
    - ``scale``: defaults to ``1 / sqrt(E)``.
    - ``dropout_p``: dropout on the attention weights, always applied when positive (pass 0 in
      evaluation), drawn from ``generator``.
    - ``enable_gqa``: grouped-query attention: query has Hq heads in dimension -3, key and value
      Hk heads, Hq a multiple of Hk; each key/value head serves Hq / Hk query heads.
    """
    if _one_op(query, key, value, attn_mask, dropout_p, enable_gqa):
        _check_attention_inputs(query, key, value)
        if scale is None:
            scale = 1.0 / math.sqrt(query.shape[-1]) if query.shape[-1] else 1.0
        return ATTENTION(query, key, value, scale=float(scale), causal=bool(is_causal))
    out, _ = attention(
        query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa, generator=generator
    )
    return out


def _one_op(query, key, value, attn_mask, dropout_p, enable_gqa) -> bool:
    """Whether attention is the ``attention`` op alone: no mask but the causal one, no dropout,
    no grouped or broadcast heads, keys to attend to; anything else is composed of ops."""
    if attn_mask is not None or dropout_p != 0.0 or enable_gqa:
        return False
    if not all(isinstance(x, Tensor) for x in (query, key, value)):
        return False
    batch = query.shape[:-2]
    return (
        query.ndim >= 2
        and key.shape[:-2] == batch
        and value.shape[:-2] == batch
        and key.ndim == value.ndim == query.ndim
        and key.shape[-2] > 0
    )


def attention(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    attn_mask: Tensor | None = None,
    dropout_p: float = 0.0,
    is_causal: bool = False,
    scale: float | None = None,
    enable_gqa: bool = False,
    *,
    generator: Generator | None = None,
) -> tuple[Tensor, Tensor]:
    """``scaled_dot_product_attention`` that also returns the attention weights.

    Returns ``(output (*batch, L, Ev), weights (*batch, L, S))``; the weights are the ones
    multiplied with ``value``, so after dropout when ``dropout_p > 0``.
    """
    _check_attention_inputs(query, key, value)
    dropout_p = _check_probability(dropout_p, "dropout_p")
    length, source = query.shape[-2], key.shape[-2]
    groups = _query_groups(query, key, value) if enable_gqa else 1
    if scale is None:
        scale = 1.0 / math.sqrt(query.shape[-1]) if query.shape[-1] else 1.0

    if groups > 1:
        # View the Hq query heads as (Hk, groups): key and value then broadcast over the group
        # dimension in matmul instead of being copied Hq / Hk times.
        grouped = query.shape[:-3] + (key.shape[-3], groups) + query.shape[-2:]
        query = query.reshape(grouped)
        key, value = key.unsqueeze(-3), value.unsqueeze(-3)
    # Scale the (L, E) queries rather than the (L, S) scores: fewer multiplications.
    # key enters transposed: the product reads it as BLAS does, without a transpose op
    scores = MATMUL(query * scale if scale != 1.0 else query, key, transpose_b=True)
    if groups > 1:
        scores = scores.reshape(scores.shape[:-4] + (-1,) + scores.shape[-2:])

    if is_causal:
        if attn_mask is not None:
            raise ArgumentError(
                f"[{_SDPA}] got both attn_mask {_shape_of(attn_mask)} and is_causal=True",
                help="pass one of them: fold the causal structure into attn_mask yourself, or "
                "drop attn_mask",
            )
        # query i sees keys 0..i, key 0 at least: no row is fully blocked, so the mask is an
        # added constant whose backward passes the gradient through, instead of where's select
        weights = softmax(scores + causal_bias(length, source, scores.dtype, scores.device), -1)
    else:
        weights = masked_softmax(scores, _as_mask(attn_mask, scores, _SDPA))
    if dropout_p > 0.0:
        weights = dropout(weights, dropout_p, training=True, generator=generator)

    if groups > 1:
        grouped = weights.reshape(weights.shape[:-3] + (key.shape[-4], groups) + (length, source))
        out = grouped @ value
        out = out.reshape(out.shape[:-4] + (-1,) + out.shape[-2:])
    else:
        out = weights @ value
    return out, weights


def causal_mask(length: int, source: int | None = None, device=None) -> Tensor:
    """The bool mask (L, S) of causal attention: True (may attend) where key index <= query
    index, as ``torch.ones(L, S).tril()``."""
    source = length if source is None else source
    array = np.tri(length, source, dtype=bool)
    tensor = Tensor(array)
    return tensor if device is None else tensor.to(device)


def causal_bias(length: int, source: int, dtype, device=None) -> Tensor:
    """The float (L, S) bias of causal attention: 0 where key index <= query index, -inf
    elsewhere, added to the scores before the softmax."""
    tensor = Tensor(_causal_bias_array(length, source, np.dtype(dtype)))
    return tensor if device is None else tensor.to(device)


@functools.lru_cache(maxsize=32)
def _causal_bias_array(length: int, source: int, dtype: np.dtype) -> np.ndarray:
    """``causal_bias``'s array, made once per size and dtype (every attention call of a model
    asks for the same one) and read-only, as it is shared."""
    array = np.where(np.tri(length, source, dtype=bool), 0.0, -np.inf).astype(dtype)
    array.flags.writeable = False
    return array


def masked_softmax(scores: Tensor, mask: Tensor | None) -> Tensor:
    """Softmax over the last axis of ``scores`` after applying ``mask`` (None; bool, True = may
    attend; or float, added), with all-zero weights in rows where every position is blocked.
    scores (*, L, S), mask broadcastable to it -> weights (*, L, S).

    A fully blocked row would be ``exp(-inf) / 0 = NaN``; such rows are opened up before the
    softmax (so no NaN enters forward or backward) and zeroed after it. This is written with ops
    and no Python branch on mask values, so that a frozen graph computes it for every mask.
    """
    if mask is None:
        return softmax(scores, -1)
    if mask.dtype == np.bool_:
        # (..., 1) rows of the mask's own (possibly broadcast) shape: cheap next to the scores
        blocked_rows = elementwise.logical_not(reduce.any(mask, axis=-1, keepdims=True))
        scores = elementwise.where(elementwise.logical_or(mask, blocked_rows), scores, -math.inf)
    else:
        blocked_rows = reduce.all(elementwise.eq(mask, -math.inf), axis=-1, keepdims=True)
        scores = scores + elementwise.where(blocked_rows, 0.0, mask)
    return elementwise.where(blocked_rows, 0.0, softmax(scores, -1))


def _as_mask(mask, scores: Tensor, op: str) -> Tensor | None:
    """Validate a mask against the scores (*batch, L, S): bool, or float cast to their dtype."""
    if mask is None:
        return None
    if not isinstance(mask, Tensor):
        mask = creation.as_tensor(mask)
    kind = mask.dtype.kind
    if kind != "b" and kind not in "fV":
        raise DTypeError(
            f"[{op}] attn_mask must be bool or floating point, got {mask.dtype}",
            help="pass a bool mask (True = may attend) or a float mask added to the scores "
            "(0 = attend, -inf = blocked)",
        )
    scores_shape = tuple(scores.shape)
    if not _broadcasts_to(tuple(mask.shape), scores_shape):
        raise ShapeError(
            f"[{op}] attn_mask of shape {tuple(mask.shape)} does not broadcast to the attention "
            f"scores of shape {scores_shape} (batch..., L, S)",
            help="the mask's last two dimensions are (L, S) = (query length, key length), or 1 "
            "to broadcast; leading dimensions must match the batch (and head) dimensions or be 1",
        )
    if kind != "b" and mask.dtype != scores.dtype:
        mask = creation.astype(mask, scores.dtype)
    return mask


def _broadcasts_to(shape: tuple, target: tuple) -> bool:
    if len(shape) > len(target):
        return False
    return all(s in (1, t) for s, t in zip(shape[::-1], target[::-1]))


def _shape_of(value) -> tuple:
    return tuple(getattr(value, "shape", ()))


def _check_probability(p, name: str) -> float:
    if not isinstance(p, numbers.Real) or not 0.0 <= p <= 1.0:
        raise ArgumentError(
            f"[{_SDPA}] {name} must be a probability in [0, 1], got {p!r}",
            help="it is the probability of dropping an attention weight (0 keeps all)",
        )
    return float(p)


def _check_attention_inputs(query: Tensor, key: Tensor, value: Tensor) -> None:
    shapes = f"query {tuple(query.shape)}, key {tuple(key.shape)}, value {tuple(value.shape)}"
    if query.ndim < 2 or key.ndim < 2 or value.ndim < 2:
        raise ShapeError(
            f"[{_SDPA}] needs at least 2-D inputs (L, E), got {shapes}",
            help="query is (*batch, L, E), key (*batch, S, E) and value (*batch, S, Ev)",
        )
    if query.shape[-1] != key.shape[-1]:
        raise ShapeError(
            f"[{_SDPA}] query and key must share the embedding size E (last dimension), got "
            f"{shapes}",
            help="query is (*batch, L, E) and key (*batch, S, E)",
        )
    if key.shape[-2] != value.shape[-2]:
        raise ShapeError(
            f"[{_SDPA}] key and value must have the same sequence length S (dimension -2), got "
            f"{shapes}",
            help="key is (*batch, S, E) and value (*batch, S, Ev): one value per key",
        )
    for x in (query, key, value):
        if x.dtype.kind not in "fV":
            raise DTypeError(
                f"[{_SDPA}] expects floating-point inputs, got {query.dtype}, {key.dtype}, "
                f"{value.dtype} ({shapes})",
                help="convert first, e.g. x.astype('float32')",
            )


def _query_groups(query: Tensor, key: Tensor, value: Tensor) -> int:
    """Query heads per key/value head for grouped-query attention (heads in dimension -3)."""
    if query.ndim < 3 or key.ndim < 3 or value.ndim < 3 or key.shape[-3] != value.shape[-3]:
        raise ShapeError(
            f"[{_SDPA}] enable_gqa needs a head dimension (-3) in query, key and value, with "
            f"as many key as value heads; got query {tuple(query.shape)}, key "
            f"{tuple(key.shape)}, value {tuple(value.shape)}",
            help="lay the inputs out as (batch, heads, length, embedding)",
        )
    query_heads, kv_heads = query.shape[-3], key.shape[-3]
    if kv_heads == 0 or query_heads % kv_heads:
        raise ShapeError(
            f"[{_SDPA}] enable_gqa: the {query_heads} query heads must be a multiple of the "
            f"{kv_heads} key/value heads (query {tuple(query.shape)}, key {tuple(key.shape)})",
        )
    return query_heads // kv_heads


# ----- multi-head attention ------------------------------------------------------------------------


def multi_head_attention_forward(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    embed_dim_to_check: int,
    num_heads: int,
    in_proj_weight: Tensor | None,
    in_proj_bias: Tensor | None,
    bias_k: Tensor | None,
    bias_v: Tensor | None,
    add_zero_attn: bool,
    dropout_p: float,
    out_proj_weight: Tensor,
    out_proj_bias: Tensor | None,
    training: bool = True,
    key_padding_mask: Tensor | None = None,
    need_weights: bool = True,
    attn_mask: Tensor | None = None,
    use_separate_proj_weight: bool = False,
    q_proj_weight: Tensor | None = None,
    k_proj_weight: Tensor | None = None,
    v_proj_weight: Tensor | None = None,
    static_k: Tensor | None = None,
    static_v: Tensor | None = None,
    average_attn_weights: bool = True,
    is_causal: bool = False,
    *,
    batch_first: bool = False,
    generator: Generator | None = None,
) -> tuple[Tensor, Tensor | None]:
    """The forward pass of ``nn.MultiheadAttention``, with PyTorch's signature.

    query: (L, N, E), key: (S, N, kdim), value: (S, N, vdim) (``batch_first=True``: (N, L, E),
    ...; unbatched: (L, E), (S, kdim), (S, vdim)) -> ``(output (L, N, E), weights)`` with weights
    (N, L, S) averaged over heads, (N, num_heads, L, S) with ``average_attn_weights=False``, or
    None when ``need_weights=False``.

    The projections are ``in_proj_weight`` (3E, E) split into query/key/value rows, or
    ``q_proj_weight`` (E, E), ``k_proj_weight`` (E, kdim), ``v_proj_weight`` (E, vdim) with
    ``use_separate_proj_weight``; ``in_proj_bias`` is (3E,). Masks: ``key_padding_mask`` (N, S),
    ``attn_mask`` (L, S) or (N * num_heads, L, S); bool True = masked out, float = added.
    ``is_causal=True`` without ``attn_mask`` applies a causal mask (with one, the mask is used).
    ``static_k`` / ``static_v`` (precomputed projected keys) are not supported.
    """
    if static_k is not None or static_v is not None:
        raise ArgumentError(
            f"[{_MHA}] static_k / static_v are not supported",
            help="pass the keys and values as key and value; they are projected here",
        )
    embed_dim = embed_dim_to_check
    if num_heads <= 0 or embed_dim % num_heads:
        raise ArgumentError(
            f"[{_MHA}] embed_dim ({embed_dim}) must be divisible by num_heads ({num_heads})",
            help="each head gets embed_dim // num_heads features; pick sizes that divide",
        )
    dropout_p = _check_probability(dropout_p, "dropout_p") if training else 0.0
    batched = _check_mha_inputs(query, key, value, embed_dim)
    if not batched:  # one sequence: give it a batch dimension of 1, in front
        # (one tensor stays one tensor: the projections of the same tensor share a product)
        unsqueezed = {id(x): x.unsqueeze(0) for x in (query, key, value)}
        query, key, value = (unsqueezed[id(x)] for x in (query, key, value))
        if key_padding_mask is not None:
            key_padding_mask = _tensor(key_padding_mask).unsqueeze(0)
        batch_first = True
    batch_axis = 0 if batch_first else 1
    batch = query.shape[batch_axis]
    length, source = query.shape[1 - batch_axis], key.shape[1 - batch_axis]

    # ---- projections: (.., E) -> (N, H, L, head_dim) ----
    if use_separate_proj_weight:
        projected = _in_projection(
            (query, key, value), (q_proj_weight, k_proj_weight, v_proj_weight), in_proj_bias
        )
    else:
        projected = _in_projection((query, key, value), in_proj_weight, in_proj_bias)
    q, k, v = (_split_heads(x, num_heads, batch_axis) for x in projected)

    # ---- extra key/value slots: a learned bias pair, then an all-zero pair ----
    extra = 0
    if bias_k is not None and bias_v is not None:
        head_dim = embed_dim // num_heads
        slot = (batch, num_heads, 1, head_dim)
        k = shape.concatenate([k, bias_k.reshape(1, num_heads, 1, head_dim).expand(slot)], 2)
        v = shape.concatenate([v, bias_v.reshape(1, num_heads, 1, head_dim).expand(slot)], 2)
        extra += 1
    elif bias_k is not None or bias_v is not None:
        raise ArgumentError(f"[{_MHA}] bias_k and bias_v must be given together")
    if add_zero_attn:
        zeros = creation.zeros_like(k.getitem((slice(None),) * 2 + (slice(0, 1),)))
        k = shape.concatenate([k, zeros], 2)
        v = shape.concatenate([v, creation.zeros_like(zeros)], 2)
        extra += 1

    mask = _merge_masks(
        attn_mask, key_padding_mask, is_causal, (batch, num_heads, length, source), q
    )
    if mask is not None and extra:  # the extra slots are never masked
        mask = shape.pad(mask, (0, extra), value=True if mask.dtype == np.bool_ else 0.0)
    fused = mask is None and dropout_p == 0.0 and not need_weights and k.shape[-2] > 0
    if fused and q.shape[-1]:  # the transformer layers' path: one op
        out = ATTENTION(q, k, v, scale=1.0 / math.sqrt(q.shape[-1]), causal=False)
        attn_weights = None
    else:
        out, attn_weights = attention(q, k, v, mask, dropout_p, generator=generator)

    # ---- (N, H, L, head_dim) -> (.., E) -> output projection ----
    order = (0, 2, 1, 3) if batch_axis == 0 else (2, 0, 1, 3)
    out = out.permute(order)
    out = linalg.linear(out.reshape(out.shape[:2] + (embed_dim,)), out_proj_weight, out_proj_bias)
    if not batched:
        out = out.squeeze(0)
    if not need_weights:
        return out, None
    if average_attn_weights:
        attn_weights = reduce.mean(attn_weights, axis=1)
    if not batched:
        attn_weights = attn_weights.squeeze(0)
    return out, attn_weights


def _tensor(value) -> Tensor:
    return value if isinstance(value, Tensor) else creation.as_tensor(value)


def _check_mha_inputs(query: Tensor, key: Tensor, value: Tensor, embed_dim: int) -> bool:
    """Validate the input ranks and sizes; returns whether the inputs carry a batch dimension."""
    shapes = f"query {tuple(query.shape)}, key {tuple(key.shape)}, value {tuple(value.shape)}"
    if query.ndim not in (2, 3) or key.ndim != query.ndim or value.ndim != query.ndim:
        raise ShapeError(
            f"[{_MHA}] expects 3-D batched or 2-D unbatched inputs of one rank, got {shapes}",
            help="query is (L, N, E) ((N, L, E) with batch_first=True) or (L, E) unbatched",
        )
    if query.shape[-1] != embed_dim:
        raise ShapeError(
            f"[{_MHA}] query's last dimension must be embed_dim = {embed_dim}, got {shapes}"
        )
    if key.shape[:-1] != value.shape[:-1]:
        raise ShapeError(
            f"[{_MHA}] key and value must have the same sequence length and batch size, got "
            f"{shapes}",
            help="one value per key",
        )
    return query.ndim == 3


def _in_projection(inputs: tuple, weight, bias: Tensor | None) -> tuple:
    """The projected query, key and value, each (.., E): ``weight`` is the stacked (3E, E)
    ``in_proj_weight``, or a tuple of the three separate weights; ``bias`` (3E,) or None.

    With the stacked weight, inputs that are one tensor share one product, split into views,
    as PyTorch's packed projection: self-attention (query, key and value one tensor) is one
    (.., 3E) product, attention over a memory (key and value one tensor) a (.., E) product and
    a (.., 2E) one. One larger GEMM each way instead of several, and no gradients to sum."""
    query, key, value = inputs
    if isinstance(weight, Tensor) and key is value:
        if query is key:
            return shape.chunk(linalg.linear(query, weight, bias), 3, -1)
        embed = weight.shape[0] // 3
        query_weight, memory_weight = shape.split(weight, (embed, 2 * embed))
        query_bias, memory_bias = (
            (None, None) if bias is None else shape.split(bias, (embed, 2 * embed))
        )
        projected_key, projected_value = shape.chunk(
            linalg.linear(key, memory_weight, memory_bias), 2, -1
        )
        return linalg.linear(query, query_weight, query_bias), projected_key, projected_value
    weights = weight if isinstance(weight, tuple) else shape.chunk(weight, 3)
    biases = (None,) * 3 if bias is None else shape.chunk(bias, 3)
    return tuple(linalg.linear(*parts) for parts in zip(inputs, weights, biases))


def _split_heads(x: Tensor, num_heads: int, batch_axis: int) -> Tensor:
    """(N, L, E) or (L, N, E) -> (N, H, L, E / H): a reshape and a permute, both views."""
    # an explicit head size: -1 cannot be inferred when the batch is empty
    x = x.reshape(x.shape[:2] + (num_heads, x.shape[-1] // num_heads))
    return x.permute((0, 2, 1, 3) if batch_axis == 0 else (1, 2, 0, 3))


def _merge_masks(attn_mask, key_padding_mask, is_causal, sizes, q: Tensor) -> Tensor | None:
    """One mask broadcastable to the scores (N, H, L, S), in ``attention``'s convention: bool
    True = may attend, float = added. Both bool: combined with ``and``; otherwise as floats."""
    batch, num_heads, length, source = sizes
    dtype = q.dtype
    masks = []
    if attn_mask is not None:
        attn_mask = _tensor(attn_mask)
        _check_mask_dtype(attn_mask, "attn_mask")
        if tuple(attn_mask.shape) == (length, source):
            pass
        elif tuple(attn_mask.shape) == (batch * num_heads, length, source):
            attn_mask = attn_mask.reshape(batch, num_heads, length, source)
        else:
            raise ShapeError(
                f"[{_MHA}] attn_mask of shape {tuple(attn_mask.shape)} fits neither (L, S) = "
                f"{(length, source)} nor (N * num_heads, L, S) = "
                f"{(batch * num_heads, length, source)}",
                help="L is the query length and S the key length; a 3-D mask holds one (L, S) "
                "mask per batch element and head, batch-major",
            )
        masks.append(attn_mask)
    elif is_causal:
        masks.append(
            ~causal_mask(length, source, device=q.device)
        )  # in this function's convention: True = masked
    if key_padding_mask is not None:
        key_padding_mask = _tensor(key_padding_mask)
        _check_mask_dtype(key_padding_mask, "key_padding_mask")
        if tuple(key_padding_mask.shape) != (batch, source):
            raise ShapeError(
                f"[{_MHA}] key_padding_mask of shape {tuple(key_padding_mask.shape)} does not "
                f"match (N, S) = {(batch, source)}",
                help="one row per batch element, one column per key; True marks padding",
            )
        masks.append(key_padding_mask.reshape(batch, 1, 1, source))
    if not masks:
        return None
    if all(m.dtype == np.bool_ for m in masks):
        allowed = [elementwise.logical_not(m) for m in masks]  # flip to True = may attend
        return allowed[0] if len(allowed) == 1 else elementwise.logical_and(*allowed)
    additive = [
        creation.astype(elementwise.where(m, -math.inf, 0.0), dtype)
        if m.dtype == np.bool_
        else (m if m.dtype == dtype else creation.astype(m, dtype))
        for m in masks
    ]
    return additive[0] if len(additive) == 1 else additive[0] + additive[1]


def _check_mask_dtype(mask: Tensor, name: str) -> None:
    if mask.dtype.kind != "b" and mask.dtype.kind not in "fV":
        raise DTypeError(
            f"[{_MHA}] {name} must be bool or floating point, got {mask.dtype}",
            help="bool: True marks a masked position; float: added to the attention scores",
        )


# ----- positional encodings -----------------------------------------------------------------------


def sinusoidal_positional_encoding(
    length: int,
    dim: int,
    *,
    offset: int = 0,
    base: float = 10000.0,
    dtype=None,
    device=None,
) -> Tensor:
    """The fixed positional encoding of "Attention Is All You Need": (length, dim) with

    ``pe[p, 2i] = sin(p / base^(2i / dim))`` and ``pe[p, 2i + 1] = cos(p / base^(2i / dim))``

    for positions ``p = offset .. offset + length - 1``. Computed in float64, then cast to
    ``dtype`` (the default float dtype when None).
    """
    if length < 0 or dim < 0:
        raise ArgumentError(
            f"[sinusoidal_positional_encoding] length and dim must be >= 0, got {length}, {dim}"
        )
    positions = np.arange(offset, offset + length, dtype=np.float64)[:, None]
    frequencies = np.exp(np.arange(0, dim, 2, dtype=np.float64) * (-math.log(base) / dim))
    angles = positions * frequencies  # (length, ceil(dim / 2))
    table = np.empty((length, dim), dtype=np.float64)
    table[:, 0::2] = np.sin(angles)
    table[:, 1::2] = np.cos(angles[:, : dim // 2])
    dtype = get_default_dtype() if dtype is None else as_dtype(dtype)
    tensor = Tensor(table.astype(dtype))
    return tensor if device is None else tensor.to(device)


__all__ = [
    "scaled_dot_product_attention",
    "attention",
    "causal_mask",
    "masked_softmax",
    "multi_head_attention_forward",
    "sinusoidal_positional_encoding",
]

"""Fused scaled dot-product attention for float32 on the CPU, forward and backward: one item (a
batch entry and head) per numba thread, its scores, softmax and products computed together
while the item's rows stay in cache, instead of batched products and a softmax that each read
and write whole arrays.

- ``attention_forward``: weights = softmax(scale * q k^T) row by row, out = weights v.
- ``attention_grad``: the gradients of q, k and v from the gradient of ``out`` and the forward's
  weights.

The operands are read where they lie, through their strides: in a GPT, q, k and v are (B, H, T,
D) views of one (B, T, 3C) array, and their heads' rows are 3C apart. The outputs are written
heads side by side, as the model reshapes them next: out (B, L, H, Ev), which is (B, L, H * Ev)
as it is, and the gradients per batch entry as (L, H, E), (S, H, E) and (S, H, Ev) blocks, each
a (T, C) block that the (B, T, 3C) array's gradient takes without a transpose. Threads of
different heads write disjoint parts of the same rows.

Every product runs on register tiles of ``ROWS`` rows by a panel of ``PANEL`` columns
(``panel_tile``): the right operand is copied once per item into panels, the left one is read
in place, along its rows (``panel_product``) or, for the backward's products by a transposed
matrix (``weights^T grad``, ``ds^T q``), down its columns (``_column_product`` here). Sums keep
their order within each vector lane, as in ``panel_product``.

Causal masking keeps query i to keys j <= i (top-left aligned, like ``tril`` of an (L, S)
matrix of ones). Masked keys get weight exactly 0, and each product runs ``ROWS`` rows at a
time over only the keys (or queries) some row of the tile uses, which skips about half the
work. Within a tile on the diagonal a masked key's zero weight still multiplies its row, so an
inf or NaN there reaches those outputs as it does in a plain product with the masked weights.
The softmax is the vectorised exp of ``expf`` on scores less their row's maximum; NaN in an
input row propagates to the outputs it reaches, as in a plain softmax.
"""

from __future__ import annotations

import numpy as np
from numba import carray, njit, prange, types
from numba.extending import intrinsic

from . import tile_ir as t
from .expf import exp32_nonpositive
from .panel_tile import PANEL, ROWS, panel_product, panel_tile
from .rows import _max, _sum, inline, kernel
from .tile_ir import LANES

_ZERO = np.float32(0.0)
_ONE = np.float32(1.0)
_MINUS_INF = np.float32(-np.inf)
_FLOAT_BYTES = 4
_POINTER = t.FLOAT.as_pointer()

# The larger steps compiled once each and called, not inlined into the kernels: the kernels
# then compile in about half the time, and run as fast.
helper = njit(nogil=True, cache=True, fastmath={"contract"})


# ----- products by a transposed matrix ------------------------------------------------------------


# panel_tile's tiles reading a down its columns: a matrix's transpose read in place
_ONE_ROW, _TWO_ROWS, _THREE_ROWS, _FOUR_ROWS, _FIVE_ROWS = (
    panel_tile(rows, down_columns=True) for rows in range(1, ROWS + 1)
)


@njit(nogil=True, cache=True)
def _column_product(rows, a_at, a_step, panels, c_at, ldc):
    """c = a^T @ b: a (k, >= rows) float32 at address ``a_at``, ``a_step`` floats from one row
    to the next, read down its first ``rows`` columns; b as its packed panels (parts, k,
    PANEL), each contiguous; c (rows, parts * PANEL) at ``c_at``, leading dimension ``ldc``."""
    parts, inner = panels.shape[0], panels.shape[1]
    whole = rows - rows % ROWS
    for part in range(parts):
        b_at = panels[part].ctypes.data
        out_at = c_at + _FLOAT_BYTES * part * PANEL
        for start in range(0, whole, ROWS):
            _FIVE_ROWS(a_at + _FLOAT_BYTES * start, a_step, b_at, inner,
                       out_at + _FLOAT_BYTES * start * ldc, ldc)  # fmt: skip
        left = rows - whole
        if left:
            a_left, c_left = a_at + _FLOAT_BYTES * whole, out_at + _FLOAT_BYTES * whole * ldc
            if left == 1:
                _ONE_ROW(a_left, a_step, b_at, inner, c_left, ldc)
            elif left == 2:
                _TWO_ROWS(a_left, a_step, b_at, inner, c_left, ldc)
            elif left == 3:
                _THREE_ROWS(a_left, a_step, b_at, inner, c_left, ldc)
            else:
                _FOUR_ROWS(a_left, a_step, b_at, inner, c_left, ldc)


# ----- one item's operands and products -----------------------------------------------------------


@inline
def _parts(columns):
    """How many panels of ``PANEL`` columns hold ``columns`` columns."""
    return (columns + PANEL - 1) // PANEL


@inline
def _keys_used(query, keys, causal):
    """How many keys ``query`` attends to: 0..query under the causal mask, all otherwise."""
    return min(query + 1, keys) if causal else keys


@inline
def _whole_vectors(used, limit):
    """``used`` rounded up to whole vectors of ``LANES``, at most ``limit``."""
    return min(used + (-used) % LANES, limit)


@inline
def _step(matrix):
    """The floats from one row of a float32 matrix to the next (its leading dimension, for a
    matrix whose columns are adjacent)."""
    return matrix.strides[0] // _FLOAT_BYTES


@inline
def _address(matrix, row, column):
    """The address of matrix[row, column] of a float32 matrix."""
    return matrix.ctypes.data + row * matrix.strides[0] + column * matrix.strides[1]


@intrinsic
def _floats_at(typing_context, address):
    """The int64 ``address`` as a float32 pointer (for ``carray``)."""
    signature = types.CPointer(types.float32)(address)

    def codegen(context, builder, signature, arguments):
        return builder.inttoptr(arguments[0], _POINTER)

    return signature, codegen


@inline
def _row(matrix, row):
    """matrix[row] as a contiguous 1-D array, for a float32 matrix whose columns are adjacent:
    its loops then run whole vectors, which a strided view's do not."""
    return carray(_floats_at(_address(matrix, row, 0)), matrix.shape[1])


@helper
def _pack_columns(matrix, panels):
    """panels (parts, k, PANEL) = the columns of matrix (k, m), ``PANEL`` at a time, 0 past m."""
    rows, columns = matrix.shape
    for part in range(panels.shape[0]):
        start = part * PANEL
        width = min(PANEL, columns - start)
        for r in range(rows):
            source, target = _row(matrix, r), panels[part, r]
            for j in range(width):
                target[j] = source[start + j]
            for j in range(width, PANEL):
                target[j] = _ZERO


@helper
def _pack_rows(matrix, panels, scale):
    """panels (parts, k, PANEL) = the columns of scale * matrix^T for matrix (m, k): its rows
    ``PANEL`` at a time, 0 past m."""
    rows, inner = matrix.shape
    for part in range(panels.shape[0]):
        block = panels[part]
        for j in range(PANEL):
            r = part * PANEL + j
            if r < rows:
                source = _row(matrix, r)
                for c in range(inner):
                    block[c, j] = scale * source[c]
            else:
                for c in range(inner):
                    block[c, j] = _ZERO


@inline
def _panel_wide(target):
    """Where a product for ``target`` (m, n) goes: target itself where n is whole panels, else
    a scratch (m, parts * PANEL) that ``_copy_columns`` copies to it (a product writes whole
    panels, which past n would be another head's)."""
    if target.shape[1] % PANEL == 0:
        return target
    return np.empty((target.shape[0], _parts(target.shape[1]) * PANEL), np.float32)


@helper
def _copy_columns(source, target):
    """target (m, n) = the first n columns of source (m, >= n), where source is the scratch
    ``_panel_wide`` gave for target (where it gave target itself, nothing to do)."""
    if target.shape[1] % PANEL == 0:
        return
    for r in range(target.shape[0]):
        row, out = source[r], _row(target, r)
        for c in range(out.size):
            out[c] = row[c]


@helper
def _query_times_keys(a, panels, c, causal):
    """c (L, parts * PANEL) = a (L, k) @ panels joined, panels (parts, k, PANEL) over the keys,
    a read in place: with ``causal``, each tile of ``ROWS`` queries stops at the last panel its
    last row uses."""
    queries = a.shape[0]
    if not causal:
        panel_product(queries, a.ctypes.data, _step(a), panels, c.ctypes.data, _step(c))
        return
    for first in range(0, queries, ROWS):
        rows = min(ROWS, queries - first)
        parts = min(_parts(first + rows), panels.shape[0])  # keys 0..first + rows - 1
        panel_product(rows, _address(a, first, 0), _step(a), panels[:parts],
                      _address(c, first, 0), _step(c))  # fmt: skip


@helper
def _by_query_tiles(a, panels, c, causal):
    """c = a @ panels joined, for a (L, >= S) with a query per row and panels (parts, S, PANEL)
    over the keys: with ``causal``, each tile of ``ROWS`` rows stops at the last key its last
    row uses (the entries of a past it are 0)."""
    queries, keys = a.shape[0], panels.shape[1]
    if not causal:
        panel_product(queries, a.ctypes.data, _step(a), panels, c.ctypes.data, _step(c))
        return
    for first in range(0, queries, ROWS):
        rows = min(ROWS, queries - first)
        used = min(first + rows, keys)
        panel_product(rows, _address(a, first, 0), _step(a), panels[:, :used],
                      _address(c, first, 0), _step(c))  # fmt: skip


@helper
def _by_key_tiles(a, keys, panels, c, causal):
    """c (S, parts * PANEL) = a[:, :S]^T @ panels joined, for a (L, >= S) with a query per row,
    read down its columns, and panels (parts, L, PANEL) over the queries: with ``causal``, each
    tile of ``ROWS`` keys starts at the query of its first key (the entries of a above it are
    0)."""
    queries = panels.shape[1]
    if not causal:
        _column_product(keys, a.ctypes.data, _step(a), panels, c.ctypes.data, _step(c))
        return
    for first in range(0, keys, ROWS):
        rows = min(ROWS, keys - first)
        start = min(first, queries)
        _column_product(rows, _address(a, start, first), _step(a), panels[:, start:],
                        _address(c, first, 0), _step(c))  # fmt: skip


# ----- kernels ------------------------------------------------------------------------------------


@inline
def _softmax_rows(scores, weights, causal, per_row):
    """weights (L, S) = the softmax of each row of scores (L, >= S rounded up to whole vectors)
    over the keys its query uses, 0 past them; scores is overwritten, per_row (L,) is scratch.
    Each step runs over all rows before the next, so that the rows' chains of dependent steps
    overlap. Each row's scores from its last key used to a whole number of vectors are set to
    -inf first, so that the loops run whole vectors and those keys come out exactly 0."""
    queries, keys = weights.shape
    width = scores.shape[1]
    for i in range(queries):
        used = _keys_used(i, keys, causal)
        row = scores[i]
        for j in range(used, _whole_vectors(used, width)):
            row[j] = _MINUS_INF
        per_row[i] = _max(row[: _whole_vectors(used, width)])
    for i in range(queries):
        row, m = scores[i], per_row[i]
        for j in range(_whole_vectors(_keys_used(i, keys, causal), width)):
            row[j] = exp32_nonpositive(row[j] - m)  # <= 0, or NaN
    for i in range(queries):
        per_row[i] = _sum(scores[i, : _whole_vectors(_keys_used(i, keys, causal), width)])
    for i in range(queries):
        row, out, inverse = scores[i], weights[i], _ONE / per_row[i]
        stop = _whole_vectors(_keys_used(i, keys, causal), keys)
        for j in range(stop):
            out[j] = row[j] * inverse
        for j in range(stop, keys):
            out[j] = _ZERO


@inline
def _softmax_grad_rows(dp, weights, scale, causal, per_row):
    """dp (L, >= S) becomes scale * ds = scale * P * (dp - rowsum(dp * P)), P = weights (L, S),
    over the keys each query uses (to a whole number of vectors: P is 0 there) and 0 past them;
    per_row (L,) is scratch. Step by step over all rows, as ``_softmax_rows``."""
    queries, keys = weights.shape
    for i in range(queries):
        row, p = dp[i], weights[i]
        stop = _whole_vectors(_keys_used(i, keys, causal), keys)
        for j in range(stop):
            row[j] = row[j] * p[j]
        per_row[i] = _sum(row[:stop])
    for i in range(queries):
        row, p, projection = dp[i], weights[i], per_row[i]
        stop = _whole_vectors(_keys_used(i, keys, causal), keys)
        for j in range(stop):
            row[j] = scale * (row[j] - projection * p[j])
        for j in range(stop, keys):
            row[j] = _ZERO


@helper
def _forward_item(q, k, v, out, weights, scale, causal):
    """``attention_forward`` for one item: q (L, E), k (S, E), v (S, Ev), out (L, Ev), weights
    (L, S); each matrix's columns adjacent, its rows ``strides[0]`` apart."""
    queries, keys = q.shape[0], k.shape[0]
    keys_t = np.empty((_parts(keys), k.shape[1], PANEL), np.float32)
    values = np.empty((_parts(v.shape[1]), keys, PANEL), np.float32)
    scores = np.empty((queries, _parts(keys) * PANEL), np.float32)
    per_row = np.empty(queries, np.float32)
    _pack_rows(k, keys_t, scale)  # the scale once, on the keys
    _pack_columns(v, values)
    _query_times_keys(q, keys_t, scores, causal)
    _softmax_rows(scores, weights, causal, per_row)
    result = _panel_wide(out)
    _by_query_tiles(weights, values, result, causal)
    _copy_columns(result, out)


@kernel
def attention_forward(q, k, v, out, weights, scale, causal):
    """q (B, H, L, E), k (B, H, S, E), v (B, H, S, Ev) float32, each with its last axis
    contiguous and any other strides; writes weights (B, H, L, S), C-contiguous, = softmax(scale
    * q k^T) over the keys (0 where masked) and out (B, L, H, Ev), C-contiguous, = weights v:
    out[b, :, h] is item (b, h)'s output."""
    scale = np.float32(scale)
    heads = q.shape[1]
    for item in prange(q.shape[0] * heads):
        b, h = item // heads, item % heads
        # all four indices: the items' matrices have one type (layout "A") whatever the inputs'
        _forward_item(q[b, h, :, :], k[b, h, :, :], v[b, h, :, :], out[b, :, h, :],
                      weights[b, h], scale, causal)  # fmt: skip


@helper
def _grad_item(grad, q, k, v, p, dq_out, dk_out, dv_out, scale, causal):
    """``attention_grad`` for one item: grad (L, Ev), q (L, E), k (S, E), v (S, Ev), p (L, S) the
    weights; writes dq_out (L, E), dk_out (S, E), dv_out (S, Ev). Each matrix's columns adjacent,
    its rows ``strides[0]`` apart."""
    queries, keys = q.shape[0], k.shape[0]
    features, value_features = q.shape[1], v.shape[1]
    values_t = np.empty((_parts(keys), value_features, PANEL), np.float32)
    grad_panels = np.empty((_parts(value_features), queries, PANEL), np.float32)
    key_panels = np.empty((_parts(features), keys, PANEL), np.float32)
    query_panels = np.empty((_parts(features), queries, PANEL), np.float32)
    ds = np.empty((queries, _parts(keys) * PANEL), np.float32)
    per_row = np.empty(queries, np.float32)
    _pack_rows(v, values_t, _ONE)
    _pack_columns(grad, grad_panels)
    _pack_columns(k, key_panels)
    _pack_columns(q, query_panels)

    dv = _panel_wide(dv_out)
    _by_key_tiles(p, keys, grad_panels, dv, causal)  # P^T G
    _copy_columns(dv, dv_out)

    _query_times_keys(grad, values_t, ds, causal)  # dp = G v^T
    _softmax_grad_rows(ds, p, scale, causal, per_row)

    dq = _panel_wide(dq_out)
    _by_query_tiles(ds, key_panels, dq, causal)
    _copy_columns(dq, dq_out)
    dk = _panel_wide(dk_out)
    _by_key_tiles(ds, keys, query_panels, dk, causal)
    _copy_columns(dk, dk_out)


@kernel
def attention_grad(grad, q, k, v, weights, packed, scale, causal):
    """The gradients of ``attention_forward`` from grad = d(out) (B, H, L, Ev), its last axis
    contiguous and any other strides, q, k, v as there and its weights (B, H, L, S), written to
    packed (B, L*H*E + S*H*E + S*H*Ev), C-contiguous: per batch entry dq (L, H, E), then dk (S,
    H, E), then dv (S, H, Ev), each flattened (dq of head h, query t, feature c at packed[b,
    (t*H + h)*E + c]). With P = weights and G = grad, per item: dv = P^T G, dp = G v^T, ds = P *
    (dp - rowsum(dp * P)), dq = scale ds k, dk = scale ds^T q.
    """
    scale = np.float32(scale)
    heads, queries, keys = q.shape[1], q.shape[2], k.shape[2]
    features, value_features = q.shape[3], v.shape[3]
    dk_start = queries * heads * features
    dv_start = dk_start + keys * heads * features
    for item in prange(q.shape[0] * heads):
        b, h = item // heads, item % heads
        gradients = packed[b]
        dq = gradients[:dk_start].reshape((queries, heads, features))[:, h, :]
        dk = gradients[dk_start:dv_start].reshape((keys, heads, features))[:, h, :]
        dv = gradients[dv_start:].reshape((keys, heads, value_features))[:, h, :]
        _grad_item(grad[b, h, :, :], q[b, h, :, :], k[b, h, :, :], v[b, h, :, :],
                   weights[b, h], dq, dk, dv, scale, causal)  # fmt: skip

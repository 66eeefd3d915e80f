"""The fused attention kernels (``kernels/compiled/attention.py``) against a float64 NumPy
reference of the same formulas, with the causal mask applied as -inf before the softmax: shapes
with one key, queries beyond the keys, fewer queries than keys, a GPT's heads and sizes across
panel edges; operands contiguous or read in place as strided views (a GPT's q, k, v in one
array, heads side by side with gaps between rows); out's (B, L, H, Ev) placement, the packed
gradient's layout, NaN propagation and exact zeros where masked."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("numba")

from buildingai.accel.kernels.compiled.attention import (  # noqa: E402
    attention_forward,
    attention_grad,
)

# (B, H, L, S, E, Ev): the last two cross panel edges with sizes that are not whole panels
SHAPES = [(1, 1, 1, 1, 1, 1), (2, 3, 5, 5, 4, 4), (2, 1, 7, 3, 8, 5), (1, 2, 3, 9, 6, 2)]
SHAPES += [(16, 4, 64, 64, 32, 32), (2, 2, 21, 37, 19, 17), (1, 3, 41, 23, 18, 33)]


def _reference(q, k, v, grad, scale, causal):
    """out (B, H, L, Ev), weights, dq, dk, dv in float64, by the formulas in ``attention_grad``'s
    docstring."""
    q, k, v, grad = (array.astype(np.float64) for array in (q, k, v, grad))
    scores = scale * q @ k.swapaxes(-1, -2)
    if causal:
        queries, keys = scores.shape[-2:]
        scores = np.where(np.tril(np.ones((queries, keys), bool)), scores, -np.inf)
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    p = e / e.sum(axis=-1, keepdims=True)
    dp = grad @ v.swapaxes(-1, -2)
    ds = p * (dp - (dp * p).sum(axis=-1, keepdims=True))
    dq, dk = scale * ds @ k, scale * ds.swapaxes(-1, -2) @ q
    return p @ v, p, dq, dk, p.swapaxes(-1, -2) @ grad


def _inputs(shape, seed=0):
    """q (B, H, L, E), k (B, H, S, E), v (B, H, S, Ev), grad (B, H, L, Ev), C-contiguous."""
    batch, heads, queries, keys, features, value_features = shape
    rng = np.random.default_rng(seed)
    sizes = [(queries, features), (keys, features), (keys, value_features)]
    sizes.append((queries, value_features))
    return [rng.standard_normal((batch, heads) + size).astype(np.float32) for size in sizes]


def _heads_side_by_side(array, gap):
    """``array`` (B, H, n, m) as a view of a NaN-filled (B, n, H, gap + m + gap) array: one
    item's rows H * (m + 2 * gap) apart, each starting ``gap`` floats in (unaligned)."""
    batch, heads, rows, columns = array.shape
    buffer = np.full((batch, rows, heads, columns + 2 * gap), np.nan, np.float32)
    view = buffer[..., gap : gap + columns].transpose(0, 2, 1, 3)
    view[...] = array
    return view


def _laid_out(layout, q, k, v, grad):
    """q, k, v, grad with the same values in ``layout``: "contiguous" as given; "gpt": q, k, v
    as views of one (B, T, 3 H D) array and grad of a (B, T, H D) one, as a GPT's attention
    gets them; "gaps": each heads side by side with NaN between rows (a slice of a wider last
    axis)."""
    if layout == "contiguous":
        return q, k, v, grad
    if layout == "gaps":
        return [_heads_side_by_side(array, gap=1) for array in (q, k, v, grad)]
    batch, heads, steps, features = q.shape
    x = np.empty((batch, steps, 3 * heads * features), np.float32)
    views = [x.reshape(batch, steps, 3, heads, features)[:, :, i].transpose(0, 2, 1, 3)
             for i in range(3)]  # fmt: skip
    for view, array in zip(views, (q, k, v)):
        view[...] = array
    return views + [_heads_side_by_side(grad, gap=0)]


def _forward(q, k, v, scale, causal):
    """out (B, L, H, Ev) and weights (B, H, L, S), both filled with NaN first: every element
    must be written."""
    batch, heads, queries = q.shape[:3]
    keys, value_features = v.shape[2:]
    out = np.full((batch, queries, heads, value_features), np.nan, np.float32)
    weights = np.full((batch, heads, queries, keys), np.nan, np.float32)
    attention_forward(q, k, v, out, weights, scale, causal)
    return out, weights


def _packed_grad(grad, q, k, v, weights, scale, causal):
    """The packed gradients (B, L*H*E + S*H*E + S*H*Ev), filled with NaN first."""
    batch, heads, queries, features = q.shape
    keys, value_features = v.shape[2:]
    size = heads * (queries * features + keys * features + keys * value_features)
    packed = np.full((batch, size), np.nan, np.float32)
    attention_grad(grad, q, k, v, weights, packed, scale, causal)
    return packed


def _unpack(packed, q, v):
    """dq (B, H, L, E), dk (B, H, S, E), dv (B, H, S, Ev) from the packed blocks (L, H, E), (S,
    H, E), (S, H, Ev) of each batch entry."""
    batch, heads, queries, features = q.shape
    keys, value_features = v.shape[2:]
    dk_start = queries * heads * features
    dv_start = dk_start + keys * heads * features
    blocks = [
        packed[:, :dk_start].reshape(batch, queries, heads, features),
        packed[:, dk_start:dv_start].reshape(batch, keys, heads, features),
        packed[:, dv_start:].reshape(batch, keys, heads, value_features),
    ]
    return [block.transpose(0, 2, 1, 3) for block in blocks]


def _assert_close(got, want):
    """float32 against float64: relative 1e-4, absolute 1e-5 of the reference's magnitude."""
    atol = 1e-5 * max(1.0, float(np.abs(want).max()))
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=atol)


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("shape", SHAPES)
def test_forward_and_grad_match_the_reference(shape, causal):
    q, k, v, grad = _inputs(shape)
    for scale in (1 / np.sqrt(shape[4]), 0.7):
        want = _reference(q, k, v, grad, scale, causal)
        out, weights = _forward(q, k, v, scale, causal)
        _assert_close(weights, want[1])
        _assert_close(out, want[0].transpose(0, 2, 1, 3))  # out[b, t, h] is item (b, h)'s row t
        packed = _packed_grad(grad, q, k, v, weights, scale, causal)
        for got, expected in zip(_unpack(packed, q, v), want[2:]):
            _assert_close(got, expected)


# a GPT's q, k and v share one length and one head size
STRIDED = [(shape, "gaps") for shape in SHAPES[1:]]
STRIDED += [(shape, "gpt") for shape in SHAPES[1:] if shape[2] == shape[3] and shape[4] == shape[5]]


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize(("shape", "layout"), STRIDED)
def test_strided_operands_give_the_contiguous_results_exactly(shape, layout, causal):
    """Reading in place through strides changes no sum's order: the same bits as contiguous
    operands, and nothing read from the gaps (NaN there) or written outside the outputs."""
    contiguous = _inputs(shape)
    strided = _laid_out(layout, *contiguous)
    assert not any(array.flags.c_contiguous for array in strided)
    want_out, want_weights = _forward(*contiguous[:3], 0.3, causal)
    out, weights = _forward(*strided[:3], 0.3, causal)
    np.testing.assert_array_equal(out, want_out)
    np.testing.assert_array_equal(weights, want_weights)
    want = _packed_grad(contiguous[3], *contiguous[:3], want_weights, 0.3, causal)
    packed = _packed_grad(strided[3], *strided[:3], weights, 0.3, causal)
    np.testing.assert_array_equal(packed, want)


def test_gpt_layout_matches_the_reference():
    """A GPT's shapes and layout against the reference itself (not only the contiguous run)."""
    shape = (16, 4, 64, 64, 32, 32)
    inputs = _inputs(shape, seed=2)
    q, k, v, grad = _laid_out("gpt", *inputs)
    want = _reference(*inputs, 0.25, True)
    out, weights = _forward(q, k, v, 0.25, True)
    _assert_close(out.reshape(16, 64, 128), want[0].transpose(0, 2, 1, 3).reshape(16, 64, 128))
    packed = _packed_grad(grad, q, k, v, weights, 0.25, True)
    for got, expected in zip(_unpack(packed, q, v), want[2:]):
        _assert_close(got, expected)


def test_packed_gradients_lie_at_their_documented_places():
    """Different sizes for each block, placed by the docstring's formulas element by element:
    dq of head h, query t, feature c at packed[b, (t*H + h)*E + c], then dk, then dv."""
    shape = (2, 3, 3, 5, 4, 7)
    batch, heads, queries, keys, features, value_features = shape
    q, k, v, grad = _inputs(shape, seed=1)
    _, weights = _forward(q, k, v, 0.5, False)
    packed = _packed_grad(grad, q, k, v, weights, 0.5, False)
    _, _, dq, dk, dv = _reference(q, k, v, grad, 0.5, False)
    expected = np.full(packed.shape, np.nan)
    dk_start = queries * heads * features
    dv_start = dk_start + keys * heads * features
    for b in range(batch):
        for h in range(heads):
            for t in range(queries):
                for c in range(features):
                    expected[b, (t * heads + h) * features + c] = dq[b, h, t, c]
            for s in range(keys):
                for c in range(features):
                    expected[b, dk_start + (s * heads + h) * features + c] = dk[b, h, s, c]
                for c in range(value_features):
                    at = dv_start + (s * heads + h) * value_features + c
                    expected[b, at] = dv[b, h, s, c]
    assert not np.isnan(expected).any()
    _assert_close(packed, expected)


def test_out_lies_heads_side_by_side():
    """out[b, t, h, :] is item (b, h)'s output row t, with distinct sizes on every axis."""
    shape = (2, 3, 4, 5, 6, 7)
    q, k, v, grad = _inputs(shape, seed=3)
    out, _ = _forward(q, k, v, 0.5, True)
    want = _reference(q, k, v, grad, 0.5, True)[0]
    for b in range(2):
        for h in range(3):
            for t in range(4):
                _assert_close(out[b, t, h], want[b, h, t])


@pytest.mark.parametrize("layout", ["contiguous", "gpt", "gaps"])
def test_masked_weights_are_exactly_zero(layout):
    q, k, v, grad = _laid_out(layout, *_inputs((2, 3, 7, 7, 8, 8)))
    _, weights = _forward(q, k, v, 0.5, True)
    allowed = np.tril(np.ones((7, 7), bool))
    assert np.all(weights[:, :, ~allowed] == 0)
    assert np.all(weights[:, :, allowed] > 0)
    np.testing.assert_allclose(weights.sum(axis=-1), 1, rtol=1e-6)


def test_masked_weights_are_exactly_zero_with_queries_beyond_the_keys():
    q, k, v, _ = _inputs((2, 3, 7, 3, 8, 5))
    _, weights = _forward(q, k, v, 0.5, True)
    allowed = np.tril(np.ones((7, 3), bool))
    assert np.all(weights[:, :, ~allowed] == 0)
    assert np.all(weights[:, :, allowed] > 0)


@pytest.mark.parametrize("causal", [False, True])
def test_nan_in_a_query_row_reaches_that_rows_outputs_only(causal):
    q, k, v, grad = _inputs((3, 2, 6, 6, 4, 3))
    q[1, 0, 2, 0] = np.nan
    want = _reference(q, k, v, grad, 0.5, causal)
    out, weights = _forward(q, k, v, 0.5, causal)
    used = 3 if causal else 6
    assert np.isnan(out[1, 2, 0]).all() and np.isnan(weights[1, 0, 2, :used]).all()
    rows = np.ones((3, 6, 2), bool)  # (B, L, H) as out
    rows[1, 2, 0] = False
    _assert_close(out[rows], want[0].transpose(0, 2, 1, 3)[rows])
    _assert_close(weights[rows.transpose(0, 2, 1)], want[1][rows.transpose(0, 2, 1)])
    dq, dk, dv = _unpack(_packed_grad(grad, q, k, v, weights, 0.5, causal), q, v)
    assert np.isnan(dq[1, 0, 2]).all()
    items = np.ones((3, 2), bool)
    items[1, 0] = False
    for got, expected in zip((dq, dk, dv), want[2:]):
        _assert_close(got[items], expected[items])  # the other items are untouched

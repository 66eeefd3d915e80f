"""The fused attention kernels (``kernels/compiled/attention.py``) against a float64 NumPy
reference of the same formulas, with the causal mask applied as -inf before the softmax: shapes
with one key, queries beyond the keys, fewer queries than keys and a GPT head's size, and NaN
propagation and the packed gradient's layout."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("numba")

from buildingai.accel.kernels.compiled.attention import (  # noqa: E402
    attention_forward,
    attention_grad,
)

# (N, L, S, E, Ev): the last two cross panel edges with sizes that are not whole panels
SHAPES = [(1, 1, 1, 1, 1), (3, 5, 5, 4, 4), (2, 7, 3, 8, 5), (2, 3, 9, 6, 2), (64, 64, 64, 32, 32)]
SHAPES += [(2, 21, 37, 19, 17), (3, 41, 23, 18, 33)]


def _reference(q, k, v, grad, scale, causal):
    """out, weights, dq, dk, dv in float64, by the formulas in ``attention_grad``'s docstring."""
    q, k, v, grad = (array.astype(np.float64) for array in (q, k, v, grad))
    scores = scale * q @ k.transpose(0, 2, 1)
    if causal:
        queries, keys = scores.shape[1:]
        scores = np.where(np.tril(np.ones((queries, keys), bool)), scores, -np.inf)
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    p = e / e.sum(axis=-1, keepdims=True)
    dp = grad @ v.transpose(0, 2, 1)
    ds = p * (dp - (dp * p).sum(axis=-1, keepdims=True))
    return p @ v, p, scale * ds @ k, scale * ds.transpose(0, 2, 1) @ q, p.transpose(0, 2, 1) @ grad


def _inputs(shape, seed=0):
    n, queries, keys, features, value_features = shape
    rng = np.random.default_rng(seed)
    sizes = [(n, queries, features), (n, keys, features), (n, keys, value_features)]
    sizes.append((n, queries, value_features))
    return [rng.standard_normal(size).astype(np.float32) for size in sizes]


def _forward(q, k, v, scale, causal):
    """out and weights, both filled with NaN first: every element must be written."""
    out = np.full(q.shape[:2] + v.shape[2:], np.nan, np.float32)
    weights = np.full(q.shape[:2] + k.shape[1:2], np.nan, np.float32)
    attention_forward(q, k, v, out, weights, scale, causal)
    return out, weights


def _grad(grad, q, k, v, weights, scale, causal):
    """dq (N, L, E), dk (N, S, E), dv (N, S, Ev): the blocks of the packed result, which is
    filled with NaN first."""
    n, queries, features = q.shape
    keys, value_features = v.shape[1:]
    packed = np.full((n, queries * features + keys * features + keys * value_features), np.nan,
                     np.float32)  # fmt: skip
    attention_grad(grad, q, k, v, weights, packed, scale, causal)
    dk_start = queries * features
    dv_start = dk_start + keys * features
    return (
        packed[:, :dk_start].reshape(n, queries, features),
        packed[:, dk_start:dv_start].reshape(n, keys, features),
        packed[:, dv_start:].reshape(n, keys, value_features),
    )


def _assert_close(got, want):
    """float32 against float64: relative 1e-4, absolute 1e-5 of the reference's magnitude."""
    atol = 1e-5 * max(1.0, float(np.abs(want).max()))
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=atol)


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("shape", SHAPES)
def test_forward_and_grad_match_the_reference(shape, causal):
    q, k, v, grad = _inputs(shape)
    for scale in (1 / np.sqrt(shape[3]), 0.7):
        want = _reference(q, k, v, grad, scale, causal)
        out, weights = _forward(q, k, v, scale, causal)
        _assert_close(weights, want[1])
        _assert_close(out, want[0])
        for got, expected in zip(_grad(grad, q, k, v, weights, scale, causal), want[2:]):
            _assert_close(got, expected)


def test_masked_weights_are_exactly_zero():
    q, k, v, _ = _inputs((2, 7, 3, 8, 5))
    _, weights = _forward(q, k, v, 0.5, True)
    allowed = np.tril(np.ones((7, 3), bool))
    assert np.all(weights[:, ~allowed] == 0)
    assert np.all(weights[:, allowed] > 0)
    np.testing.assert_allclose(weights.sum(axis=-1), 1, rtol=1e-6)


@pytest.mark.parametrize("causal", [False, True])
def test_nan_in_a_query_row_reaches_that_rows_outputs_only(causal):
    q, k, v, grad = _inputs((3, 6, 6, 4, 3))
    q[1, 2, 0] = np.nan
    want = _reference(q, k, v, grad, 0.5, causal)
    out, weights = _forward(q, k, v, 0.5, causal)
    used = 3 if causal else 6
    assert np.isnan(out[1, 2]).all() and np.isnan(weights[1, 2, :used]).all()
    rows = np.ones(q.shape[:2], bool)
    rows[1, 2] = False
    _assert_close(out[rows], want[0][rows])
    _assert_close(weights[rows], want[1][rows])
    dq, dk, dv = _grad(grad, q, k, v, weights, 0.5, causal)
    assert np.isnan(dq[1, 2]).all()
    for got, expected in zip((dq, dk, dv), want[2:]):
        _assert_close(got[[0, 2]], expected[[0, 2]])  # the other items are untouched


def test_packed_blocks_are_dq_then_dk_then_dv():
    """Different sizes for each block: each lands at its documented offset."""
    shape = (2, 3, 5, 4, 7)
    q, k, v, grad = _inputs(shape, seed=1)
    _, weights = _forward(q, k, v, 0.5, False)
    n, queries, keys, features, value_features = shape
    packed = np.empty((n, queries * features + keys * features + keys * value_features), np.float32)
    attention_grad(grad, q, k, v, weights, packed, 0.5, False)
    _, _, dq, dk, dv = _reference(q, k, v, grad, 0.5, False)
    expected = np.concatenate([dq.reshape(n, -1), dk.reshape(n, -1), dv.reshape(n, -1)], axis=1)
    _assert_close(packed, expected)

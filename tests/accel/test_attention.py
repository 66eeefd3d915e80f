"""attention's registered kernels (``accel/attention.py``) and their compiled twins
(``kernels/compiled/attention.py``): the accelerated ops against their records (values, the
kept weights, gradients, second derivatives) in float32 and float64, the twins against their
NumPy kernels at one and two threads, and the kernels' refusals (the float32 error against
PyTorch's own is in test_float32_accuracy.py)."""

from __future__ import annotations

import functools

import numpy as np
import pytest

import buildingai as bai
from buildingai.accel import attention as kernels
from buildingai.accel.kernels import compiled
from buildingai.nn import functional as F
from buildingai.ops.attention import ATTENTION

# the twins compared here (for test_compiled.py's check that every twin has a comparison)
CASES = {"attention_forward", "attention_grad"}

# (q, k, v) shapes: heads, L = S, L > S (causal rows past S see every key), L < S, one item
SHAPES = [
    ((2, 3, 8, 4), (2, 3, 8, 4), (2, 3, 8, 4)),
    ((3, 7, 5), (3, 4, 5), (3, 4, 6)),
    ((2, 3, 6), (2, 9, 6), (2, 9, 2)),
    ((1, 1, 1), (1, 1, 1), (1, 1, 1)),
    ((16, 4, 64, 32), (16, 4, 64, 32), (16, 4, 64, 32)),
]


def _operands(shapes, dtype, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(shape).astype(dtype) for shape in shapes]


def _attention_and_gradients(arrays, causal, accelerated, create_graph=False):
    """out and the gradients of (out * r).sum() in q, k, v (and, with ``create_graph``, the
    gradients of the first gradients' weighted sum: second derivatives)."""
    with bai.accel.enabled(accelerated):
        inputs = [bai.Tensor(a, requires_grad=True) for a in arrays]
        out = F.scaled_dot_product_attention(*inputs, is_causal=causal)
        upstream = np.random.default_rng(1).standard_normal(out.shape).astype(out.dtype)
        grads = bai.grad(out, inputs, grad_outputs=bai.Tensor(upstream), create_graph=create_graph)
        results = [out.numpy(), *(g.numpy() for g in grads)]
        if create_graph:
            total = sum((g * g).sum() for g in grads)
            results += [g.numpy() for g in bai.grad(total, inputs)]
    return results


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("shapes", SHAPES[:4])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_accelerated_attention_matches_the_record(shapes, causal, dtype):
    arrays = _operands(shapes, dtype)
    reference = _attention_and_gradients(arrays, causal, accelerated=False, create_graph=True)
    accelerated = _attention_and_gradients(arrays, causal, accelerated=True, create_graph=True)
    tolerance = 2e-5 if dtype == np.float32 else 1e-12
    for expected, got in zip(reference, accelerated):
        assert got.dtype == expected.dtype
        np.testing.assert_allclose(got, expected, rtol=tolerance, atol=tolerance)


def test_the_kernel_keeps_the_weights_the_backward_reads(accel_on):
    q, k, v = _operands(SHAPES[0], np.float32)
    tensors = [bai.Tensor(a, requires_grad=True) for a in (q, k, v)]
    out = ATTENTION(*tensors, scale=0.5, causal=True)
    weights = out.grad_fn.weights  # the node is the ctx the forward wrote to
    scores = (q * np.float32(0.5)) @ np.swapaxes(k, -1, -2)
    scores = np.where(np.tri(8, 8, dtype=bool), scores, -np.inf)
    expected = np.exp(scores - scores.max(-1, keepdims=True))
    expected /= expected.sum(-1, keepdims=True)
    np.testing.assert_allclose(weights, expected, rtol=2e-5, atol=1e-6)


def _twin_against_kernel(kernel, arrays, outputs, **params):
    """The twin's outputs and the NumPy kernel's on the same items."""
    bound = functools.partial(kernel, **params)
    expected = [np.empty_like(o) for o in outputs]
    kernel(np, *arrays, *expected, **params)
    got = [np.empty_like(o) for o in outputs]
    assert compiled.run(bound, [*arrays, *got]), "the twin did not run"
    return expected, got


def _entries(shapes, seed=0, strided=False):
    """(B, H, rows, columns) float32 stacks of the operands; ``strided``: views into wider
    arrays, rows apart by more than their length, as a model's split projection gives."""
    stacks = []
    for array in _operands(shapes, np.float32, seed):
        stack = array if array.ndim == 4 else array.reshape(len(array), 1, *array.shape[-2:])
        if strided:  # (B, H, L, E) views of (B, L, H, E + 3) memory
            count, heads, rows, columns = stack.shape
            wider = np.zeros((count, rows, heads, columns + 3), np.float32)
            view = wider.swapaxes(1, 2)[..., 1 : 1 + columns]
            view[...] = stack
            stack = view
        stacks.append(stack)
    return stacks


@pytest.mark.parametrize("strided", [False, True])
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("shapes", SHAPES)
def test_twins_match_their_numpy_kernels(shapes, causal, threads, strided, accel_on):
    pytest.importorskip("numba")
    bai.set_num_threads(threads)
    try:
        q, k, v = _entries(shapes, strided=strided)
        count, heads, length = q.shape[:3]
        source = k.shape[2]
        params = {"scale": 0.35, "causal": causal}
        outputs = [np.empty((count, length, heads, v.shape[3]), np.float32)]
        outputs.append(np.empty((count, heads, length, source), np.float32))
        expected, got = _twin_against_kernel(kernels._forward_entries, [q, k, v], outputs, **params)
        for reference, twin in zip(expected, got):
            np.testing.assert_allclose(twin, reference, rtol=2e-5, atol=2e-6)
        weights = expected[1]
        grad = np.random.default_rng(2).standard_normal(q.shape[:3] + v.shape[3:])
        grad = grad.astype(np.float32)
        width = heads * (length * q.shape[3] + source * (k.shape[3] + v.shape[3]))
        packed = [np.empty((count, width), np.float32)]
        expected, got = _twin_against_kernel(
            kernels._gradient_entries, [grad, q, k, v, weights], packed, **params
        )
        np.testing.assert_allclose(got[0], expected[0], rtol=2e-5, atol=2e-5)
    finally:
        bai.set_num_threads(None)


def test_outputs_keep_each_positions_heads_together(accel_on):
    """The forward's output and the gradients are (B, H, L, E) views of (B, L, H, E) memory,
    so a model's head merge (transpose(1, 2).contiguous().view(B, L, H * E)) copies nothing."""
    q, k, v = (bai.Tensor(a, requires_grad=True) for a in _operands(SHAPES[0], np.float32))
    out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    assert out.transpose(1, 2).numpy().flags.c_contiguous
    grads = bai.grad(out, [q, k, v], grad_outputs=bai.ones(out.shape))
    assert all(g.transpose(1, 2).numpy().flags.c_contiguous for g in grads)


@pytest.mark.parametrize(
    "arrays",
    [
        [np.ones((2, 3, 4), np.float16)] * 3,  # float16: the record computes it
        [np.ones((2, 3, 4), np.float32), np.ones((2, 3, 4)), np.ones((2, 3, 4), np.float32)],
        [np.ones((0, 3, 4), np.float32)] * 3,  # no items
    ],
)
def test_kernels_leave_other_arrays_to_the_record(arrays):
    assert kernels._as_entries(*arrays) is None


@pytest.mark.parametrize("causal", [False, True])
def test_a_lower_math_precision_leaves_attention_to_the_record(causal):
    """Under set_float32_matmul_precision("medium") the record rounds its products' operands to
    bfloat16; the kernels, which multiply in float32, leave such calls to it: accelerated or
    not, the same values and gradients."""
    arrays = _operands(SHAPES[0], np.float32)
    bai.set_float32_matmul_precision("medium")
    try:
        accelerated, record = (_attention_and_gradients(arrays, causal, on) for on in (True, False))
    finally:
        bai.set_float32_matmul_precision("highest")
    for ours, theirs in zip(accelerated, record):
        np.testing.assert_array_equal(ours, theirs)
    full = _attention_and_gradients(arrays, causal, True)
    assert np.abs(accelerated[0] - full[0]).max() > 1e-4  # the rounding shows


def test_non_contiguous_operands_are_taken_as_copies(accel_on):
    q, k, v = _operands(SHAPES[0], np.float32)
    views = [bai.Tensor(np.swapaxes(a, 1, 2).copy()).transpose(1, 2) for a in (q, k, v)]
    out = F.scaled_dot_product_attention(*views, is_causal=True)
    with bai.accel.enabled(False):
        reference = F.scaled_dot_product_attention(
            *(bai.Tensor(a) for a in (q, k, v)), is_causal=True
        )
    np.testing.assert_allclose(out.numpy(), reference.numpy(), rtol=2e-5, atol=1e-6)

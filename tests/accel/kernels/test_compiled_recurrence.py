"""The compiled LSTM, GRU and Elman RNN steps and time loops (``kernels/compiled/recurrence.py``)
against their NumPy references (``kernels/lstm_steps.py``, ``gru_steps.py``, ``elman_steps.py``),
and the float32 tanh they use against libm."""

from __future__ import annotations

import numpy as np
import pytest

from buildingai.accel import recurrence
from buildingai.accel.kernels import compiled, elman_steps, gru_steps
from buildingai.accel.kernels import lstm_steps as steps

pytest.importorskip("numba")

# the twins this file compares, for test_compiled's check that every twin is compared somewhere
CASES = {"lstm_forward_step", "lstm_backward_step", "lstm_forward_loop", "lstm_backward_loop"}
CASES |= {"gru_forward_step", "gru_backward_step", "gru_forward_loop", "gru_backward_loop"}
CASES |= {"rnn_forward_step", "rnn_backward_step", "rnn_forward_loop", "rnn_backward_loop"}
LENGTH, BATCH, SIZE = 5, 3, 16


@pytest.fixture(autouse=True)
def _accelerated(accel_on):
    """Twins run only while acceleration is on."""


def _forward_inputs(rng, reverse):
    gates_x = (rng.standard_normal((LENGTH, BATCH, 4 * SIZE)) * 2).astype(np.float32)
    h0, c0 = (rng.standard_normal((2, BATCH, SIZE))).astype(np.float32)
    w_hh_t = (rng.standard_normal((SIZE, 4 * SIZE)) * 0.3).astype(np.float32)
    bias = rng.standard_normal(4 * SIZE).astype(np.float32)
    recurrent = np.empty((BATCH, 4 * SIZE), np.float32)
    acts = np.empty((LENGTH, BATCH, 4 * SIZE), np.float32)
    states = np.empty((LENGTH, BATCH, 2 * SIZE), np.float32)
    return [gates_x, h0, c0, _blocks(w_hh_t, 16), bias, recurrent, acts, states, reverse]


def _blocks(matrix, width):
    """``matrix`` (k, n) as its column blocks (n / width, k, width), as the loops take it."""
    inner, columns = matrix.shape
    blocks = matrix.reshape(inner, columns // width, width).transpose(1, 0, 2)
    return np.ascontiguousarray(blocks)


def test_column_blocks_join_back_to_the_matrix():
    matrix = np.arange(12 * 64, dtype=np.float32).reshape(12, 64)
    for rows in (1, 32, 4096):
        blocks = recurrence._column_blocks(matrix, rows)
        assert blocks.flags.c_contiguous and blocks.shape[1] == 12
        np.testing.assert_array_equal(steps.joined(blocks), matrix)


@pytest.mark.parametrize("parts", [1, 2])
@pytest.mark.parametrize("reverse", [False, True])
def test_forward_loop_and_steps_match_the_numpy_loop(reverse, parts):
    expected = _forward_inputs(np.random.default_rng(0), reverse)
    steps.lstm_forward_loop(np, None, *expected, parts)
    got = _forward_inputs(np.random.default_rng(0), reverse)
    compiled.twin_of(steps.lstm_forward_loop)(recurrence._sgemm(), *got, parts)
    for reference, twin in zip(expected[6:8], got[6:8]):  # acts, states
        np.testing.assert_allclose(twin, reference, rtol=2e-6, atol=2e-6)


@pytest.mark.parametrize("parts", [1, 2])
@pytest.mark.parametrize("reverse", [False, True])
def test_backward_loop_and_steps_match_the_numpy_loop(reverse, parts):
    rng = np.random.default_rng(1)
    forward = _forward_inputs(rng, reverse)
    steps.lstm_forward_loop(np, None, *forward, 1)
    acts, states, c0 = forward[6], forward[7], forward[2]
    w_hh = _blocks(np.ascontiguousarray(steps.joined(forward[3]).T), 8)
    grad = rng.standard_normal((LENGTH, BATCH, 2 * SIZE)).astype(np.float32)
    results = []
    for run in (
        lambda *a: steps.lstm_backward_loop(np, None, *a),
        lambda *a: compiled.twin_of(steps.lstm_backward_loop)(recurrence._sgemm(), *a),
    ):
        out = np.empty((LENGTH, BATCH, 5 * SIZE), np.float32)
        scratch = [np.full((BATCH, SIZE), np.nan, np.float32) for _ in range(2)]  # zeroed there
        run(grad, acts, states, c0, w_hh, *scratch, out, reverse, parts)
        results.append(out)
    np.testing.assert_allclose(results[1], results[0], rtol=2e-6, atol=2e-6)


def _gru_forward_inputs(rng, reverse):
    gates_x = (rng.standard_normal((LENGTH, BATCH, 3 * SIZE)) * 2).astype(np.float32)
    h0 = rng.standard_normal((BATCH, SIZE)).astype(np.float32)
    w_hh_t = (rng.standard_normal((SIZE, 3 * SIZE)) * 0.3).astype(np.float32)
    bias = rng.standard_normal(3 * SIZE).astype(np.float32)
    recurrent = np.empty((BATCH, 3 * SIZE), np.float32)
    out = np.empty((LENGTH, BATCH, SIZE), np.float32)
    return [gates_x, h0, _blocks(w_hh_t, 16), bias, recurrent, out, reverse]


@pytest.mark.parametrize("parts", [1, 2])
@pytest.mark.parametrize("reverse", [False, True])
def test_gru_forward_loop_and_steps_match_the_numpy_loop(reverse, parts):
    expected = _gru_forward_inputs(np.random.default_rng(2), reverse)
    gru_steps.gru_forward_loop(np, None, *expected, parts)
    got = _gru_forward_inputs(np.random.default_rng(2), reverse)
    compiled.twin_of(gru_steps.gru_forward_loop)(recurrence._sgemm(), *got, parts)
    np.testing.assert_allclose(got[5], expected[5], rtol=2e-6, atol=2e-6)


@pytest.mark.parametrize("parts", [1, 2])
@pytest.mark.parametrize("reverse", [False, True])
def test_gru_backward_loop_and_steps_match_the_numpy_loop(reverse, parts):
    rng = np.random.default_rng(3)
    grad = rng.standard_normal((LENGTH, BATCH, SIZE)).astype(np.float32)
    coefficients = rng.standard_normal((LENGTH, BATCH, 4 * SIZE)).astype(np.float32)
    w_hh = _blocks((rng.standard_normal((3 * SIZE, SIZE)) * 0.3).astype(np.float32), 8)
    results = []
    for run in (
        lambda *a: gru_steps.gru_backward_loop(np, None, *a),
        lambda *a: compiled.twin_of(gru_steps.gru_backward_loop)(recurrence._sgemm(), *a),
    ):
        out = np.empty((LENGTH, BATCH, SIZE), np.float32)
        carry, product = (np.full((BATCH, SIZE), np.nan, np.float32) for _ in range(2))
        hidden = np.full((BATCH, 3 * SIZE), np.nan, np.float32)  # scratch, zeroed there
        run(grad, coefficients, w_hh, carry, product, hidden, out, reverse, parts)
        results.append(out)
    # gradients grow to about 30 here: the products' summation orders differ (NumPy's GEMM
    # against one sgemm per column block)
    np.testing.assert_allclose(results[1], results[0], rtol=2e-5, atol=2e-5)


def _rnn_forward_inputs(rng, reverse, relu):
    gates_x = (rng.standard_normal((LENGTH, BATCH, SIZE)) * 2).astype(np.float32)
    h0 = rng.standard_normal((BATCH, SIZE)).astype(np.float32)
    w_hh_t = (rng.standard_normal((SIZE, SIZE)) * 0.3).astype(np.float32)
    bias = rng.standard_normal(SIZE).astype(np.float32)
    recurrent = np.empty((BATCH, SIZE), np.float32)
    out = np.empty((LENGTH, BATCH, SIZE), np.float32)
    return [gates_x, h0, _blocks(w_hh_t, 8), bias, recurrent, out, reverse, relu]


@pytest.mark.parametrize("parts", [1, 2])
@pytest.mark.parametrize("relu", [False, True])
@pytest.mark.parametrize("reverse", [False, True])
def test_rnn_loops_and_steps_match_the_numpy_loops(reverse, relu, parts):
    expected = _rnn_forward_inputs(np.random.default_rng(4), reverse, relu)
    elman_steps.rnn_forward_loop(np, None, *expected, parts)
    got = _rnn_forward_inputs(np.random.default_rng(4), reverse, relu)
    compiled.twin_of(elman_steps.rnn_forward_loop)(recurrence._sgemm(), *got, parts)
    np.testing.assert_allclose(got[5], expected[5], rtol=2e-6, atol=2e-6)
    states = expected[5]
    rng = np.random.default_rng(5)
    grad = rng.standard_normal((LENGTH, BATCH, SIZE)).astype(np.float32)
    w_hh = _blocks(np.ascontiguousarray(steps.joined(expected[2]).T), 4)
    results = []
    for run in (
        lambda *a: elman_steps.rnn_backward_loop(np, None, *a),
        lambda *a: compiled.twin_of(elman_steps.rnn_backward_loop)(recurrence._sgemm(), *a),
    ):
        out = np.empty((LENGTH, BATCH, SIZE), np.float32)
        product = np.full((BATCH, SIZE), np.nan, np.float32)  # scratch, zeroed there
        run(grad, states, w_hh, product, out, reverse, relu, parts)
        results.append(out)
    np.testing.assert_allclose(results[1], results[0], rtol=2e-6, atol=2e-6)


def test_tanh32_is_within_a_few_units_in_the_last_place():
    from numba import njit

    from buildingai.accel.kernels.compiled.expf import tanh32

    @njit
    def tanh_all(x, out):
        for i in range(x.size):
            out[i] = tanh32(x[i])

    x = np.concatenate(
        [
            np.linspace(-12, 12, 200_001, dtype=np.float32),
            np.float32([0.0, -0.0, 1e-30, -1e-30, 0.6249, 0.625, 0.6251, 50, -50]),
        ]
    )
    out = np.empty_like(x)
    tanh_all(x, out)
    exact = np.tanh(x.astype(np.float64))
    ulp = np.spacing(np.abs(exact).astype(np.float32)).astype(np.float64)
    assert np.max(np.abs(out - exact) / ulp) <= 4
    special = np.float32([np.nan, np.inf, -np.inf])
    out = np.empty_like(special)
    tanh_all(special, out)
    assert np.isnan(out[0]) and out[1] == 1 and out[2] == -1


# ----- one cell step ------------------------------------------------------------------------------

CASES |= {"lstm_cell_forward", "lstm_cell_backward", "gru_cell_forward", "gru_cell_backward"}
CELL_KERNELS = [
    (steps.lstm_cell_forward, 4, None, 2),
    (steps.lstm_cell_backward, 4, 2, 5),
    (gru_steps.gru_cell_forward, 3, None, 1),
    (gru_steps.gru_cell_backward, 3, 1, 7),
]


@pytest.mark.parametrize(
    ("kernel", "gates", "grad_width", "width"),
    CELL_KERNELS,
    ids=lambda v: getattr(v, "__name__", ""),
)
@pytest.mark.parametrize("strided", [False, True], ids=["contiguous", "strided state"])
def test_cell_twins_match_their_numpy_kernels(kernel, gates, grad_width, width, strided):
    rng = np.random.default_rng(3)
    gates_x, gates_h = (rng.standard_normal((2, BATCH, gates * SIZE)) * 2).astype(np.float32)
    state = rng.standard_normal((BATCH, 2 * SIZE)).astype(np.float32)
    state = state[:, SIZE:] if strided else np.ascontiguousarray(state[:, SIZE:])
    arrays = [gates_x, gates_h, state]
    if gates == 4:  # the LSTM cell's biases
        arrays[2:2] = list(rng.standard_normal((2, gates * SIZE)).astype(np.float32))
    if grad_width is not None:
        arrays.insert(0, rng.standard_normal((BATCH, grad_width * SIZE)).astype(np.float32))
    expected = np.full((BATCH, width * SIZE), np.nan, np.float32)
    kernel(np, *arrays, expected)
    got = np.full((BATCH, width * SIZE), np.nan, np.float32)
    compiled.twin_of(kernel)(*arrays, got)
    np.testing.assert_allclose(got, expected, rtol=2e-6, atol=2e-6)


CASES |= {"rnn_cell_forward", "rnn_cell_backward"}


@pytest.mark.parametrize("relu", [False, True], ids=["tanh", "relu"])
def test_elman_cell_twins_match_their_numpy_kernels(relu):
    rng = np.random.default_rng(4)
    gates_x, gates_h = (rng.standard_normal((2, BATCH, SIZE)) * 2).astype(np.float32)
    gates_x[0, :3] = [np.nan, 0.0, -0.0]  # NaN stays NaN; relu keeps the zeros' signs
    gates_h[0, :3] = 0.0
    b_ih, b_hh = rng.standard_normal((2, SIZE)).astype(np.float32)
    b_ih[:3] = b_hh[:3] = 0.0
    grad = rng.standard_normal((BATCH, SIZE)).astype(np.float32)
    forward, backward = elman_steps.rnn_cell_forward, elman_steps.rnn_cell_backward
    results = []
    for run in (lambda k, *a: k(np, *a), lambda k, *a: compiled.twin_of(k)(*a)):
        h = np.full((BATCH, SIZE), np.inf, np.float32)
        run(forward, gates_x, gates_h, b_ih, b_hh, h, relu)
        grad_pre = np.full((BATCH, SIZE), np.inf, np.float32)
        run(backward, grad, h, grad_pre, relu)
        results.append((h, grad_pre))
    (h, grad_pre), (twin_h, twin_grad_pre) = results
    tolerance = 0.0 if relu else 2e-6  # the twin's tanh32 against NumPy's tanh
    np.testing.assert_allclose(twin_h, h, rtol=tolerance, atol=tolerance)
    np.testing.assert_allclose(twin_grad_pre, grad_pre, rtol=tolerance, atol=tolerance)
    if relu:
        assert np.array_equal(np.signbit(twin_h), np.signbit(h))

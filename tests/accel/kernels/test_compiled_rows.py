"""The compiled twins of the row kernels (softmax, log_softmax, layer normalisation,
cross-entropy) against their NumPy references (``accel/rows.py``) on random rows with edge rows
(NaN, +-inf, rows of -inf only, large magnitudes), and the ops that use them, with acceleration
on, against PyTorch, forward and backward, at one and two threads."""

from __future__ import annotations

import functools

import numpy as np
import pytest

import buildingai as bai
from buildingai.accel import rows as row_kernels
from buildingai.accel.kernels import compiled, row_reduce
from buildingai.nn import functional as F

pytest.importorskip("numba")


@pytest.fixture(autouse=True)
def _accelerated(accel_on):
    """The ops below run their registered row kernels."""


# (rows, n): n = 1, odd and even sizes, long rows; the last ones above compiled.MIN_PARALLEL_WORK
SHAPES = [(7, 1), (9, 3), (16, 64), (33, 127), (6, 5000), (600, 129), (2000, 64)]


def _logits(rng, rows, n, edges=True):
    """Random rows, the first ones edge cases: NaN, +inf, some -inf, only -inf, huge values."""
    x = (rng.standard_normal((rows, n)) * 3).astype(np.float32)
    if edges and rows >= 6:
        x[0, n // 2] = np.nan
        x[1, n // 3] = np.inf
        x[2, ::2] = -np.inf
        x[2, -1] = 0.5 if n > 1 else x[2, -1]
        x[3, :] = -np.inf
        x[4] *= np.float32(1e4)
        x[5] -= np.float32(1e3)
    return x


def _normal_rows(rng, rows, n, edges=True):
    """Random rows for normalisation: NaN, inf, large and offset rows first."""
    x = rng.standard_normal((rows, n)).astype(np.float32)
    if edges and rows >= 6:
        x[0, n // 2] = np.nan
        x[1, n // 3] = np.inf
        x[2] *= np.float32(1e15)
        x[3] += np.float32(10.0)  # offset: the mean cancels (more and both round differently)
        x[4] = 2.5  # a constant row: variance 0
    return x


def _grad(rng, rows, n):
    return rng.standard_normal((rows, n)).astype(np.float32)


def _reference(kernel, *arrays, **params):
    with np.errstate(all="ignore"):
        (functools.partial(kernel, **params) if params else kernel)(np, *arrays)


def _softmax_of(x):
    out = np.empty_like(x)
    _reference(row_kernels._softmax_kernel, x, out)
    return out


def _standardized(x):
    out, rstd = np.empty_like(x), np.empty((len(x), 1), np.float32)
    _reference(row_kernels._standardize_rows, x, out, rstd, eps=1e-5)
    return out, rstd


def _row(rows, columns=1):
    return np.empty((rows, columns), np.float32)


# twin name -> (NumPy reference, make(rng, rows, n) -> (inputs, outputs, params), tolerance).
# Tolerances are relative to the largest magnitude of the reference's row (at least 1 for
# log_softmax's values and the layer norm gradients, whose rows cancel): the twins' exp is within
# a few ulps of NumPy's, their sums run in another order, FMAs round once where NumPy rounds twice.
def _case_softmax(rng, rows, n):
    return [_logits(rng, rows, n)], [_row(rows, n)], {}


def _case_softmax_shifted(rng, rows, n):
    x = _logits(rng, rows, n, edges=False)
    return [x], [_row(rows, n)], {"shift": x.max()}


def _case_softmax_grad(rng, rows, n):
    return [_grad(rng, rows, n), _softmax_of(_logits(rng, rows, n))], [_row(rows, n)], {}


def _case_log_softmax_grad(rng, rows, n):
    out = np.empty((rows, n), np.float32)
    _reference(row_kernels._log_softmax_kernel, _logits(rng, rows, n, edges=False), out)
    grad = _grad(rng, rows, n)
    if rows >= 2:
        grad[0, 0], out[1, 0] = np.nan, np.nan
    return [grad, out], [_row(rows, n)], {}


def _case_standardize(rng, rows, n):
    return [_normal_rows(rng, rows, n)], [_row(rows, n), _row(rows)], {"eps": 1e-5}


def _case_layer_norm(rng, rows, n):
    weight, bias = _grad(rng, 1, n)[0], _grad(rng, 1, n)[0]
    outputs = [_row(rows, n), _row(rows, n), _row(rows)]
    params = {"weight": weight, "bias": bias if n % 2 else None, "eps": 1e-5}
    return [_normal_rows(rng, rows, n)], outputs, params


def _case_standardize_grad(rng, rows, n):
    xhat, rstd = _standardized(_normal_rows(rng, rows, n, edges=False))
    return [_grad(rng, rows, n), xhat, rstd], [_row(rows, n)], {}


def _case_layer_norm_input_grad(rng, rows, n):
    xhat, rstd = _standardized(_normal_rows(rng, rows, n, edges=False))
    weight = _grad(rng, 1, n)[0]
    return [_grad(rng, rows, n), xhat, rstd], [_row(rows, n)], {"weight": weight}


def _case_cross_entropy(rng, rows, n):
    return [_logits(rng, rows, n)], [_row(rows, n), _row(rows), _row(rows)], {}


def _case_scale_rows(rng, rows, n):
    return (
        [_softmax_of(_logits(rng, rows, n, edges=False)), _grad(rng, rows, 1)],
        [_row(rows, n)],
        {},
    )


def _case_cross_entropy_targets(rng, rows, n):
    """Logits with their edge rows; from 9 rows on, ignore_index 0 (a class: rows whose target
    is 0 are ignored all the same), a target of -100 (not a class here) and one past the last
    class; their losses are -0.0, and they are counted."""
    target = rng.integers(0, n, rows)
    ignore_index = -100
    if rows >= 9 and n > 1:
        ignore_index = 0
        target[6], target[7], target[8] = -100, n, 0
    outputs = [_row(rows, n), np.empty(rows, np.float32), np.empty(1, np.float32)]
    params = {"ignore_index": ignore_index}
    return [_logits(rng, rows, n), target], [*outputs, np.empty(2, np.int64)], params


def _case_softmax_minus_one_hot(rng, rows, n):
    probs = _softmax_of(_logits(rng, rows, n, edges=False))
    coefficient = _grad(rng, 1, rows)[0]
    return [probs, coefficient, rng.integers(0, n, (rows, 1))], [_row(rows, n)], {}


def _case_exp_minus_one_hot(rng, rows, n):
    log_probs = _log_probs(_logits(rng, rows, n, edges=False))
    coefficient = _grad(rng, 1, rows)[0]
    coefficient[::3] = 0.0  # an ignored sample's row: zeros (a 0 coefficient)
    return [log_probs, coefficient, rng.integers(0, n, (rows, 1))], [_row(rows, n)], {}


def _case_column_sum(rng, rows, n):
    return [_grad(rng, rows, n)], [np.empty(n, np.float32)], {}


def _case_column_dot(rng, rows, n):
    return [_grad(rng, rows, n), _grad(rng, rows, n)], [np.empty(n, np.float32)], {}


def _case_column_dot_and_sum(rng, rows, n):
    return [_grad(rng, rows, n), _grad(rng, rows, n)], [np.empty((2, n), np.float32)], {}


def _case_cumsum(rng, rows, n):
    """Logits with their edge rows (NaN, inf); from the end, each element left out."""
    return [_logits(rng, rows, n)], [_row(rows, n)], {"exclusive": True, "reverse": True}


def _case_cumsum_forward(rng, rows, n):
    x = _grad(rng, rows, n)
    x[0, 0] = -0.0  # the first sum is the first element itself, -0.0 kept
    return [x], [_row(rows, n)], {"exclusive": False, "reverse": False}


CASES = {
    # the same float32 sums in the same order: the same bits (tolerance 0)
    "cumsum_rows": (row_reduce.cumsum_rows, _case_cumsum, 0.0),
    # sums over up to 2000 rows in blocks: relative to the largest column's magnitude
    "column_sum": (row_reduce._column_sum_into, _case_column_sum, 2e-6),
    "column_dot": (row_reduce.column_dot_into, _case_column_dot, 2e-6),
    "column_dot_and_sum": (row_kernels._column_dot_and_sum, _case_column_dot_and_sum, 2e-6),
    "softmax_rows": (row_kernels._softmax_kernel, _case_softmax, 4e-7),
    # the reference's shared shift rounds x - shift at the input's largest magnitude
    "softmax_rows_shifted": (row_kernels._softmax_rows_shifted, _case_softmax_shifted, 1.5e-6),
    "softmax_grad_rows": (row_kernels._softmax_grad_kernel, _case_softmax_grad, 1e-6),
    "log_softmax_rows": (row_kernels._log_softmax_kernel, _case_softmax, 4e-7),
    # exp(out) * sum(grad): the float32 sums of a 5000-long row of unit normals (the reference's
    # pairwise, the twin's in blocks of vector lanes) each miss the exact sum by up to ~2e-5
    "log_softmax_grad_rows": (row_kernels._log_softmax_grad_kernel, _case_log_softmax_grad, 2e-6),
    "standardize_rows": (row_kernels._standardize_rows, _case_standardize, 1e-6),
    "layer_norm_rows": (row_kernels._layer_norm_rows, _case_layer_norm, 1e-6),
    "standardize_grad_rows": (row_kernels._standardize_grad_rows, _case_standardize_grad, 2e-6),
    "layer_norm_input_grad_rows": (
        row_kernels._layer_norm_input_grad_rows,
        _case_layer_norm_input_grad,
        2e-6,
    ),
    "cross_entropy_rows": (row_kernels._cross_entropy_rows, _case_cross_entropy, 4e-7),
    # the losses' total: the twin adds them in order in float64, the reference pairwise
    "cross_entropy_targets": (
        row_kernels._cross_entropy_targets,
        _case_cross_entropy_targets,
        4e-7,
    ),
    "scale_rows": (row_kernels._scale_rows, _case_scale_rows, 1e-7),
    # the same products and the same subtraction: the same bits
    "softmax_minus_one_hot": (row_kernels._softmax_minus_one_hot, _case_softmax_minus_one_hot, 0.0),
    # the twin's exp32 against NumPy's exp, and one rounding (a fused multiply-add) at the target
    "exp_minus_one_hot": (row_kernels._exp_minus_one_hot, _case_exp_minus_one_hot, 1e-6),
}
FLOORED = {  # rows of values that are differences of larger ones: errors relative to at least 1
    "cross_entropy_rows",  # log_total: log of a sum >= 1
    "cross_entropy_targets",  # the losses: log_softmax's values
    "log_softmax_rows",
    "softmax_grad_rows",
    "standardize_grad_rows",
    "layer_norm_input_grad_rows",
}


def _run_both(name, rows, n, seed=0):
    """(reference outputs, twin outputs) of one case."""
    reference, make, _ = CASES[name]
    inputs, expected, params = make(np.random.default_rng(seed), rows, n)
    got = [np.full_like(array, 7.0) for array in expected]
    _reference(reference, *inputs, *expected, **params)
    kernel = functools.partial(reference, **params) if params else reference
    assert compiled.run(kernel, [*inputs, *got]), f"{name}: the twin did not run"
    return expected, got


def test_every_row_twin_has_a_case():
    named = {
        twin.split(".", 1)[1] for twin, _ in compiled.REGISTRY.values() if twin.startswith("rows.")
    }
    assert named == set(CASES)
    for reference, *_ in CASES.values():
        assert reference.compiled_twin[0] == "rows." + next(
            name for name, case in CASES.items() if case[0] is reference
        )


# the row kernels whose NumPy form makes one call per step of a row's formula: their twins take
# calls of any size (the others, one or two passes, only from compiled.MIN_WORK elements on)
SEVERAL_PASSES = {
    "softmax_rows",
    "softmax_rows_shifted",
    "softmax_grad_rows",
    "log_softmax_rows",
    "log_softmax_grad_rows",
    "standardize_rows",
    "layer_norm_rows",
    "standardize_grad_rows",
    "layer_norm_input_grad_rows",
    "cross_entropy_rows",
    "cross_entropy_targets",
    "softmax_minus_one_hot",
    "exp_minus_one_hot",
}


@pytest.mark.parametrize("name", sorted(SEVERAL_PASSES))
def test_twins_of_several_passes_take_a_single_short_row(monkeypatch, name):
    monkeypatch.setattr(compiled, "MIN_WORK", 1 << 14)  # this folder's conftest lowers it
    assert CASES[name][0].compiled_min_work == compiled.ANY_SIZE
    expected, got = _run_both(name, 1, 3)  # asserts that the twin ran
    for reference, twin in zip(expected, got):
        np.testing.assert_allclose(twin, reference, rtol=1e-6, atol=1e-6)


def _log_probs(logits):
    shifted = logits - logits.max(axis=1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))


def test_a_small_cross_entropy_is_one_twin_call_each_way(twin_calls):
    """Every target a class, no weights: the forward is one call of the losses' twin, the
    backward one of the gradient's."""
    logits = np.float32([[2.0, -1.0, 0.5], [0.0, 3.0, -2.0]])
    x = bai.tensor(logits, requires_grad=True)
    loss = F.cross_entropy(x, bai.tensor(np.array([0, 1])))
    assert twin_calls == [("_cross_entropy_targets", True)]
    log_probs = _log_probs(logits)
    np.testing.assert_allclose(loss.item(), -(log_probs[0, 0] + log_probs[1, 1]) / 2, rtol=1e-6)
    loss.backward()
    assert twin_calls[1:] == [("_softmax_minus_one_hot", True)]
    expected = (np.exp(log_probs) - np.eye(3, dtype=np.float32)[[0, 1]]) / 2
    np.testing.assert_allclose(x.grad.numpy(), expected, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_an_ignored_target_stays_in_the_one_call(twin_calls, reduction):
    logits = np.float32([[2.0, -1.0, 0.5], [0.0, 3.0, -2.0], [1.0, 1.0, 4.0]])
    x = bai.tensor(logits, requires_grad=True)
    loss = F.cross_entropy(x, bai.tensor(np.array([0, -100, 2])), reduction=reduction)
    assert twin_calls == [("_cross_entropy_targets", True)]
    log_probs = _log_probs(logits)
    losses = np.float32([-log_probs[0, 0], 0.0, -log_probs[2, 2]])
    expected = {"mean": losses.sum() / 2, "sum": losses.sum(), "none": losses}[reduction]
    np.testing.assert_allclose(loss.numpy(), expected, rtol=1e-6)
    loss.sum().backward()
    share = 0.5 if reduction == "mean" else 1.0
    one_hot = np.float32([[1, 0, 0], [0, 0, 0], [0, 0, 1]])
    expected_grad = (np.exp(log_probs) - one_hot) * np.float32([[share], [0.0], [share]])
    np.testing.assert_allclose(x.grad.numpy(), expected_grad, rtol=1e-6, atol=1e-7)


def test_every_target_ignored_leaves_the_one_call_for_the_row_twin(twin_calls):
    """A mean of nothing: NaN, as the general path gives it."""
    loss = F.cross_entropy(bai.tensor(np.ones((2, 3), np.float32)), bai.tensor([-100, -100]))
    assert [name for name, _ in twin_calls] == ["_cross_entropy_targets", "_cross_entropy_rows"]
    assert np.isnan(loss.item())


def test_a_target_of_another_shape_is_reported_and_the_twin_stays(twin_calls):
    """The op called directly with (N, 1) targets: the one call declines them (its twin types
    only (N,) targets, and a failed compile would retire it), the op reports the shapes."""
    from buildingai.ops import loss as loss_ops

    x = bai.tensor(np.ones((2, 3), np.float32))
    options = {"axis": 1, "ignore_index": -100, "reduction": "mean"}
    with pytest.raises(bai.BuildingAIError, match="cross_entropy"):
        loss_ops.CROSS_ENTROPY(x, bai.tensor(np.array([[0], [1]])), **options)
    assert not any(name == "_cross_entropy_targets" for name, _ in twin_calls)
    loss = F.cross_entropy(x, bai.tensor(np.array([0, 1])))
    assert twin_calls[-1] == ("_cross_entropy_targets", True)
    np.testing.assert_allclose(loss.item(), np.log(3.0), rtol=1e-6)


def test_a_target_out_of_range_leaves_the_one_call_and_is_reported():
    from buildingai.ops import loss as loss_ops

    x, target = bai.tensor(np.ones((2, 3), np.float32)), bai.tensor(np.array([0, 3]))
    options = {"axis": 1, "ignore_index": -100, "reduction": "mean"}
    with pytest.raises(bai.BuildingAIError, match="cross_entropy"):
        loss_ops.CROSS_ENTROPY(x, target, **options)


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.parametrize("name", sorted(CASES))
def test_twin_matches_its_numpy_reference(name, shape):
    tolerance = CASES[name][2]
    expected, got = _run_both(name, *shape)
    for reference, twin in zip(expected, got):
        nan = np.isnan(reference)
        assert np.array_equal(nan, np.isnan(twin)), f"{name}: NaN positions differ"
        infinite = np.isinf(reference)
        assert np.array_equal(reference[infinite], twin[infinite]), f"{name}: infinities differ"
        finite = np.isfinite(reference)
        magnitude = np.where(finite, np.abs(reference), 0).max(axis=-1, keepdims=True)
        if name in FLOORED:
            magnitude = np.maximum(magnitude, 1.0)
        scale = np.broadcast_to(np.maximum(magnitude, np.finfo(np.float32).tiny), reference.shape)
        error = np.abs(twin[finite] - reference[finite]) / scale[finite]
        assert error.max(initial=0.0) <= tolerance, f"{name}: relative error {error.max():.3g}"


@pytest.mark.parametrize("name", sorted(CASES))
def test_twin_gives_the_same_bits_on_one_and_two_threads(name):
    bai.set_num_threads(2)
    try:
        _, two = _run_both(name, 600, 129)
    finally:
        bai.set_num_threads(None)
    _, one = _run_both(name, 600, 129)
    for a, b in zip(one, two):
        assert np.array_equal(a, b, equal_nan=True)


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_cumsum_twin_gives_the_reference_s_bits_forwards(shape):
    inputs, expected, params = _case_cumsum_forward(np.random.default_rng(1), *shape)
    got = np.full_like(expected[0], 7.0)
    _reference(row_reduce.cumsum_rows, *inputs, *expected, **params)
    assert compiled.run(functools.partial(row_reduce.cumsum_rows, **params), [*inputs, got])
    np.testing.assert_array_equal(got, expected[0])
    assert np.signbit(got[0, 0])


def test_softmax_of_edge_rows_is_the_reference_s():
    x = np.float32([[1.0, np.nan, 2.0], [np.inf, 0.0, 1.0], [-np.inf, -np.inf, -np.inf]])
    x = np.concatenate([x, np.float32([[-np.inf, 0.0, -np.inf]])])
    for kernel in (row_kernels._softmax_kernel, row_kernels._log_softmax_kernel):
        expected, got = np.empty_like(x), np.empty_like(x)
        _reference(kernel, x, expected)
        assert compiled.run(kernel, [x, got])
        np.testing.assert_array_equal(got, expected)
    assert np.isnan(got[:3]).all() and got[3, 1] == 0 and (got[3, [0, 2]] == -np.inf).all()


# ----- the ops against PyTorch --------------------------------------------------------------------

torch = pytest.importorskip("torch")


def _ops_cases():
    from torch.nn import functional as tf

    rng = np.random.default_rng(3)
    scores = (rng.standard_normal((8, 3, 33, 65)) * 3).astype(np.float32)
    stream = rng.standard_normal((12, 50, 129)).astype(np.float32)
    weight, bias = rng.standard_normal((2, 129)).astype(np.float32)
    logits = (rng.standard_normal((300, 257)) * 3).astype(np.float32)
    target = rng.integers(0, 257, 300)
    target_ignored = np.where(rng.random(300) < 0.2, -100, target)
    class_weight = rng.random(257).astype(np.float32)
    return {
        "softmax": ([scores], lambda x: F.softmax(x, -1), lambda x: torch.softmax(x, -1)),
        "log_softmax": (
            [scores],
            lambda x: F.log_softmax(x, -1),
            lambda x: torch.log_softmax(x, -1),
        ),
        "layer_norm": (
            [stream, weight, bias],
            lambda x, w, b: F.layer_norm(x, (129,), w, b),
            lambda x, w, b: tf.layer_norm(x, (129,), w, b),
        ),
        "layer_norm_no_bias": (
            [stream, weight],
            lambda x, w: F.layer_norm(x, (129,), w),
            lambda x, w: tf.layer_norm(x, (129,), w),
        ),
        "cross_entropy": (
            [logits],
            lambda x: F.cross_entropy(x, bai.tensor(target)),
            lambda x: tf.cross_entropy(x, torch.tensor(target)),
        ),
        "cross_entropy_weighted": (
            [logits],
            lambda x: F.cross_entropy(
                x, bai.tensor(target_ignored), weight=bai.tensor(class_weight)
            ),
            lambda x: tf.cross_entropy(
                x, torch.tensor(target_ignored), weight=torch.tensor(class_weight)
            ),
        ),
    }


def _ours(values, function, grad):
    inputs = [bai.Tensor(v, requires_grad=True) for v in values]
    out = function(*inputs)
    grads = bai.grad(out, inputs, grad_outputs=bai.Tensor(np.asarray(grad)))
    return [out.numpy()] + [g.numpy() for g in grads]


def _theirs(values, function, grad):
    inputs = [torch.tensor(v, requires_grad=True) for v in values]
    out = function(*inputs)
    grads = torch.autograd.grad(out, inputs, grad_outputs=torch.tensor(np.asarray(grad)))
    return [out.detach().numpy()] + [g.numpy() for g in grads]


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("name", sorted(_ops_cases()))
def test_op_forward_and_backward_match_pytorch(name, threads):
    values, ours, theirs = _ops_cases()[name]
    out_shape = theirs(*[torch.tensor(v) for v in values]).shape
    grad = np.random.default_rng(4).standard_normal(out_shape).astype(np.float32)
    bai.set_num_threads(threads)
    try:
        got = _ours(values, ours, grad)
    finally:
        bai.set_num_threads(None)
    expected = _theirs(values, theirs, grad)
    for a, b in zip(got, expected):
        assert a.dtype == np.float32
        np.testing.assert_allclose(a, b, rtol=2e-5, atol=2e-5 * max(1.0, float(np.abs(b).max())))


@pytest.mark.parametrize("name", sorted(_ops_cases()))
def test_op_twins_agree_with_the_numpy_kernels(name, request):
    values, ours, theirs = _ops_cases()[name]
    out_shape = theirs(*[torch.tensor(v) for v in values]).shape
    grad = np.random.default_rng(5).standard_normal(out_shape).astype(np.float32)
    fast = _ours(values, ours, grad)
    request.getfixturevalue("numpy_kernels")
    assert not compiled.available()
    slow = _ours(values, ours, grad)
    for a, b in zip(fast, slow):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6 * max(1.0, float(np.abs(b).max())))


def test_float64_and_strided_inputs_run_the_numpy_kernels(monkeypatch):
    calls = []
    original = compiled.run

    def spy(kernel, arrays):
        ran = original(kernel, arrays)
        calls.append(ran)
        return ran

    monkeypatch.setattr(compiled, "run", spy)
    x64 = np.random.default_rng(6).standard_normal((300, 257))
    for x in (x64, x64.astype(np.float32)[:, ::2]):
        t = bai.Tensor(x, requires_grad=True)
        bai.grad(F.log_softmax(t, -1).sum() + F.softmax(t, -1).sum(), [t])
    assert not any(calls)
    np.testing.assert_allclose(
        F.log_softmax(bai.tensor(x64), -1).numpy(),
        torch.log_softmax(torch.tensor(x64), -1).numpy(),
        rtol=1e-12,
        atol=1e-12,
    )

"""The row kernels of ``accel/rows.py`` and ``accel/recurrence.py`` against the records they
speed up: every op run with acceleration off (the record's forward) and on (the registered
kernel, which is checked to have run), values and first derivatives compared, float32 and
float64, on layouts the kernels take and on ones they hand back."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import buildingai as bai
import buildingai.nn.functional as F
from buildingai.accel import registry
from buildingai.nn.functional.rnn_fused import lstm_recurrence


def _logits(shape, dtype, seed=0):
    return (np.random.default_rng(seed).standard_normal(shape) * 3).astype(dtype)


def _lstm_inputs(dtype):
    rng = np.random.default_rng(1)
    length, batch, size = 5, 6, 7
    shapes = [(length, batch, 4 * size), (batch, size), (batch, size), (4 * size, size)]
    return [rng.uniform(-1, 1, shape).astype(dtype) for shape in [*shapes, (4 * size,)]]


TARGETS = np.random.default_rng(2).integers(0, 33, 64)
IGNORED = np.where(np.arange(64) % 5 == 0, -100, TARGETS)
CLASS_WEIGHT = np.random.default_rng(3).random(33)

# case -> (function of Tensors, input arrays for a dtype, the kernels that must run)
CASES = {
    "softmax": (
        lambda x: F.softmax(x, -1),
        lambda dtype: [_logits((64, 33), dtype)],
        ("softmax.rows", "softmax_grad.rows"),
    ),
    "softmax_3d": (
        lambda x: F.softmax(x, 2),
        lambda dtype: [_logits((4, 16, 33), dtype)],
        ("softmax.rows", "softmax_grad.rows"),
    ),
    "log_softmax": (
        lambda x: F.log_softmax(x, -1),
        lambda dtype: [_logits((64, 33), dtype)],
        ("log_softmax_grad.rows",),  # the forward kernel takes float32 (below)
    ),
    "standardize": (
        lambda x: F.standardize(x, (-1,)),
        lambda dtype: [_logits((64, 33), dtype)],
        ("standardize.rows", "standardize_grad.rows"),
    ),
    "layer_norm": (
        lambda x, w, b: F.layer_norm(x, (33,), w, b),
        lambda dtype: [
            _logits((4, 16, 33), dtype),
            _logits((33,), dtype, 1),
            _logits((33,), dtype, 2),
        ],
        ("layer_norm.rows", "layer_norm_input_grad.rows", "layer_norm_weight_grad.columns"),
    ),
    "layer_norm_two_axes": (
        lambda x, w: F.layer_norm(x, (16, 33), w),
        lambda dtype: [_logits((4, 16, 33), dtype), _logits((16, 33), dtype, 1)],
        ("layer_norm.rows", "layer_norm_input_grad.rows", "layer_norm_weight_grad.columns"),
    ),
    "cross_entropy": (
        lambda x: F.cross_entropy(x, bai.tensor(TARGETS)),
        lambda dtype: [_logits((64, 33), dtype)],
        ("cross_entropy_grad.rows",),  # the forward kernel takes float32 (below)
    ),
    "cross_entropy_weighted": (
        lambda x: F.cross_entropy(
            x, bai.tensor(IGNORED), weight=bai.tensor(CLASS_WEIGHT.astype(x.data.dtype))
        ),
        lambda dtype: [_logits((64, 33), dtype)],
        ("cross_entropy_grad.rows",),
    ),
    "cross_entropy_sum_none": (
        lambda x: (
            F.cross_entropy(x, bai.tensor(TARGETS), reduction="none").sum()
            + F.cross_entropy(x, bai.tensor(TARGETS), reduction="sum")
        ),
        lambda dtype: [_logits((64, 33), dtype)],
        ("cross_entropy_grad.rows",),
    ),
    "lstm_recurrence": (
        lambda *tensors: lstm_recurrence(*tensors, reverse=True),
        _lstm_inputs,
        (),  # by dtype: BY_DTYPE
    ),
}
FLOAT32_ONLY = {"log_softmax": "log_softmax.rows", "cross_entropy": "cross_entropy.rows"}
FLOAT32_ONLY |= {"cross_entropy_weighted": "cross_entropy.rows"}
FLOAT32_ONLY |= {"cross_entropy_sum_none": "cross_entropy.rows"}
# the LSTM's compiled loops take float32; other dtypes run the record's loop as a kernel
BY_DTYPE = {
    "lstm_recurrence": {
        np.float32: {"lstm_recurrence.fused", "lstm_recurrence_grad.fused"},
        np.float64: {"lstm_recurrence.loop"},
    }
}


def _run(function, arrays):
    """The output and the gradients of every input for a fixed upstream gradient."""
    inputs = [bai.tensor(a, requires_grad=True) for a in arrays]
    out = function(*inputs)
    upstream = np.random.default_rng(9).standard_normal(out.shape).astype(out.dtype)
    grads = bai.grad(out, inputs, grad_outputs=bai.tensor(upstream))
    return [out.numpy()] + [g.numpy() for g in grads]


@pytest.fixture
def ran(monkeypatch):
    """The names of the registered kernels that computed a call (returned something other than
    NotImplemented)."""
    names = []
    for entry in registry.registered():
        if entry.run is None:
            continue

        def spy(*args, _entry=entry, _run=entry.run, **kwargs):
            result = _run(*args, **kwargs)
            if result is not NotImplemented:
                names.append(_entry.name)
            return result

        monkeypatch.setattr(entry, "run", spy)
    return names


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", sorted(CASES))
def test_kernels_agree_with_the_records(name, dtype, ran):
    function, make, kernels = CASES[name]
    arrays = make(dtype)
    with bai.accel.enabled(False):
        reference = _run(function, arrays)
    assert not ran
    with bai.accel.enabled(True):
        fast = _run(function, arrays)
    expected = set(kernels)
    if dtype == np.float32 and name in FLOAT32_ONLY:
        expected.add(FLOAT32_ONLY[name])
    expected |= BY_DTYPE.get(name, {}).get(dtype, set())
    # a kernel whose requirement is not installed (numba, without the fast extra) cannot run
    expected &= {entry.name for entry in registry.registered() if not entry.missing}
    assert expected <= set(ran), f"not run: {expected - set(ran)}"
    tolerance = 2e-5 if dtype == np.float32 else 1e-12
    for got, want in zip(fast, reference):
        assert got.dtype == want.dtype and got.shape == want.shape
        scale = max(1.0, float(np.abs(want).max()))
        np.testing.assert_allclose(got, want, rtol=tolerance, atol=tolerance * scale)


def test_layouts_the_kernels_do_not_take_run_the_record(ran):
    """A reduced axis that is not the last, a broadcast gradient: the kernels hand the call back
    and the record computes it."""
    x = bai.tensor(_logits((6, 5, 4), np.float32), requires_grad=True)
    with bai.accel.enabled(True):
        softmax = F.softmax(x, 1)
        softmax.sum().backward()  # a broadcast gradient of ones
    with bai.accel.enabled(False):
        x_ref = bai.tensor(x.data, requires_grad=True)
        softmax_ref = F.softmax(x_ref, 1)
        softmax_ref.sum().backward()
    assert "softmax.rows" not in ran and "softmax_grad.rows" not in ran
    np.testing.assert_allclose(softmax.numpy(), softmax_ref.numpy(), rtol=1e-6)
    np.testing.assert_allclose(x.grad.numpy(), x_ref.grad.numpy(), atol=1e-6)


SINGLE_ROW_KERNELS = {  # forward and input gradient of each op
    "log_softmax": {"log_softmax.rows", "log_softmax_grad.rows"},
    "softmax": {"softmax.rows", "softmax_grad.rows"},
    "layer_norm": {"layer_norm.rows", "layer_norm_input_grad.rows"},
}


@pytest.mark.parametrize("name", sorted(SINGLE_ROW_KERNELS))
def test_a_single_row_runs_the_row_kernels(ran, name):
    """One row, a batch of one (inference): forward and backward take the row kernels."""
    x_data = _logits((1, 9), np.float32)
    g = bai.tensor(_logits((1, 9), np.float32, 2))

    def step(x):
        if name == "layer_norm":
            weight = bai.tensor(np.linspace(0.5, 1.5, 9, dtype=np.float32), requires_grad=True)
            return F.layer_norm(x, (9,), weight)
        return getattr(F, name)(x, -1)

    with bai.accel.enabled(True):
        x = bai.tensor(x_data, requires_grad=True)
        out = step(x)
        (out * g).sum().backward()
    with bai.accel.enabled(False):
        x_ref = bai.tensor(x_data, requires_grad=True)
        out_ref = step(x_ref)
        (out_ref * g).sum().backward()
    assert SINGLE_ROW_KERNELS[name] <= set(ran)
    np.testing.assert_allclose(out.numpy(), out_ref.numpy(), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(x.grad.numpy(), x_ref.grad.numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("accelerated", [False, True])
def test_second_derivatives_are_the_same_with_and_without_kernels(accelerated):
    arrays = [_logits((4, 16, 33), np.float64), _logits((33,), np.float64, 1)]

    def second(*tensors):
        out = F.layer_norm(F.softmax(tensors[0], -1), (33,), tensors[1])
        out = F.log_softmax(out, -1)
        grads = bai.grad((out * out).sum(), tensors, create_graph=True)
        return bai.grad(sum((g * g).sum() for g in grads), tensors)

    with bai.accel.enabled(accelerated):
        got = second(*[bai.tensor(a, requires_grad=True) for a in arrays])
    with bai.accel.enabled(False):
        want = second(*[bai.tensor(a, requires_grad=True) for a in arrays])
    for a, b in zip(got, want):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-10, atol=1e-12)


def test_cross_entropy_on_two_threads_at_once(ran):
    """The one-call path (every target a class) shares its cached per-sample shares between
    calls: two threads at once give what one thread gives, forward and gradient."""

    def step(seed):
        x = bai.tensor(_logits((64, 33), np.float32, seed), requires_grad=True)
        loss = F.cross_entropy(x, bai.tensor(TARGETS))
        loss.backward()
        return loss.numpy(), x.grad.numpy()

    with bai.accel.enabled(True):
        expected = [step(seed) for seed in range(4)]
        with ThreadPoolExecutor(2) as pool:
            for _ in range(3):
                for got, want in zip(pool.map(step, range(4)), expected):
                    np.testing.assert_array_equal(got[0], want[0])
                    np.testing.assert_array_equal(got[1], want[1])
    assert {"cross_entropy.rows", "cross_entropy_grad.rows"} <= set(ran)

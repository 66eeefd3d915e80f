"""The compiled twins of the activation kernels against their NumPy references
(``accel/kernels/activations.py``, ``gelu32.py``), and the tier's switch: every twin is compared
with the kernel it stands in for, on edge values and random data, at one and two threads, with
acceleration on."""

from __future__ import annotations

import functools
import multiprocessing
import os
import subprocess
import sys

import numpy as np
import pytest

import buildingai as bai
from buildingai.accel.kernels import (
    activations,
    compiled,
    gelu32,
    pixel_repeat,
    pool_flat,
    select,
    separable_resize,
)
from buildingai.accel.kernels import activations_fused as fused

pytest.importorskip("numba")


@pytest.fixture(autouse=True)
def _accelerated(monkeypatch, accel_on):
    """Twins run only while acceleration is on; a product of an earlier test does not keep the
    twin that takes only split calls (tanh) on one thread."""
    from buildingai.backend import threads

    monkeypatch.setattr(threads, "BLAS_SPIN_SECONDS", 0.0)


N = 70_001  # odd, and above compiled.MIN_PARALLEL_WORK: two threads split it


def _values(rng, scale=4.0):
    """float32 edge values (zeros of both signs, tiny, huge, inf, NaN) then random ones."""
    edges = np.float32(
        [0.0, -0.0, 1e-30, -1e-30, 1e-6, -1e-6, 1.0, -1.0, 20.0, -20.0, 88.0, -88.0, 100.0]
        + [-100.0, 1e30, -1e30, 3e38, -3e38, np.inf, -np.inf, np.nan]
    )
    body = (rng.standard_normal(N - edges.size) * scale).astype(np.float32)
    return np.concatenate([edges, body])


def _grad(rng):
    return rng.standard_normal(N).astype(np.float32)


def _mask(rng):
    return rng.random(N) < 0.5


SELU = {"alpha": 1.6732632423543772, "scale": 1.0507009873554805, "input_scale": 1.0}
CELU = {"alpha": 0.5, "scale": 1.0, "input_scale": 2.0}

# twin name -> (NumPy reference kernel, input makers, output count, keyword params, tolerance)
# Tolerances are relative to max(1, |reference|): the twins' exp and log1p are within a few
# float32 ulps of NumPy's, and FMAs round once where NumPy rounds twice.
CASES = {
    "relu": (activations.relu, [_values], 1, {}, 0.0),
    "relu_grad": (activations.relu_grad, [_grad, _values], 1, {}, 0.0),
    "leaky_relu": (activations.leaky_relu, [_values], 1, {"slope": 0.01}, 1e-7),
    "leaky_relu_grad": (activations.leaky_relu_grad, [_grad, _values], 1, {"slope": 0.2}, 0.0),
    "sigmoid": (activations.sigmoid, [_values], 1, {}, 4e-7),
    "sigmoid_grad": (activations.sigmoid_grad, [_grad, lambda r: r.random(N).astype(np.float32)], 1, {}, 4e-7),
    "tanh": (activations.tanh, [_values], 1, {}, 4e-7),
    "tanh_grad": (activations.tanh_grad, [_grad, lambda r: r.random(N).astype(np.float32) * 2 - 1], 1, {}, 4e-7),
    "silu": (activations.silu, [_values], 2, {}, 4e-7),
    "silu_grad": (activations.silu_grad, [_grad, _values, lambda r: r.random(N).astype(np.float32)], 1, {}, 6e-7),
    "gelu": (gelu32.gelu_forward, [_values], 2, {}, 5e-7),
    "gelu_grad": (gelu32.gelu_backward, [_grad, _values, lambda r: r.random(N).astype(np.float32)], 1, {}, 6e-7),
    "gelu_tanh": (activations.gelu_tanh, [_values], 2, {}, 5e-7),
    "gelu_tanh_grad": (activations.gelu_tanh_grad, [_grad, _values, lambda r: r.random(N).astype(np.float32)], 1, {}, 6e-7),
    "softplus": (activations.softplus_float32, [_values], 1, {"beta": 1.0, "threshold": 20.0}, 5e-7),
    "softplus_grad": (activations.softplus_grad_float32, [_grad, _values], 1, {"beta": 2.0, "threshold": 10.0}, 4e-7),
    "exponential_linear": (fused.exponential_linear, [_values], 1, SELU, 4e-7),
    "exponential_linear_grad": (fused.exponential_linear_grad, [_grad, _values], 1, CELU, 4e-7),
    "hardsigmoid": (fused.hardsigmoid, [_values], 1, {}, 1e-7),
    "hardsigmoid_grad": (fused.hardsigmoid_grad, [_grad, _values], 1, {"one_sixth": 1 / 6}, 0.0),
    "hardswish": (fused.hardswish, [_values], 1, {}, 1e-7),
    "hardswish_grad": (fused.hardswish_grad, [_grad, _values], 1, {}, 1e-7),
    "logsigmoid": (fused.logsigmoid, [_values], 1, {}, 4e-7),
    "logsigmoid_grad": (fused.logsigmoid_grad, [_grad, _values], 1, {}, 4e-7),
    "select": (select.select, [_mask, _values, _grad], 1, {}, 0.0),
    "select_else_value": (select.select_else_value, [_mask, _values], 1, {"value": -0.1}, 0.0),
    "value_else_select": (select.value_else_select, [_mask, _values], 1, {"value": 2.5}, 0.0),
}  # fmt: skip


def _run_both(name, seed=0):
    """(reference outputs, twin outputs, inputs) of one case."""
    reference, makers, outputs, params, _ = CASES[name]
    rng = np.random.default_rng(seed)
    inputs = [make(rng) for make in makers]
    kernel = functools.partial(reference, **params) if params else reference
    expected = [np.empty(N, np.float32) for _ in range(outputs)]
    with np.errstate(all="ignore"):
        kernel(np, *inputs, *expected)
    got = [np.empty(N, np.float32) for _ in range(outputs)]
    assert compiled.run(kernel, [*inputs, *got]), f"{name}: the twin did not run"
    return expected, got, inputs


def test_every_twin_has_a_case_here_or_with_the_row_kernels():
    from tests.accel import (
        test_attention,
        test_conv_direct,
        test_conv_winograd,
        test_conv_winograd_forward,
        test_prelu,
    )
    from tests.accel.kernels import (
        test_compiled_channel_norm,
        test_compiled_conv,
        test_compiled_depthwise,
        test_compiled_index,
        test_compiled_pool_windows,
        test_compiled_recurrence,
        test_compiled_rows,
        test_compiled_updates,
    )

    covered = (
        set(CASES)
        | set(POOLING)
        | {"adam", "sgd"}
        | set(PIXEL_REPEAT)
        | set(getattr(test_compiled_rows, "CASES", {}))
    )
    covered |= test_compiled_conv.CASES | test_compiled_recurrence.CASES
    covered |= test_compiled_channel_norm.CASES
    covered |= test_compiled_index.CASES
    covered |= set(test_compiled_updates.CASES)
    covered |= test_compiled_depthwise.CASES
    covered |= test_compiled_pool_windows.CASES
    covered |= test_prelu.CASES
    covered |= test_attention.CASES
    # the im2col columns' twin: compared with the record's columns in test_conv_direct.py
    covered |= {"im2col"} if test_conv_direct.IM2COL_CASES else set()
    # the Winograd transforms: compared with their NumPy references in test_conv_winograd.py
    winograd = {"input_tiles", "grad_tiles", "filter_grad"}
    covered |= winograd if test_conv_winograd.TRANSFORM_CASES else set()
    covered |= test_conv_winograd_forward.TWINS  # the forward's output transform
    named = {twin.split(".", 1)[1] for twin, _ in compiled.REGISTRY.values()}
    assert named <= covered, f"twins without a reference comparison: {sorted(named - covered)}"


@pytest.mark.parametrize("name", sorted(CASES))
def test_twin_matches_its_numpy_reference(name):
    tolerance = CASES[name][4]
    expected, got, _ = _run_both(name)
    for reference, twin in zip(expected, got):
        assert np.array_equal(np.isnan(reference), np.isnan(twin)), f"{name}: NaN positions differ"
        finite = np.isfinite(reference)
        infinite = np.isinf(reference)
        assert np.array_equal(reference[infinite], twin[infinite]), f"{name}: infinities differ"
        scale = np.maximum(1.0, np.abs(reference[finite]))
        error = (np.abs(twin[finite] - reference[finite]) / scale).max()
        assert error <= tolerance, f"{name}: relative error {error:.3g} > {tolerance:.3g}"


@pytest.mark.parametrize("name", sorted(CASES))
def test_twin_gives_the_same_bits_on_one_and_two_threads(name):
    bai.set_num_threads(2)
    try:
        _, two, _ = _run_both(name)
    finally:
        bai.set_num_threads(None)
    _, one, _ = _run_both(name)
    for a, b in zip(one, two):
        assert np.array_equal(a, b, equal_nan=True)


def test_twins_take_float32_contiguous_arrays_only():
    x64 = np.ones(10)
    assert not compiled.run(activations.relu, [x64, np.empty_like(x64)])
    x32 = np.ones((10, 2), np.float32)[:, 0]  # strided
    assert not compiled.run(activations.relu, [x32, np.empty_like(x32)])
    assert not compiled.run(np.negative, [np.ones(3, np.float32)])  # no twin at all


def test_switching_off_runs_the_numpy_kernels_with_the_same_results():
    x = np.random.default_rng(1).standard_normal((64, 300)).astype(np.float32)
    on = bai.nn.functional.gelu(bai.tensor(x)).numpy()
    previous = compiled.set_enabled(False)
    try:
        assert not compiled.available()
        assert compiled.status()["detail"].startswith("switched off")
        off = bai.nn.functional.gelu(bai.tensor(x)).numpy()
    finally:
        compiled.set_enabled(previous)
    np.testing.assert_allclose(on, off, rtol=1e-6, atol=1e-6)
    assert compiled.status()["active"]


def test_without_numba_the_status_names_the_package_and_numpy_runs(monkeypatch):
    monkeypatch.setitem(compiled._state, "numba", None)
    monkeypatch.setitem(compiled._state, "error", "ModuleNotFoundError: No module named 'numba'")
    monkeypatch.setattr(compiled, "_twins", {})
    status = compiled.status()
    assert not status["active"] and "pip install numba" in status["detail"]
    x = np.float32([-1.0, 2.0])
    assert not compiled.run(activations.relu, [x, np.empty_like(x)])
    np.testing.assert_array_equal(bai.tensor(x).relu().numpy(), [0.0, 2.0])


def _child_reports(queue):
    queue.put(compiled.available())


def test_a_forked_child_runs_the_numpy_kernels():
    x = np.ones(N, np.float32)
    assert compiled.run(activations.relu, [x, np.empty_like(x)])  # numba's threads started
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    child = context.Process(target=_child_reports, args=(queue,))
    child.start()
    try:
        assert queue.get(timeout=60) is False
    finally:
        child.join(timeout=60)


def test_two_threads_call_twins_at_once():
    from concurrent.futures import ThreadPoolExecutor

    x = np.random.default_rng(2).standard_normal((256, 512)).astype(np.float32)
    expected = bai.nn.functional.silu(bai.tensor(x)).numpy()
    with ThreadPoolExecutor(2) as pool:
        results = list(pool.map(lambda _: bai.nn.functional.silu(bai.tensor(x)).numpy(), range(8)))
    for result in results:
        assert np.array_equal(result, expected)


ADAM_SETTINGS = {
    "plain": {},
    "l2-maximize": {"weight_decay": 0.1, "maximize": True},
    "decoupled": {"weight_decay": 0.1, "decoupled_weight_decay": True},
    "amsgrad": {"amsgrad": True},
}


@pytest.mark.parametrize("setting", sorted(ADAM_SETTINGS))
def test_adam_twin_matches_the_numpy_update(setting):
    from buildingai.accel.optimizers import adam_update

    options = {"weight_decay": 0.0, "decoupled_weight_decay": False, "maximize": False}
    options.update(ADAM_SETTINGS[setting])
    amsgrad = options.pop("amsgrad", False)
    rng = np.random.default_rng(3)
    arrays = [rng.standard_normal(N).astype(np.float32) for _ in range(2)]
    state = [np.abs(rng.standard_normal(N)).astype(np.float32) * 0.01 for _ in range(3)]
    state[0] -= 0.005  # exp_avg of both signs
    if not amsgrad:
        state[2] = None
    scalars = dict(lr=1e-3, beta1=0.9, beta2=0.999, eps=1e-8, step_size=1e-3 / (1 - 0.9**3))
    scalars.update(options, bias_correction2_sqrt=float(np.sqrt(1 - 0.999**3)))
    reference = [None if a is None else a.copy() for a in (*arrays, *state)]
    work = [np.empty(N, np.float32) for _ in range(2)]
    adam_update(np, *reference, work, **scalars)
    twin = [None if a is None else a.copy() for a in (*arrays, *state)]
    assert compiled.run(adam_update, twin, scalars)
    for name, a, b in zip(("param", "grad", "exp_avg", "exp_avg_sq", "max"), reference, twin):
        if a is not None:
            np.testing.assert_allclose(b, a, rtol=2e-6, atol=1e-8, err_msg=name)  # FMA rounding


SGD_SETTINGS = {
    "plain": {"momentum": 0.0},
    "momentum-first-step": {"first_step": True},
    "momentum": {},
    "dampening-weight-decay": {"dampening": 0.3, "weight_decay": 0.1},
    "nesterov-maximize": {"nesterov": True, "maximize": True, "weight_decay": 0.05},
}


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("setting", sorted(SGD_SETTINGS))
def test_sgd_twin_matches_the_numpy_update(setting, threads):
    from buildingai.accel.optimizers import sgd_update

    scalars = dict(lr=0.1, momentum=0.9, dampening=0.0, nesterov=False, weight_decay=0.0,
                   maximize=False, first_step=False)  # fmt: skip
    scalars.update(SGD_SETTINGS[setting])
    rng = np.random.default_rng(4)
    param, grad, buffer = (rng.standard_normal(N).astype(np.float32) for _ in range(3))
    buffer = buffer if scalars["momentum"] else None
    reference = [None if a is None else a.copy() for a in (param, grad, buffer)]
    sgd_update(np, *reference, [np.empty(N, np.float32) for _ in range(2)], **scalars)
    twin = [None if a is None else a.copy() for a in (param, grad, buffer)]
    bai.set_num_threads(threads)
    try:
        assert compiled.run(sgd_update, twin, scalars)
    finally:
        bai.set_num_threads(None)
    for name, a, b in zip(("param", "grad", "momentum_buffer"), reference, twin):
        if a is not None:
            np.testing.assert_allclose(b, a, rtol=2e-6, atol=2e-6, err_msg=name)  # FMA rounding
    np.testing.assert_array_equal(twin[1], grad)  # the gradient is read, never written


def test_sgd_twin_keeps_an_infinite_parameter_without_weight_decay():
    """Weight decay 0 adds nothing (not 0 * inf = nan), as the NumPy update."""
    from buildingai.accel.optimizers import sgd_update

    param = np.full(N, np.inf, np.float32)
    scalars = dict(lr=0.1, momentum=0.0, dampening=0.0, nesterov=False, weight_decay=0.0,
                   maximize=False, first_step=False)  # fmt: skip
    assert compiled.run(sgd_update, [param, np.ones(N, np.float32), None], scalars)
    assert np.isposinf(param).all()


POOLING = {  # twin name -> NumPy reference
    "window_max": pool_flat.window_max,
    "window_first_max": pool_flat.first_max_inside,
    "scatter_to_choice": pool_flat.scatter_to_choice,
}
GEOMETRIES = {"13x12": (13, 12), "12x12": (12, 12), "2x3": (2, 3)}  # odd sizes leave edges


@pytest.mark.parametrize("geometry", sorted(GEOMETRIES))
def test_pooling_twins_match_their_numpy_references(geometry):
    height, width = GEOMETRIES[geometry]
    params = {"size": (2, 2), "stride": (2, 2), "dilation": (1, 1)}
    rng = np.random.default_rng(4)
    x = rng.integers(-3, 4, (5, 7, height, width)).astype(np.float32)  # ties: the first wins
    x[0, 0, :2, :2] = -np.inf
    x[1, 2, 1, 1] = np.nan
    x[1, 3, 0, :2] = np.nan
    x[2, 3, 0, 1] = np.inf
    out_hw = (height // 2, width // 2)
    assert pool_flat.fits_flat(x.shape, out_hw, (2, 2), (2, 2), (0, 0), (1, 1))

    def both(name, inputs, output):
        expected, got = np.full_like(output, 7), np.full_like(output, 9)
        POOLING[name](np, *inputs, expected, **params)
        assert compiled.run(POOLING[name], [*inputs, got], params)
        assert np.array_equal(expected, got, equal_nan=True), name
        return expected

    out = both("window_max", [x], np.empty(x.shape[:2] + out_hw, np.float32))
    choice = both("window_first_max", [x, out], np.empty(out.shape, np.int8))
    grad = rng.standard_normal(out.shape).astype(np.float32)
    both("scatter_to_choice", [grad, choice], np.empty_like(x))


def test_pooling_takes_the_twins_for_2x2_windows_of_stride_2_only(monkeypatch):
    calls = []
    run = compiled.run

    def spy(kernel, arrays, keywords=None, work=None):
        calls.append(getattr(kernel, "func", kernel))
        return run(kernel, arrays, keywords, work)

    monkeypatch.setattr(compiled, "run", spy)
    x = bai.tensor(np.ones((2, 3, 8, 8), np.float32))
    bai.nn.functional.max_pool2d(x, 3, 2)
    assert pool_flat.window_max not in calls
    bai.nn.functional.max_pool2d(x, 2)
    assert pool_flat.window_max in calls


def test_small_arrays_run_the_numpy_kernel(monkeypatch):
    monkeypatch.setattr(compiled, "MIN_WORK", 1 << 14)
    small = np.ones(1000, np.float32)
    assert not compiled.run(activations.relu, [small, np.empty_like(small)])
    large = np.ones(1 << 13, np.float32)
    assert compiled.run(activations.relu, [large, np.empty_like(large)])


def test_twins_of_several_numpy_passes_take_the_smallest_calls(monkeypatch):
    monkeypatch.setattr(compiled, "MIN_WORK", 1 << 14)  # this folder's conftest lowers it
    small = np.linspace(-3.0, 3.0, 16, dtype=np.float32)
    out = np.empty_like(small)
    softplus = functools.partial(activations.softplus_float32, beta=1.0, threshold=20.0)
    for kernel in (activations.sigmoid, softplus, fused.hardswish, fused.logsigmoid):
        assert compiled.min_work(kernel) == compiled.ANY_SIZE  # (a partial: its function's)
        assert compiled.takes(kernel, [small, out])
    # one NumPy pass, or two cheap ones: below MIN_WORK NumPy's own calls are the cheaper
    for kernel in (activations.relu, activations.tanh):
        assert compiled.min_work(kernel) == 1 << 14
        assert not compiled.takes(kernel, [small, out])


def test_a_small_element_wise_op_runs_a_twin_that_takes_any_size(twin_calls):
    x = np.linspace(-3.0, 3.0, 12, dtype=np.float32).reshape(3, 4)
    y = bai.nn.functional.softplus(bai.tensor(x))
    assert twin_calls == [("softplus_float32", True)]
    np.testing.assert_allclose(y.numpy(), np.log1p(np.exp(x)), rtol=1e-6)


def test_a_sigmoid_below_its_kernel_s_size_is_the_record_s(twin_calls):
    """sigmoid's kernel (and its twin) start at ``SIGMOID_MIN_SIZE`` values: a smaller call is
    the record's few NumPy calls, with the same values."""
    from buildingai.accel import activations as accelerated

    x = np.linspace(-3.0, 3.0, 12, dtype=np.float32).reshape(3, 4)
    y = bai.nn.functional.sigmoid(bai.tensor(x))
    assert twin_calls == []
    np.testing.assert_allclose(y.numpy(), 1 / (1 + np.exp(-x)), rtol=1e-6)
    large = np.linspace(-3.0, 3.0, accelerated.SIGMOID_MIN_SIZE, dtype=np.float32)
    y = bai.nn.functional.sigmoid(bai.tensor(large))
    assert twin_calls == [("sigmoid", True)]
    np.testing.assert_allclose(y.numpy(), 1 / (1 + np.exp(-large)), rtol=1e-6)


def test_a_failing_twin_is_dropped_with_a_warning_and_its_numpy_kernel_runs(monkeypatch):
    def broken(*arrays):
        raise RuntimeError("cannot cache function: no locator available")

    monkeypatch.setitem(compiled._twins, "activations.relu", broken)
    monkeypatch.setattr(compiled, "_failures", [])
    x = np.linspace(-1, 1, 1 << 15, dtype=np.float32)
    with pytest.warns(RuntimeWarning, match="twin activations.relu failed.*no locator"):
        out = bai.tensor(x).relu().numpy()
    np.testing.assert_array_equal(out, np.maximum(x, 0))
    assert compiled._twins["activations.relu"] is compiled._BROKEN
    assert compiled.available()  # the other twins stay in use
    assert "not in use: twin activations.relu failed" in compiled.status()["detail"]
    np.testing.assert_array_equal(bai.tensor(x).relu().numpy(), out)  # no second warning


STARTING_TOGETHER = """
import os, threading
import numpy as np
import buildingai as bai
from concurrent.futures import ThreadPoolExecutor
from buildingai.accel.kernels import compiled

bai.accel.enable(quiet=True)  # twins run only with acceleration on
x = np.random.default_rng(0).standard_normal((256, 512)).astype(np.float32)
barrier = threading.Barrier(2)

def first_call(_):
    barrier.wait()  # both threads reach numba's start at once
    return bai.nn.functional.gelu(bai.tensor(x)).numpy()

with ThreadPoolExecutor(2) as pool:
    one, two = pool.map(first_call, range(2))
assert np.array_equal(one, two)
assert compiled.status()["active"]
assert "GOMP_SPINCOUNT" not in os.environ  # set only while numba started its threads
print("ok")
"""


def test_two_threads_starting_the_tier_at_once():
    result = subprocess.run(
        [sys.executable, "-c", STARTING_TOGETHER], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


LAYER = """
import importlib
import numpy as np
import buildingai as bai
from buildingai.accel.kernels import compiled

def loads(layer):  # what numba's own choice tries for each layer
    try:
        importlib.import_module({"omp": "numba.np.ufunc.omppool", "tbb": "numba.np.ufunc.tbbpool",
                                 "workqueue": "numba.np.ufunc.workqueue"}[layer])
    except ImportError:
        return False
    return True

bai.accel.enable(quiet=True)
x = np.random.default_rng(0).standard_normal((256, 512)).astype(np.float32)
bai.nn.functional.gelu(bai.tensor(x))
first = next(layer for layer in compiled.LAYER_PRIORITY if loads(layer))
print(compiled.threading_layer(), first, compiled.status()["detail"].split(",")[0])
"""


def _in_fresh_process(script: str, variables: str, **chosen) -> list[str]:
    """``script``'s output words, run in a new process where the environment variables whose
    names start with ``variables`` are those in ``chosen``, and no others."""
    inherited = {k: v for k, v in os.environ.items() if not k.startswith(variables)}
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
        env={**inherited, **chosen},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    return result.stdout.split()


def _layer_in_fresh_process(**chosen) -> list[str]:
    return _in_fresh_process(LAYER, "NUMBA_THREADING", **chosen)


def test_numba_threads_start_on_the_first_layer_that_loads_openmp_first():
    pytest.importorskip("numba")
    assert compiled.LAYER_PRIORITY[0] == "omp"  # ahead of TBB, numba's own first choice
    layer, first, *detail = _layer_in_fresh_process()
    assert layer == first
    assert f"on the {layer} threading layer" in " ".join(detail)


def test_a_threading_layer_order_the_user_set_is_kept():
    pytest.importorskip("numba")
    layer, *_ = _layer_in_fresh_process(NUMBA_THREADING_LAYER_PRIORITY="workqueue omp tbb")
    assert layer == "workqueue"


VECTORS = """
import os
import numpy as np
import buildingai as bai
from llvmlite import binding

bai.accel.enable(quiet=True)
bai.nn.functional.gelu(bai.tensor(np.ones((256, 512), np.float32)))
print(bool(binding.get_host_cpu_features().get("avx512f")), os.environ.get("NUMBA_CPU_FEATURES"))
"""


def _features_in_fresh_process(**chosen) -> list[str]:
    return _in_fresh_process(VECTORS, "NUMBA_CPU", **chosen)


def test_on_avx512_the_twins_are_compiled_for_full_width_vectors():
    pytest.importorskip("numba")
    avx512, features = _features_in_fresh_process()
    if avx512 == "True":
        assert features.endswith(",-prefer-256-bit") and "+avx512f" in features
    else:
        assert features == "None"  # LLVM's own choice for the host


def test_cpu_features_the_user_chose_are_kept():
    pytest.importorskip("numba")
    _, features = _features_in_fresh_process(NUMBA_CPU_FEATURES="+sse2")
    assert features == "+sse2"


def test_a_changed_source_file_clears_the_cached_machine_code(tmp_path):
    (tmp_path / "expf.py").write_text("VERSION = 1\n")
    (tmp_path / "activations.py").write_text("from .expf import VERSION\n")
    cache = tmp_path / "__pycache__"
    cache.mkdir()
    compiled.drop_stale_cache(tmp_path)  # first run: stamp written
    cached = cache / "activations.gelu-60.py311.nbi"
    cached.write_text("machine code of VERSION = 1")
    compiled.drop_stale_cache(tmp_path)
    assert cached.exists()  # nothing changed: kept
    (tmp_path / "expf.py").write_text("VERSION = 2\n")  # an inlined helper's file changes
    compiled.drop_stale_cache(tmp_path)
    assert not cached.exists()
    assert (cache / "sources.sha256").exists()


def test_twins_stay_on_one_thread_while_blas_threads_spin(monkeypatch):
    from buildingai.backend import threads

    bai.set_num_threads(2)
    try:
        monkeypatch.setattr(threads, "BLAS_SPIN_SECONDS", 60.0)
        threads.blas_called()
        compiled._use_threads(1 << 20)
        assert compiled._threads.count == 1
        monkeypatch.setattr(threads, "BLAS_SPIN_SECONDS", 0.0)
        compiled._use_threads(1 << 20)
        assert compiled._threads.count == 2
    finally:
        bai.set_num_threads(None)


PIXEL_REPEAT = {"repeat_pixels": pixel_repeat.repeat_pixels}
PIXEL_REPEAT["sum_pixel_blocks"] = pixel_repeat.sum_pixel_blocks
PIXEL_REPEAT["resize_planes"] = separable_resize.resize_planes
PIXEL_REPEAT["resize_planes_width_first"] = separable_resize.resize_planes_width_first


@pytest.mark.parametrize("factors", [(2, 2), (3, 2), (1, 3), (2, 1)])
def test_pixel_repeat_twins_match_their_numpy_references(factors):
    fh, fw = factors
    rng = np.random.default_rng(7)
    rows, width = 301, 97
    x = _values(rng)[: rows * width].reshape(rows, width)
    grad = rng.standard_normal((rows * fh, width * fw)).astype(np.float32)
    keywords = {"fh": fh, "fw": fw}
    for kernel, source, shape in (
        (pixel_repeat.repeat_pixels, x, grad.shape),
        (pixel_repeat.sum_pixel_blocks, grad, x.shape),
    ):
        expected, got = np.empty(shape, np.float32), np.empty(shape, np.float32)
        kernel(np, source, expected, **keywords)
        assert compiled.run(kernel, [source, got], keywords), kernel.__name__
        np.testing.assert_array_equal(got, expected)  # copies, and sums in the same order


@pytest.mark.parametrize("mode", ["linear", "cubic", "nearest"])
def test_separable_resize_twin_matches_its_numpy_reference(mode):
    from buildingai.ops import resize

    rng = np.random.default_rng(9)
    x = _values(rng)[: 6 * 37 * 41].reshape(6, 37, 41)
    keys = [(mode, 37, 50, False, None, True), (mode, 41, 19, False, None, True)]
    taps = []
    for key in keys:
        columns, weights, _, _ = resize.axis_map(key, False)
        taps += [np.ascontiguousarray(columns), weights.astype(np.float32)]
    expected, got = np.empty((6, 50, 19), np.float32), np.empty((6, 50, 19), np.float32)
    with np.errstate(invalid="ignore"):  # inf * 0 weights: NaN in both
        separable_resize.resize_planes(np, x, *taps, expected)
    assert compiled.run(separable_resize.resize_planes, [x, *taps, got])
    np.testing.assert_array_equal(got, expected)  # the same products and sums, in order


@pytest.mark.parametrize("mode", ["linear", "cubic", "nearest"])
def test_width_first_resize_twin_matches_its_numpy_reference(mode):
    from buildingai.ops import resize

    rng = np.random.default_rng(10)
    x = _values(rng)[: 6 * 23 * 17].reshape(6, 23, 17)
    keys = [(mode, 23, 50, False, None, True), (mode, 17, 40, False, None, True)]
    taps = []
    for key in keys:
        columns, weights, _, _ = resize.axis_map(key, False)
        taps += [np.ascontiguousarray(columns, np.int32), weights.astype(np.float32)]
    expected, got = np.empty((6, 50, 40), np.float32), np.empty((6, 50, 40), np.float32)
    with np.errstate(invalid="ignore"):  # inf * 0 weights: NaN in both
        separable_resize.resize_planes_width_first(np, x, *taps, expected)
    assert compiled.run(separable_resize.resize_planes_width_first, [x, *taps, got])
    np.testing.assert_array_equal(got, expected)  # the same products and sums, in order

"""The accelerated step (``buildingai/accel/optimizers.py``) against the textbook ``update`` of
each optimizer: the same parameters and state, to float64 rounding (1e-12) and float32 round-off,
checkpoints that load either way, and a reference path that loads nothing."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import buildingai as bai
from buildingai.accel import optimizers as accelerated

# every built-in optimizer, with options that use all of its state
OPTIMIZERS = [
    ("SGD", {"lr": 0.05, "momentum": 0.9, "nesterov": True, "weight_decay": 0.01}),
    ("SGD", {"lr": 0.05, "momentum": 0.9, "dampening": 0.3, "maximize": True}),
    ("SGD", {"lr": 0.1}),
    ("Adam", {"lr": 0.01, "amsgrad": True, "weight_decay": 0.1}),
    ("Adam", {"lr": 0.01, "maximize": True}),
    ("AdamW", {"lr": 0.01, "amsgrad": True}),
    ("RMSprop", {"centered": True, "momentum": 0.5, "weight_decay": 0.1}),
    ("RMSprop", {"lr": 0.001, "maximize": True}),
    ("Adagrad", {"lr_decay": 0.1, "weight_decay": 0.1, "initial_accumulator_value": 0.2}),
    ("Adadelta", {"weight_decay": 0.1, "maximize": True}),
    ("Lion", {"lr": 0.01, "weight_decay": 0.1}),
    ("Lion", {"lr": 0.01, "maximize": True}),
]
# a scalar, small ones (packed together), a 0-size one, and one run in blocks (small_blocks)
SHAPES = [(), (4,), (3, 5), (0, 2), (3, 7000)]
STEPS = 8


def _run(name, options, accelerate: bool, dtype=np.float64, shapes=SHAPES, steps=STEPS):
    rng = np.random.default_rng(0)
    params = [bai.tensor(rng.standard_normal(s).astype(dtype), requires_grad=True) for s in shapes]
    with bai.accel.enabled(accelerate):
        optimizer = getattr(bai.optim, name)(params, **options)
        for step in range(steps):
            for position, param in enumerate(params):
                grad = np.random.default_rng(100 * step + position).standard_normal(param.shape)
                param.grad = bai.tensor(grad.astype(dtype))
            optimizer.step()
    return params, optimizer


def _assert_states_close(ours, theirs, params_ours, params_theirs, rtol, atol):
    for p, q in zip(params_ours, params_theirs):
        mine, reference = ours.state[p], theirs.state[q]
        assert mine.keys() == reference.keys()
        for key, value in reference.items():
            if hasattr(value, "shape"):
                assert mine[key].shape == tuple(p.shape) and mine[key].dtype == value.dtype
                np.testing.assert_allclose(mine[key], value, rtol=rtol, atol=atol, err_msg=key)
            else:
                assert mine[key] == value, key


@pytest.mark.parametrize("name, options", OPTIMIZERS, ids=str)
def test_the_accelerated_step_computes_the_textbook_update_in_float64(name, options):
    fast, fast_optimizer = _run(name, options, accelerate=True)
    plain, plain_optimizer = _run(name, options, accelerate=False)
    assert "runner" in fast_optimizer._accelerated and not plain_optimizer._accelerated
    for a, b in zip(fast, plain):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-12, atol=1e-12)
    _assert_states_close(fast_optimizer, plain_optimizer, fast, plain, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name, options", OPTIMIZERS, ids=str)
def test_the_accelerated_step_computes_the_textbook_update_in_float32(name, options):
    # float32 Adam takes the compiled twin where numba is installed
    fast, fast_optimizer = _run(name, options, accelerate=True, dtype=np.float32)
    plain, plain_optimizer = _run(name, options, accelerate=False, dtype=np.float32)
    for a, b in zip(fast, plain):
        assert a.dtype == b.dtype == np.float32
        if name == "Lion":  # a sign flips where its argument is ~0 after rounding
            assert np.count_nonzero(np.abs(a.numpy() - b.numpy()) > 1e-5) <= a.numpy().size // 1000
        else:
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=2e-5, atol=2e-6)
    if name != "Lion":
        _assert_states_close(fast_optimizer, plain_optimizer, fast, plain, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta", "Lion"])
def test_each_built_in_rule_has_a_fused_form(name):
    update = getattr(bai.optim, name).update
    assert accelerated.fused_form(update) is not None


def test_a_subclass_with_its_own_rule_runs_it_when_accelerated(accel_on):
    class HalfStepAdam(bai.optim.Adam):
        def update(self, param, grad, state, group):
            param -= 0.5 * group["lr"] * grad

    param = bai.tensor(np.ones(3), requires_grad=True)
    optimizer = HalfStepAdam([param], lr=0.1)
    param.grad = bai.tensor(np.ones(3))
    optimizer.step()
    np.testing.assert_allclose(param.numpy(), np.full(3, 0.95))
    assert accelerated.fused_form(HalfStepAdam.update) is None
    assert accelerated.fused_form(bai.optim.AdamW.update) is accelerated.adam  # inherited rule


def test_the_fused_forms_switch_off_on_their_own(accel_on, monkeypatch):
    calls = []
    monkeypatch.setitem(
        accelerated.FUSED_FORMS,
        "buildingai.optim.adam.Adam.update",
        lambda runner, *args: calls.append(1) or accelerated.adam(runner, *args),
    )
    _run("Adam", {}, accelerate=True, shapes=[(3,)], steps=1)
    assert calls == [1]
    previous = bai.accel.set_enabled("optim.fused_updates", False)
    try:
        _run("Adam", {}, accelerate=True, shapes=[(3,)], steps=1)
    finally:
        bai.accel.set_enabled("optim.fused_updates", previous)
    assert calls == [1]


def test_both_switches_are_listed():
    listed = {entry["name"]: entry for entry in bai.accel.status()["kernels"]}
    for name in ("optim.fused_updates", "optim.packed_updates"):
        assert listed[name]["op"] is None and listed[name]["description"]


@pytest.mark.parametrize("saved_accelerated", [True, False], ids=["saved-on", "saved-off"])
@pytest.mark.parametrize("name, options", [OPTIMIZERS[0], OPTIMIZERS[3], OPTIMIZERS[6]], ids=str)
def test_a_checkpoint_saved_one_way_continues_the_other_way(name, options, saved_accelerated):
    """State saved from packed views loads as plain arrays and back; the runs continue alike."""
    params, optimizer = _run(name, options, accelerate=saved_accelerated, steps=3)
    saved = optimizer.state_dict()
    weights = [p.numpy().copy() for p in params]
    results = []
    for accelerate in (not saved_accelerated, saved_accelerated):
        fresh = [bai.tensor(w.copy(), requires_grad=True) for w in weights]
        with bai.accel.enabled(accelerate):
            loaded = getattr(bai.optim, name)(fresh, **options)
            loaded.load_state_dict(saved)
            for step in range(3):
                for position, param in enumerate(fresh):
                    grad = np.random.default_rng(7 * step + position).standard_normal(param.shape)
                    param.grad = bai.tensor(grad)
                loaded.step()
            state = loaded.state_dict()
        results.append(([p.numpy() for p in fresh], state))
    (first, first_state), (second, second_state) = results
    for a, b in zip(first, second):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
    assert first_state["state"].keys() == second_state["state"].keys()
    for index, entry in first_state["state"].items():
        for key, value in entry.items():
            if hasattr(value, "shape"):
                assert value.shape == second_state["state"][index][key].shape
                np.testing.assert_allclose(value, second_state["state"][index][key], atol=1e-12)
            else:
                assert value == second_state["state"][index][key]


def test_the_textbook_step_loads_no_compiled_tier():
    """With acceleration off, an optimizer step imports no numba and starts no pool."""
    code = (
        "import sys, numpy as np, buildingai as bai\n"
        "p = bai.tensor(np.ones((600, 600), np.float32), requires_grad=True)\n"
        "opt = bai.optim.Adam([p, bai.tensor(np.ones(3), requires_grad=True)], lr=0.1)\n"
        "p.grad = bai.tensor(np.ones((600, 600), np.float32))\n"
        "opt.step()\n"
        "assert 'numba' not in sys.modules, 'numba imported'\n"
        "assert not opt._accelerated\n"
    )
    env = {"BUILDINGAI_ACCEL": "0", "PATH": "/usr/bin:/bin"}
    subprocess.run([sys.executable, "-c", code], check=True, env=env, timeout=120)


@pytest.fixture
def twin_calls(monkeypatch):
    """(kernel, whether its twin ran) for every ``compiled.run`` call while the test runs."""
    pytest.importorskip("numba")
    ran = []
    run = accelerated.compiled.run

    def watched(kernel, arrays, keywords=None):
        done = run(kernel, arrays, keywords)
        ran.append((kernel, done))
        return done

    monkeypatch.setattr(accelerated.compiled, "run", watched)
    return ran


def test_float32_adam_takes_the_compiled_twin_and_agrees(accel_on, twin_calls):
    options = {"lr": 0.01, "weight_decay": 0.1, "amsgrad": True}
    fast, _ = _run("Adam", options, accelerate=True, dtype=np.float32, shapes=[(200, 100)])
    plain, _ = _run("Adam", options, accelerate=False, dtype=np.float32, shapes=[(200, 100)])
    assert (accelerated.adam_update, True) in twin_calls
    np.testing.assert_allclose(fast[0].numpy(), plain[0].numpy(), rtol=2e-5, atol=2e-6)


@pytest.mark.parametrize(
    "options",
    [{"momentum": 0.9, "weight_decay": 5e-4}, {}, {"momentum": 0.9, "nesterov": True}],
    ids=str,
)
def test_float32_sgd_takes_the_compiled_twin_and_agrees(accel_on, twin_calls, options):
    options = {"lr": 0.1, **options}
    fast, _ = _run("SGD", options, accelerate=True, dtype=np.float32, shapes=[(200, 100)])
    plain, _ = _run("SGD", options, accelerate=False, dtype=np.float32, shapes=[(200, 100)])
    assert (accelerated.sgd_update, True) in twin_calls
    np.testing.assert_allclose(fast[0].numpy(), plain[0].numpy(), rtol=2e-5, atol=2e-6)

"""OptimizerBase: groups, state dicts, hooks, explicit gradients, user-defined optimizers, errors."""

import json

import numpy as np
import pytest
import torch

import buildingai as bai
from buildingai.optim import OptimizerBase, OptimizerError
from tests.optim._compare import make_problem, max_difference, run_torch

pytestmark = pytest.mark.usefixtures("both_ways")


def _params(values=((1.0, 2.0), (3.0,))):
    return [bai.tensor(list(v), dtype="float64", requires_grad=True) for v in values]


def _set_grads(params, grads):
    for param, grad in zip(params, grads):
        param.grad = bai.tensor(np.array(grad, dtype=np.float64))


# ----- state dicts -----------------------------------------------------------------------------
def _to_json_and_arrays(state_dict):
    """Split a state dict as a checkpoint would: arrays to a side table, the rest to JSON."""
    arrays = {}

    def strip(value, path):
        if isinstance(value, np.ndarray):
            arrays[path] = value.copy()
            return {"__array__": path}
        if isinstance(value, dict):
            return {str(k): strip(v, f"{path}.{k}") for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [strip(v, f"{path}.{i}") for i, v in enumerate(value)]
        assert value is None or isinstance(value, (int, float, bool, str)), type(value)
        return value

    text = json.dumps(strip(state_dict, "root"))

    def restore(value):
        if isinstance(value, dict):
            if "__array__" in value:
                return arrays[value["__array__"]]
            return {k: restore(v) for k, v in value.items()}
        if isinstance(value, list):
            return [restore(v) for v in value]
        return value

    return restore(json.loads(text))


@pytest.mark.parametrize(
    "name, options",
    [
        ("SGD", {"lr": 0.05, "momentum": 0.9}),
        ("Adam", {"lr": 0.01, "amsgrad": True}),
        ("AdamW", {"lr": 0.01}),
        ("RMSprop", {"centered": True, "momentum": 0.5}),
        ("Adagrad", {"lr_decay": 0.1}),
        ("Adadelta", {}),
        ("Lion", {"lr": 0.01}),
    ],
)
def test_state_dict_round_trip_continues_identically(name, options):
    init, grads = make_problem(shapes=[(3,), (2, 2), (9000,)], steps=30)
    make = lambda params: getattr(bai.optim, name)(
        [{"params": params[:1], "lr": 0.02}, {"params": params[1:]}], **options
    )
    straight = [bai.tensor(a.copy(), requires_grad=True) for a in init]
    optimizer = make(straight)
    for step_grads in grads:
        _set_grads(straight, step_grads)
        optimizer.step()

    first = [bai.tensor(a.copy(), requires_grad=True) for a in init]
    optimizer = make(first)
    for step_grads in grads[:12]:
        _set_grads(first, step_grads)
        optimizer.step()
    saved = _to_json_and_arrays(optimizer.state_dict())
    resumed = [bai.tensor(p.numpy(), requires_grad=True) for p in first]
    optimizer = make(resumed)
    optimizer.load_state_dict(saved)
    for step_grads in grads[12:]:
        _set_grads(resumed, step_grads)
        optimizer.step()
    assert max_difference([p.numpy() for p in resumed], [p.numpy() for p in straight]) == 0.0


def test_state_dict_layout_matches_torch():
    init, grads = make_problem(shapes=[(3,), (2,)], steps=3)
    params = [bai.tensor(a.copy(), requires_grad=True) for a in init]
    optimizer = bai.optim.Adam([{"params": params[:1]}, {"params": params[1:], "lr": 0.1}])
    for step_grads in grads:
        _set_grads(params, step_grads)
        optimizer.step()
    ours = optimizer.state_dict()
    _, reference = run_torch(
        lambda p: torch.optim.Adam([{"params": p[:1]}, {"params": p[1:], "lr": 0.1}]),
        init,
        grads,
    )
    theirs = reference.state_dict()
    assert [g["params"] for g in ours["param_groups"]] == [
        g["params"] for g in theirs["param_groups"]
    ]
    assert ours["param_groups"][1]["lr"] == 0.1
    assert set(ours["state"]) == set(theirs["state"])
    for index, state in theirs["state"].items():
        assert ours["state"][index]["step"] == int(state["step"])
        np.testing.assert_allclose(ours["state"][index]["exp_avg_sq"], state["exp_avg_sq"].numpy())
    # a snapshot: later steps do not change it
    before = ours["state"][0]["exp_avg"].copy()
    optimizer.step()
    np.testing.assert_array_equal(ours["state"][0]["exp_avg"], before)


def test_load_state_dict_rejects_a_different_layout():
    optimizer = bai.optim.SGD(_params(), lr=0.1)
    other = bai.optim.SGD([{"params": _params()[:1]}, {"params": _params()[1:]}], lr=0.1)
    with pytest.raises(
        OptimizerError, match="state dict has 2 parameter groups, this optimizer has 1"
    ):
        optimizer.load_state_dict(other.state_dict())
    bigger = bai.optim.SGD(_params(((1.0,), (2.0,), (3.0,))), lr=0.1)
    with pytest.raises(OptimizerError, match="group 0 has 3 parameters in the state dict but 2"):
        optimizer.load_state_dict(bigger.state_dict())
    with pytest.raises(OptimizerError, match="needs 'state' and 'param_groups'"):
        optimizer.load_state_dict({})


# ----- hooks -----------------------------------------------------------------------------------
def test_hooks_fire_in_order_and_can_be_removed():
    params = _params()
    optimizer = bai.optim.SGD(params, lr=1.0)
    calls = []
    first = optimizer.register_step_pre_hook(lambda opt: calls.append(("pre1", opt)))
    optimizer.register_step_pre_hook(lambda opt: calls.append(("pre2", opt)))
    post = optimizer.register_step_post_hook(lambda opt: calls.append(("post", opt)))
    _set_grads(params, [[1.0, 1.0], [1.0]])
    optimizer.step()
    assert [name for name, _ in calls] == ["pre1", "pre2", "post"]
    assert all(opt is optimizer for _, opt in calls)
    first.remove()
    post.remove()
    first.remove()  # removing twice is harmless
    calls.clear()
    optimizer.step()
    assert [name for name, _ in calls] == ["pre2"]


def test_pre_hook_modifies_gradients_and_post_hook_sees_new_values():
    params = _params()
    optimizer = bai.optim.SGD(params, lr=1.0)

    def halve(opt):
        for group in opt.param_groups:
            for param in group["params"]:
                param.grad.data *= 0.5

    seen = []
    optimizer.register_step_pre_hook(halve)
    with optimizer.register_step_post_hook(lambda opt: seen.append(params[0].numpy())):
        _set_grads(params, [[2.0, 4.0], [6.0]])
        optimizer.step()
    np.testing.assert_array_equal(params[0].numpy(), [0.0, 0.0])
    np.testing.assert_array_equal(params[1].numpy(), [0.0])
    np.testing.assert_array_equal(seen[0], [0.0, 0.0])
    assert not optimizer._step_post_hooks  # the with-block removed it


def test_register_hooks_defaults_are_installed():
    class ClippedSGD(bai.optim.SGD):
        def register_hooks(self):
            return [bai.optim.clip_grad_hook(max_norm=1.0)]

    params = _params()
    optimizer = ClippedSGD(params, lr=1.0)
    _set_grads(params, [[3.0, 0.0], [4.0]])  # norm 5
    optimizer.step()
    np.testing.assert_allclose(params[0].numpy(), [1.0 - 0.6, 2.0], atol=1e-6)
    np.testing.assert_allclose(params[1].numpy(), [3.0 - 0.8], atol=1e-6)
    assert optimizer.default_hook_handles[0] is not None
    assert optimizer._step_pre_hooks[optimizer.default_hook_handles[0].id].last_total_norm == 5.0
    optimizer.default_hook_handles[0].remove()
    _set_grads(params, [[3.0, 0.0], [4.0]])
    optimizer.step()
    np.testing.assert_allclose(params[1].numpy(), [3.0 - 0.8 - 4.0], atol=1e-6)


def test_step_closure_runs_before_hooks():
    w = bai.tensor([2.0], dtype="float64", requires_grad=True)
    optimizer = bai.optim.SGD([w], lr=0.1)
    order = []
    optimizer.register_step_pre_hook(lambda opt: order.append(("hook", w.grad.item())))

    def closure():
        optimizer.zero_grad()
        loss = (w * w).sum()
        loss.backward()
        order.append(("closure", loss.item()))
        return loss

    loss = optimizer.step(closure)
    assert loss.item() == 4.0
    assert order == [("closure", 4.0), ("hook", 4.0)]
    np.testing.assert_allclose(w.numpy(), [2.0 - 0.4])


# ----- zero_grad, versions ---------------------------------------------------------------------
def test_zero_grad():
    params = _params()
    optimizer = bai.optim.SGD(params)
    _set_grads(params, [[1.0, 2.0], [3.0]])
    optimizer.zero_grad(set_to_none=False)
    np.testing.assert_array_equal(params[0].grad.numpy(), [0.0, 0.0])
    optimizer.zero_grad()
    assert params[0].grad is None and params[1].grad is None


def test_step_counts_as_an_in_place_change():
    w = bai.tensor([1.0, 2.0], dtype="float64", requires_grad=True)
    loss = (w * w).sum()  # saves w for backward
    optimizer = bai.optim.SGD([w], lr=0.1)
    w.grad = bai.tensor([1.0, 1.0])
    optimizer.step()
    with pytest.raises(bai.AutogradError, match="modified"):
        loss.backward()


# ----- explicit gradients ----------------------------------------------------------------------
def test_apply_gradients_equals_step_and_restores_grad():
    init, grads = make_problem(shapes=[(3,), (2, 2)], steps=5)
    by_step = [bai.tensor(a.copy(), requires_grad=True) for a in init]
    explicit = [bai.tensor(a.copy(), requires_grad=True) for a in init]
    opt_step = bai.optim.Adam(by_step, lr=0.1)
    opt_explicit = bai.optim.Adam(explicit, lr=0.1)
    marker = bai.tensor(np.full(3, 7.0))
    explicit[0].grad = marker
    for step_grads in grads:
        _set_grads(by_step, step_grads)
        opt_step.step()
        opt_explicit.apply_gradients([bai.tensor(step_grads[0]), step_grads[1]])
    assert max_difference([p.numpy() for p in explicit], [p.numpy() for p in by_step]) == 0.0
    assert explicit[0].grad is marker and explicit[1].grad is None


def test_apply_gradients_runs_hooks_without_touching_callers_arrays():
    w = bai.tensor([0.0, 0.0], dtype="float64", requires_grad=True)
    optimizer = bai.optim.SGD([w], lr=1.0)
    optimizer.register_step_pre_hook(bai.optim.clip_value_hook(0.5))
    grad = np.array([2.0, -0.25])
    optimizer.apply_gradients([grad])
    np.testing.assert_array_equal(w.numpy(), [-0.5, 0.25])
    np.testing.assert_array_equal(grad, [2.0, -0.25])
    optimizer.apply_gradients([None])  # None skips the parameter
    np.testing.assert_array_equal(w.numpy(), [-0.5, 0.25])


def test_apply_gradients_errors():
    optimizer = bai.optim.SGD(_params(), lr=0.1)
    with pytest.raises(OptimizerError, match="got 1 gradients for 2 parameters"):
        optimizer.apply_gradients([np.zeros(2)])
    with pytest.raises(
        OptimizerError, match=r"parameter 1 has shape \(3,\), the parameter has shape \(1,\)"
    ):
        optimizer.apply_gradients([np.zeros(2), np.zeros(3)])


# ----- user-defined optimizers -----------------------------------------------------------------
def _fit_linear_regression(make_optimizer, steps=200):
    rng = np.random.default_rng(0)
    x = bai.tensor(rng.standard_normal((50, 2)))
    true_w = np.array([[2.0], [-1.0]])
    y = bai.tensor(x.numpy() @ true_w + 0.5)
    w = bai.zeros(2, 1, dtype="float64", requires_grad=True)
    b = bai.zeros(1, dtype="float64", requires_grad=True)
    optimizer = make_optimizer([w, b])
    for _ in range(steps):
        error = x @ w + b - y
        loss = (error * error).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return loss.item(), w.numpy(), b.numpy()


def test_user_optimizer_with_only_an_update_rule():
    class MomentumSGD(OptimizerBase):
        def __init__(self, params, lr=0.01, beta=0.9):
            super().__init__(params, {"lr": lr, "beta": beta})

        def init_state(self, param, group):
            return {"velocity": np.zeros_like(param.data)}

        def update(self, param, grad, state, group):
            velocity = state["velocity"]
            velocity *= group["beta"]
            velocity += grad
            param -= group["lr"] * velocity

    loss, w, b = _fit_linear_regression(lambda p: MomentumSGD(p, lr=0.05))
    assert loss < 1e-8
    np.testing.assert_allclose(w, [[2.0], [-1.0]], atol=1e-4)
    np.testing.assert_allclose(b, [0.5], atol=1e-4)


def test_user_optimizer_with_its_own_step_gets_hooks():
    class PlainSGD(OptimizerBase):
        def __init__(self, params, lr=0.01):
            super().__init__(params, {"lr": lr})

        def step(self):
            assert not bai.is_grad_enabled()
            for group in self.param_groups:
                for param in group["params"]:
                    if param.grad is not None:
                        param.data -= group["lr"] * param.grad.data

    fired = []
    optimizer_holder = {}

    def make(params):
        optimizer = PlainSGD(params, lr=0.1)
        optimizer.register_step_pre_hook(lambda opt: fired.append("pre"))
        optimizer_holder["optimizer"] = optimizer
        return optimizer

    loss, w, _ = _fit_linear_regression(make)
    assert loss < 1e-8
    assert len(fired) == 200
    np.testing.assert_allclose(w, [[2.0], [-1.0]], atol=1e-4)


def test_missing_update_rule_is_explained():
    class Empty(OptimizerBase):
        pass

    params = _params()
    optimizer = Empty(params, {})
    _set_grads(params, [[1.0, 1.0], [1.0]])
    with pytest.raises(NotImplementedError, match="must define update"):
        optimizer.step()


# ----- errors ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "make, message",
    [
        (lambda p: bai.optim.SGD(p, lr=-0.1), "SGD: invalid lr -0.1; it must be >= 0.0"),
        (lambda p: bai.optim.Adam(p, lr=-1), "Adam: invalid lr -1"),
        (
            lambda p: bai.optim.Adam(p, betas=(0.9, 1.0)),
            r"invalid beta2 1.0; it must be in \[0.0, 1.0\)",
        ),
        (lambda p: bai.optim.AdamW(p, betas=(-0.1, 0.9)), "AdamW: invalid beta1 -0.1"),
        (lambda p: bai.optim.Lion(p, betas=(0.9,)), "betas must be a pair"),
        (lambda p: bai.optim.Adam(p, eps=-1e-8), "invalid eps"),
        (lambda p: bai.optim.RMSprop(p, alpha=-0.5), "RMSprop: invalid alpha"),
        (lambda p: bai.optim.Adagrad(p, lr_decay=-1), "Adagrad: invalid lr_decay"),
        (
            lambda p: bai.optim.Adadelta(p, rho=1.5),
            r"Adadelta: invalid rho 1.5; it must be in \[0, 1\]",
        ),
        (lambda p: bai.optim.SGD(p, weight_decay=-1), "invalid weight_decay"),
        (lambda p: bai.optim.SGD(p, nesterov=True), "Nesterov momentum requires momentum > 0"),
        (lambda p: bai.optim.SGD(p, lr="fast"), "lr must be a number"),
    ],
)
def test_bad_hyperparameters(make, message):
    with pytest.raises(OptimizerError, match=message):
        make(_params())


def test_bad_parameter_lists():
    with pytest.raises(OptimizerError, match="got an empty parameter list"):
        bai.optim.Adam([])
    with pytest.raises(OptimizerError, match="got an empty parameter list"):
        bai.optim.Adam(p for p in [])
    w, b = _params()
    with pytest.raises(OptimizerError, match="appear in more than one parameter group"):
        bai.optim.SGD([{"params": [w]}, {"params": [w, b]}])
    optimizer = bai.optim.SGD([w])
    with pytest.raises(OptimizerError, match="more than one parameter group"):
        optimizer.add_param_group({"params": w})
    with pytest.raises(OptimizerError, match="same parameter more than once"):
        bai.optim.SGD([w, w])
    with pytest.raises(OptimizerError, match="single Tensor"):
        bai.optim.SGD(w)
    with pytest.raises(OptimizerError, match="no stable order"):
        bai.optim.SGD([{"params": {w, b}}])
    with pytest.raises(OptimizerError, match="parameter 1 is a ndarray"):
        bai.optim.SGD([w, np.zeros(3)])
    with pytest.raises(OptimizerError, match="not a leaf"):
        bai.optim.SGD([w * 2.0])
    with pytest.raises(OptimizerError, match="only floating-point"):
        bai.optim.SGD([bai.tensor([1, 2])])
    with pytest.raises(OptimizerError, match="needs a 'params' entry"):
        bai.optim.SGD([{"lr": 0.1}])
    with pytest.raises(OptimizerError, match="help: pass"):
        bai.optim.SGD([w], lr=-1)


def test_add_param_group_fills_defaults():
    w, b = _params()
    optimizer = bai.optim.Adam([w], lr=0.1)
    optimizer.add_param_group({"params": [b], "lr": 0.5})
    assert optimizer.param_groups[1]["lr"] == 0.5
    assert optimizer.param_groups[1]["betas"] == (0.9, 0.999)
    assert "Parameter Group 1" in repr(optimizer)


def test_load_state_dict_rejects_state_shaped_for_another_parameter():
    first = bai.tensor(np.ones(3), requires_grad=True)
    optimizer = bai.optim.Adam([first])
    first.grad = bai.tensor(np.ones(3))
    optimizer.step()
    other = bai.tensor(np.ones((1, 1)), requires_grad=True)
    with pytest.raises(
        bai.optim.OptimizerError,
        match=r"state 'exp_avg' of parameter 0 has shape \(3,\), but the parameter has shape \(1, 1\)",
    ):
        bai.optim.Adam([other]).load_state_dict(optimizer.state_dict())

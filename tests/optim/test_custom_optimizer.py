# ruff: noqa: E701 - the user snippet below keeps its one-line `if ...: continue`
"""A custom optimizer written as users write it: no ``super().__init__``, its own ``step``, hooks
from ``register_hooks()``. The hooks run before every step, and the base class's services
(zero_grad, state_dict, hook handles) work."""

import numpy as np
import pytest

import buildingai
from buildingai.optim import OptimizerBase, OptimizerError, clip_grad_hook

pytestmark = pytest.mark.usefixtures("both_ways")


# The snippet exactly as users write it (only the import adapted).
# fmt: off
class MyOptimizer(OptimizerBase):
    def __init__(self, params, lr=0.01):
        self.params = list(params)
        self.lr = lr
    def step(self):
        for p in self.params:
            if p.grad is None: continue
            p.array -= self.lr * (p.grad + 0.1 * buildingai.sign(p.array))
    def register_hooks(self):
        return [clip_grad_hook(max_norm=1.0)]
# fmt: on


def _loss(w, b, x):
    return ((x @ w + b) ** 2).sum()


def _by_hand(w, b, x, lr):
    """One step: gradients of _loss, clipped to total norm 1, then sign-regularised SGD."""
    residual = 2 * (x @ w + b)
    grads = [x.T @ residual, residual.sum(axis=0)]
    total = np.sqrt(sum((g**2).sum() for g in grads))
    scale = min(1.0, 1.0 / (total + 1e-6))
    return [p - lr * (g * scale + 0.1 * np.sign(p)) for p, g in zip((w, b), grads)]


def test_user_optimizer_runs_its_hooks_on_every_step():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 3))
    w0, b0 = rng.standard_normal((3, 2)), rng.standard_normal(2)
    w = buildingai.tensor(w0.copy(), requires_grad=True)
    b = buildingai.tensor(b0.copy(), requires_grad=True)
    optimizer = MyOptimizer([w, b], lr=0.1)
    expected_w, expected_b = w0, b0
    for _ in range(3):
        optimizer.zero_grad()
        _loss(w, b, buildingai.tensor(x)).backward()
        assert np.sqrt(sum((p.grad.numpy() ** 2).sum() for p in (w, b))) > 1.0  # clipping bites
        optimizer.step()
        expected_w, expected_b = _by_hand(expected_w, expected_b, x, 0.1)
        assert type(w.array) is np.ndarray and w.dtype == np.float64
        np.testing.assert_allclose(w.numpy(), expected_w, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(b.numpy(), expected_b, rtol=1e-12, atol=1e-14)
        clipped = np.sqrt(sum((p.grad.numpy() ** 2).sum() for p in (w, b)))
        assert clipped == pytest.approx(1.0, abs=1e-5)  # the hook clipped before the update


def test_base_services_work_without_super_init():
    w = buildingai.tensor(np.ones(3), requires_grad=True)
    optimizer = MyOptimizer([w], lr=0.5)
    assert optimizer.param_groups[0]["params"] == [w]
    assert [type(h) for h in optimizer.default_hook_handles] == [buildingai.optim.StepHookHandle]
    (w * 5).sum().backward()
    optimizer.zero_grad()
    assert w.grad is None
    assert optimizer.state_dict() == {"state": {}, "param_groups": [{"params": [0]}]}
    optimizer.default_hook_handles[0].remove()  # without the clip hook: the raw gradient
    (w * 5).sum().backward()
    optimizer.step()
    np.testing.assert_allclose(w.numpy(), 1 - 0.5 * (5 + 0.1))
    seen = []
    optimizer.register_step_post_hook(lambda opt: seen.append(opt))
    optimizer.step()
    assert seen == [optimizer]


def test_subclass_of_a_user_optimizer_and_own_state_are_kept():
    class WithState(MyOptimizer):
        def __init__(self, params, lr=0.01):
            super().__init__(params, lr)
            self.state = {"mine": 1}

    w = buildingai.tensor(np.ones(2), requires_grad=True)
    optimizer = WithState([w])
    assert optimizer.state == {"mine": 1}
    assert len(optimizer.default_hook_handles) == 1  # registered once, not per __init__ level


def test_without_params_the_error_says_how_to_fix_it():
    class Forgetful(OptimizerBase):
        def __init__(self, params, lr=0.01):
            self.weights = list(params)

        def step(self):
            pass

    with pytest.raises(OptimizerError, match="did not call super") as info:
        Forgetful([buildingai.tensor(np.ones(2), requires_grad=True)])
    assert "self.params = list(params)" in str(info.value)


def test_optimizers_calling_super_init_are_unchanged():
    w = buildingai.tensor(np.ones(2), requires_grad=True)
    optimizer = buildingai.optim.SGD([w], lr=0.1)
    assert optimizer.default_hook_handles == []
    (w * 2).sum().backward()
    optimizer.step()
    np.testing.assert_allclose(w.numpy(), 1 - 0.2)


def test_a_scheduler_on_an_optimizer_without_group_rates_names_the_missing_lr():
    from buildingai.optim import StepLR

    class OwnRate(OptimizerBase):
        def __init__(self, params, lr=0.01):
            self.params = list(params)
            self.lr = lr

        def step(self):
            pass

    optimizer = OwnRate([buildingai.zeros(2, requires_grad=True)])
    with pytest.raises(OptimizerError, match=r"StepLR: parameter group 0 of OwnRate has no 'lr'"):
        StepLR(optimizer, step_size=1)

"""``lerp_``, ``addcmul_`` and ``addcdiv_`` outside the graph (a hand-written optimizer's
updates) run as one kernel each (``accel/updates.py``), with the bits of their formulas; in a
recorded graph, under a dispatch mode, or with operands the kernels do not take, the formulas
run as before."""

import math

import numpy as np
import pytest

import buildingai as bai
from buildingai.accel import updates
from buildingai.errors import AutogradError
from buildingai.functions import inplace_math

torch = pytest.importorskip("torch")

SIZE = 70_001


@pytest.fixture
def fused(monkeypatch):
    """The names of the updates the kernels took."""
    taken = []

    def spy(name, x, operands, scalar):
        took = updates.fused_update(name, x, operands, scalar)
        if took:
            taken.append(name)
        return took

    monkeypatch.setattr(inplace_math, "fused_update", spy)
    return taken


def _arrays(count, dtype=np.float32, seed=0, positive=False):
    rng = np.random.default_rng(seed)
    arrays = [rng.standard_normal(SIZE).astype(dtype) for _ in range(count)]
    return [np.abs(a) + 0.5 for a in arrays] if positive else arrays


UPDATES = {
    "lerp_": lambda x, a, b: x.lerp_(a, 0.1),
    "addcmul_": lambda x, a, b: x.addcmul_(a, b, value=0.001),
    "addcdiv_": lambda x, a, b: x.addcdiv_(a, b, value=-0.01),
}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", sorted(UPDATES))
def test_the_fused_update_gives_the_formulas_bits(request, fused, name, dtype):
    x, a, b = _arrays(3, dtype, positive=True)
    results = {}
    for accelerated in (True, False):
        with bai.accel.enabled(accelerated):
            ours = bai.tensor(x.copy())
            assert UPDATES[name](ours, bai.tensor(a), bai.tensor(b)) is ours
            results[accelerated] = ours.numpy()
    np.testing.assert_array_equal(results[True], results[False])
    assert fused == [name]
    theirs = torch.tensor(x.copy())
    UPDATES[name](theirs, torch.tensor(a), torch.tensor(b))
    tolerance = 3e-7 if dtype == np.float32 else 1e-15
    np.testing.assert_allclose(results[True], theirs.numpy(), rtol=tolerance, atol=tolerance)


def test_a_hand_written_adam_step_matches_pytorch(accel_on, fused):
    """torch.optim.adam's single-tensor step, as users copy it into their own optimizers."""

    def adam_step(param, grad, exp_avg, exp_avg_sq, step, lr=1e-3, b1=0.9, b2=0.999, eps=1e-8):
        exp_avg.lerp_(grad, 1 - b1)
        exp_avg_sq.mul_(b2).addcmul_(grad, grad.conj(), value=1 - b2)
        bias_correction1 = 1 - b1**step
        bias_correction2 = 1 - b2**step
        step_size = lr / bias_correction1
        bias_correction2_sqrt = math.sqrt(bias_correction2)
        denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(eps)
        param.addcdiv_(exp_avg, denom, value=-step_size)

    p, g = _arrays(2)
    ours = [bai.tensor(p.copy()), bai.tensor(g), bai.zeros(SIZE), bai.zeros(SIZE)]
    theirs = [torch.tensor(p.copy()), torch.tensor(g), torch.zeros(SIZE), torch.zeros(SIZE)]
    for step in (1, 2, 3):
        with bai.no_grad():
            adam_step(*ours, step)
        with torch.no_grad():
            adam_step(*theirs, step)
    np.testing.assert_allclose(ours[0].numpy(), theirs[0].numpy(), rtol=1e-6, atol=1e-7)
    assert fused == ["lerp_", "addcmul_", "addcdiv_"] * 3


def test_a_recorded_update_takes_the_graph_path(accel_on, fused):
    x = bai.tensor(np.ones(SIZE, np.float32), requires_grad=True)
    end = bai.tensor(np.full(SIZE, 3.0, np.float32), requires_grad=True)
    y = x * 1.0
    y.lerp_(end, 0.25)
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.full(SIZE, 0.75, np.float32))
    np.testing.assert_array_equal(end.grad.numpy(), np.full(SIZE, 0.25, np.float32))
    assert not fused
    leaf = bai.tensor(np.ones(SIZE, np.float32), requires_grad=True)
    with pytest.raises(AutogradError, match="lerp_"):
        leaf.lerp_(end.detach(), 0.5)


@pytest.mark.parametrize(
    "case", ["tensor weight", "broadcast operand", "overlapping view", "other dtype"]
)
def test_calls_the_kernels_do_not_take_run_the_formula(accel_on, fused, case):
    x, a = _arrays(2)
    ours, theirs = bai.tensor(x.copy()), torch.tensor(x.copy())
    if case == "tensor weight":
        ours.lerp_(bai.tensor(a), bai.tensor(np.float32(0.3)))
        theirs.lerp_(torch.tensor(a), torch.tensor(np.float32(0.3)))
    elif case == "broadcast operand":
        ours.addcmul_(bai.tensor(a[:1]), bai.tensor(a), value=0.5)
        theirs.addcmul_(torch.tensor(a[:1]), torch.tensor(a), value=0.5)
    elif case == "overlapping view":
        shifted = bai.tensor(x.copy())
        ours, view = shifted[1:], shifted[:-1]
        theirs_base = torch.tensor(x.copy())
        theirs, their_view = theirs_base[1:], theirs_base[:-1].clone()
        ours.addcdiv_(view, bai.tensor(np.abs(a[1:]) + 1), value=0.5)
        theirs.addcdiv_(their_view, torch.tensor(np.abs(a[1:]) + 1), value=0.5)
    else:
        ours.addcmul_(bai.tensor(a.astype(np.float64)), bai.tensor(a), value=0.5)
        theirs.addcmul_(torch.tensor(a.astype(np.float64)), torch.tensor(a), value=0.5)
    assert not fused
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=3e-7, atol=3e-7)


def test_the_update_bumps_the_version_and_views_see_it(accel_on, fused):
    x = bai.tensor(np.zeros(SIZE, np.float32))
    view, version = x[:10], x._version[0]
    x.addcmul_(bai.ones(SIZE), bai.ones(SIZE), value=2.0)
    assert x._version[0] == version + 1 and fused == ["addcmul_"]
    np.testing.assert_array_equal(view.numpy(), np.full(10, 2.0, np.float32))


def test_two_threads_update_their_own_tensors_at_once(accel_on):
    from concurrent.futures import ThreadPoolExecutor

    def work(seed):
        x, a, b = _arrays(3, seed=seed, positive=True)
        ours = bai.tensor(x.copy())
        with bai.no_grad():
            for _ in range(10):
                ours.addcdiv_(bai.tensor(a), bai.tensor(b), value=-0.01)
        expected = torch.tensor(x.copy())
        for _ in range(10):
            expected.addcdiv_(torch.tensor(a), torch.tensor(b), value=-0.01)
        return ours.numpy(), expected.numpy()

    with ThreadPoolExecutor(2) as pool:
        for ours, theirs in pool.map(work, [1, 2]):
            np.testing.assert_allclose(ours, theirs, rtol=1e-6, atol=1e-6)

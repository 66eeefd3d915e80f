"""Lion against a plain NumPy transcription of the published update rule, and in training."""

import numpy as np
import pytest

import buildingai as bai
from tests.optim._compare import make_problem, max_difference, run_ours

pytestmark = pytest.mark.usefixtures("both_ways")


def lion_reference(init, grads, lr, betas, weight_decay, maximize=False):
    """Chen et al. (2023), Algorithm 2, written out directly."""
    beta1, beta2 = betas
    params = [p.copy() for p in init]
    momenta = [np.zeros_like(p) for p in init]
    for step_grads in grads:
        for param, m, g in zip(params, momenta, step_grads):
            g = -g if maximize else g
            c = beta1 * m + (1 - beta1) * g
            param -= lr * (np.sign(c) + weight_decay * param)
            m[...] = beta2 * m + (1 - beta2) * g
    return params


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"lr": 0.01, "weight_decay": 0.1},
        {"lr": 0.003, "betas": (0.95, 0.98)},
        {"lr": 0.01, "maximize": True, "weight_decay": 0.01},
    ],
    ids=str,
)
def test_lion_matches_reference(options):
    init, grads = make_problem()
    ours, _ = run_ours(lambda p: bai.optim.Lion(p, **options), init, grads)
    full = {"lr": 1e-4, "betas": (0.9, 0.99), "weight_decay": 0.0, **options}
    theirs = lion_reference(init, grads, **full)
    assert max_difference(ours, theirs) <= 1e-10


def test_lion_moves_every_coordinate_by_lr():
    param = bai.tensor([1.0, -2.0, 3.0], requires_grad=True)
    optimizer = bai.optim.Lion([param], lr=0.5)
    param.grad = bai.tensor([1e-9, -100.0, 0.0])
    optimizer.step()
    np.testing.assert_allclose(param.numpy(), [0.5, -1.5, 3.0])


def test_lion_trains_linear_regression():
    rng = np.random.default_rng(0)
    x = bai.tensor(rng.standard_normal((64, 3)))
    true_w = np.array([[1.5], [-2.0], [0.5]])
    y = bai.tensor(x.numpy() @ true_w + 0.3)
    w = bai.zeros(3, 1, dtype="float64", requires_grad=True)
    b = bai.zeros(1, dtype="float64", requires_grad=True)
    optimizer = bai.optim.Lion([w, b], lr=0.05)
    scheduler = bai.optim.CosineAnnealingLR(optimizer, T_max=400)
    for _ in range(400):
        error = x @ w + b - y
        loss = (error * error).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        scheduler.step()
    assert loss.item() < 1e-6
    np.testing.assert_allclose(w.numpy(), true_w, atol=1e-3)

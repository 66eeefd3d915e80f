"""examples/advanced/maml_sinusoid.py: its meta-gradients equal a PyTorch MAML's on the same
tasks in float64 (second and first order), and a short meta-training lowers the
post-adaptation error."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

import buildingai as bai

torch = pytest.importorskip("torch")

_PATH = Path(__file__).resolve().parents[2] / "examples" / "advanced" / "maml_sinusoid.py"


def _example():
    spec = importlib.util.spec_from_file_location("maml_sinusoid", _PATH)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def _torch_meta_gradient(model, tasks, inner_lr: float, second_order: bool, inner_steps: int):
    """MAML written directly in PyTorch: torch.func.functional_call on a dict of weights."""
    reference = torch.nn.Sequential(
        torch.nn.Linear(1, 40),
        torch.nn.ReLU(),
        torch.nn.Linear(40, 40),
        torch.nn.ReLU(),
        torch.nn.Linear(40, 1),
    ).double()
    params = {
        name: torch.tensor(p.numpy(), requires_grad=True) for name, p in model.named_parameters()
    }
    total = [torch.zeros_like(p) for p in params.values()]
    for task in tasks:
        fast = dict(params)
        support_x = torch.tensor(task.support.inputs.numpy())
        support_y = torch.tensor(task.support.labels.numpy())
        for _ in range(inner_steps):
            prediction = torch.func.functional_call(reference, fast, (support_x,))
            loss = ((prediction - support_y) ** 2).mean()
            grads = torch.autograd.grad(loss, list(fast.values()), create_graph=second_order)
            fast = {name: p - inner_lr * g for (name, p), g in zip(fast.items(), grads)}
        query = torch.func.functional_call(
            reference, fast, (torch.tensor(task.query.inputs.numpy()),)
        )
        loss = ((query - torch.tensor(task.query.labels.numpy())) ** 2).mean()
        for position, g in enumerate(torch.autograd.grad(loss, list(params.values()))):
            total[position] += g
    return [g / len(tasks) for g in total]


@pytest.mark.parametrize("second_order", [True, False], ids=["second_order", "first_order"])
@pytest.mark.parametrize("inner_steps", [1, 2])
def test_meta_gradient_matches_pytorch(second_order, inner_steps):
    example = _example()
    bai.manual_seed(0)
    model = example.make_model().double()
    tasks = example.sample_tasks(np.random.default_rng(1), 4, dtype=bai.float64)
    # a large inner rate makes the second-order term large enough to matter
    maml = example.MAML(model, inner_lr=0.1, second_order=second_order, inner_steps=inner_steps)
    ours = maml.meta_gradient(tasks)
    theirs = _torch_meta_gradient(model, tasks, 0.1, second_order, inner_steps)
    for got, expected in zip(ours, theirs):
        np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-6, atol=1e-9)


def test_second_and_first_order_differ():
    example = _example()
    bai.manual_seed(0)
    model = example.make_model().double()
    tasks = example.sample_tasks(np.random.default_rng(2), 2, dtype=bai.float64)
    second = example.MAML(model, inner_lr=0.1).meta_gradient(tasks)
    first = example.MAML(model, inner_lr=0.1, second_order=False).meta_gradient(tasks)
    assert max(np.abs((a - b).numpy()).max() for a, b in zip(second, first)) > 1e-4


@pytest.mark.parametrize("second_order", [True, False], ids=["second_order", "first_order"])
@pytest.mark.slow
def test_short_meta_training_lowers_post_adaptation_error(second_order):
    example = _example()
    bai.manual_seed(0)
    maml = example.MAML(example.make_model(), second_order=second_order)
    eval_tasks = example.sample_tasks(np.random.default_rng(5), 100, query_points=50)
    before = example.post_adaptation_mse(maml, eval_tasks)
    example.train(maml, 150, np.random.default_rng(0), meta_batch=10)
    after = example.post_adaptation_mse(maml, eval_tasks)
    assert after < 0.9 * before, (before, after)

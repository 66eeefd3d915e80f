"""Fast weights: differentiable ``clone``, out-of-place ``update``, ``functional_call`` and the
meta-batch loop of the issue, first and second order, against PyTorch in float64."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

import buildingai
import buildingai as bai
from buildingai import nn
from buildingai.nn import Linear, Sequential, functional_call
from buildingai.optim import SGD

torch = pytest.importorskip("torch")


def _mlp(seed: int = 0) -> Sequential:
    bai.manual_seed(seed)
    return Sequential(Linear(1, 8), nn.Tanh(), Linear(8, 1)).double()


def _torch_params(model) -> dict:
    return {
        name: torch.tensor(p.numpy(), requires_grad=True) for name, p in model.named_parameters()
    }


def _torch_forward(params: dict, x):
    hidden = torch.tanh(x @ params["0.weight"].T + params["0.bias"])
    return hidden @ params["2.weight"].T + params["2.bias"]


# ----- clone and update -------------------------------------------------------------------------
def test_clone_parameters_are_graph_values_of_the_originals():
    model = _mlp()
    fast_weights = model.clone()
    for original, copied in zip(model.parameters(), fast_weights.parameters()):
        assert copied is not original and not copied.is_leaf and copied.requires_grad
        np.testing.assert_array_equal(copied.numpy(), original.numpy())
    x = bai.randn(4, 1, dtype=bai.float64)
    fast_weights(x).sum().backward()
    assert all(p.grad is not None for p in model.parameters())
    model_grads = [p.grad.numpy() for p in model.parameters()]
    model.zero_grad()
    model(x).sum().backward()
    for expected, got in zip(model_grads, model.parameters()):
        np.testing.assert_allclose(got.grad.numpy(), expected)


def test_update_is_out_of_place_and_second_order_matches_torch():
    model = _mlp(1)
    x = bai.randn(5, 1, dtype=bai.float64)
    y = bai.randn(5, 1, dtype=bai.float64)
    before = [p.numpy().copy() for p in model.parameters()]

    fast_weights = model.clone()
    inner = ((fast_weights(x) - y) ** 2).mean()
    grads = buildingai.grad(inner, fast_weights.parameters(), create_graph=True)
    cloned = list(fast_weights.parameters())
    adapted = fast_weights.update(grads, lr=0.1)
    assert adapted is fast_weights
    for old, new, grad in zip(cloned, fast_weights.parameters(), grads):
        np.testing.assert_allclose(new.numpy(), old.numpy() - 0.1 * grad.numpy())
    outer = ((adapted(x) - y) ** 2).mean()
    meta = buildingai.grad(outer, model.parameters())
    for value, kept in zip(model.parameters(), before):
        np.testing.assert_array_equal(value.numpy(), kept)  # nothing was written

    params = _torch_params(model)
    tx, ty = torch.tensor(x.numpy()), torch.tensor(y.numpy())
    inner_t = ((_torch_forward(params, tx) - ty) ** 2).mean()
    grads_t = torch.autograd.grad(inner_t, list(params.values()), create_graph=True)
    stepped = {n: p - 0.1 * g for (n, p), g in zip(params.items(), grads_t)}
    outer_t = ((_torch_forward(stepped, tx) - ty) ** 2).mean()
    meta_t = torch.autograd.grad(outer_t, list(params.values()))
    for ours, theirs in zip(meta, meta_t):
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-10, atol=1e-12)


def test_detached_clone_gives_first_order_gradients_at_the_adapted_weights():
    model = _mlp(2)
    x = bai.randn(5, 1, dtype=bai.float64)
    fast_weights = model.clone(detach=True)
    leaves = list(fast_weights.parameters())
    assert all(p.is_leaf for p in leaves)
    grads = buildingai.grad(fast_weights(x).pow(2).mean(), leaves)
    fast_weights.update(grads, lr=0.5)
    outer = fast_weights(x).pow(2).mean()
    first_order = buildingai.grad(outer, leaves)
    at_adapted = fast_weights.clone(detach=True)
    direct = buildingai.grad(at_adapted(x).pow(2).mean(), at_adapted.parameters())
    for ours, expected in zip(first_order, direct):
        np.testing.assert_allclose(ours.numpy(), expected.numpy(), rtol=1e-12)
    assert all(p.grad is None for p in model.parameters())


def test_clone_keeps_shared_parameters_shared_and_update_steps_them_once():
    shared = Linear(2, 2).double()
    model = Sequential(shared, shared)
    fast_weights = model.clone()
    assert fast_weights[0].weight is fast_weights[1].weight
    grads = buildingai.grad(
        fast_weights(bai.ones(1, 2, dtype=bai.float64)).sum(), fast_weights.parameters()
    )
    fast_weights.update(grads, lr=1.0)
    assert fast_weights[0].weight is fast_weights[1].weight
    assert len(list(fast_weights.parameters())) == 2


def test_update_names_the_problem():
    fast_weights = _mlp().clone()
    with pytest.raises(bai.BuildingAIError, match=r"got 1 gradients for 4 parameters"):
        fast_weights.update([None], lr=0.1)
    grads = [bai.zeros(3, dtype=bai.float64), None, None, None]
    with pytest.raises(
        bai.BuildingAIError, match=r"'0.weight' is \(3,\), the parameter is shape \(8, 1\)"
    ):
        fast_weights.update(grads, lr=0.1)


# ----- functional_call ------------------------------------------------------------------------------
def test_functional_call_matches_torch_func_and_restores_the_module():
    model = _mlp(3)
    torch_model = torch.nn.Sequential(
        torch.nn.Linear(1, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1)
    ).double()
    new = {"0.weight": bai.randn(8, 1, dtype=bai.float64, requires_grad=True)}
    x = bai.randn(3, 1, dtype=bai.float64)
    ours = functional_call(model, new, x)
    same = functional_call(model, new, (x,))  # a tuple of inputs, as in PyTorch
    np.testing.assert_array_equal(ours.numpy(), same.numpy())
    assert model[0].weight is model._modules["0"]._parameters["weight"]
    assert not np.array_equal(model[0].weight.numpy(), new["0.weight"].numpy())

    torch_model.load_state_dict({k: torch.tensor(v.numpy()) for k, v in model.state_dict().items()})
    torch_new = {"0.weight": torch.tensor(new["0.weight"].numpy(), requires_grad=True)}
    theirs = torch.func.functional_call(torch_model, torch_new, (torch.tensor(x.numpy()),))
    np.testing.assert_allclose(ours.numpy(), theirs.detach().numpy(), rtol=1e-12)
    (grad,) = buildingai.grad(ours.sum(), [new["0.weight"]])
    (torch_grad,) = torch.autograd.grad(theirs.sum(), [torch_new["0.weight"]])
    np.testing.assert_allclose(grad.numpy(), torch_grad.numpy(), rtol=1e-12)


def test_functional_call_restores_after_an_error_and_names_unknown_keys():
    model = _mlp()
    original = model[0].weight
    with pytest.raises(bai.ShapeError):
        functional_call(model, {"0.weight": bai.zeros(8, 5, dtype=bai.float64)}, bai.ones(2, 1))
    assert model[0].weight is original
    with pytest.raises(bai.ArgumentError, match="no parameter or buffer named '0.wieght'"):
        functional_call(model, {"0.wieght": original}, bai.ones(2, 1))
    with pytest.raises(bai.ArgumentError, match="strict=True but no value was given for '0.bias'"):
        functional_call(model, {"0.weight": original}, bai.ones(2, 1), strict=True)


# ----- the meta-batch loop, as users write it ---------------------------------------------------------
class _Prediction:
    def __init__(self, output, target):
        self.output, self.target = output, target

    def loss(self):
        return ((self.output - self.target) ** 2).mean()


class _Adapted:
    """The user's convention: ``adapted(batch).loss()``."""

    def __init__(self, model):
        self.model = model

    def __call__(self, batch):
        return _Prediction(self.model(batch.inputs), batch.labels)


class _MAML:
    def __init__(self, model, inner_lr, create_graph):
        self.model, self.inner_lr, self.create_graph = model, inner_lr, create_graph

    def adapt(self, support):
        fast_weights = self.model.clone()
        loss = _Adapted(fast_weights)(support).loss()
        grads = buildingai.grad(loss, fast_weights.parameters(), create_graph=self.create_graph)
        return _Adapted(fast_weights.update(grads, lr=self.inner_lr))

    def meta_step(self, meta_batch, optimizer):
        meta_grad = 0
        for task in meta_batch:
            adapted = self.adapt(task.support)
            loss = adapted(task.query).loss()
            meta_grad += buildingai.grad(loss, self.model.parameters())
        optimizer.apply_gradients(meta_grad / len(meta_batch))


def _tasks(count: int):
    rng = np.random.default_rng(7)
    tasks = []
    for _ in range(count):
        amplitude, phase = rng.uniform(0.1, 5.0), rng.uniform(0, np.pi)
        split = []
        for _ in range(2):
            x = rng.uniform(-5, 5, size=(5, 1))
            split.append(SimpleNamespace(inputs=x, labels=amplitude * np.sin(x - phase)))
        tasks.append(SimpleNamespace(support=split[0], query=split[1]))
    return tasks


def _as(batch, make):
    return SimpleNamespace(inputs=make(batch.inputs), labels=make(batch.labels))


def _torch_meta_gradient(model, tasks, inner_lr, create_graph):
    params = _torch_params(model)
    total = [torch.zeros_like(p) for p in params.values()]
    for task in tasks:
        support, query = _as(task.support, torch.tensor), _as(task.query, torch.tensor)
        inner = ((_torch_forward(params, support.inputs) - support.labels) ** 2).mean()
        grads = torch.autograd.grad(inner, list(params.values()), create_graph=create_graph)
        stepped = {n: p - inner_lr * g for (n, p), g in zip(params.items(), grads)}
        outer = ((_torch_forward(stepped, query.inputs) - query.labels) ** 2).mean()
        for position, g in enumerate(torch.autograd.grad(outer, list(params.values()))):
            total[position] += g
    return [g / len(tasks) for g in total]


@pytest.mark.parametrize("create_graph", [False, True], ids=["first_order", "second_order"])
def test_meta_batch_snippet_matches_pytorch(create_graph):
    model = _mlp(4)
    tasks = _tasks(3)
    expected = _torch_meta_gradient(model, tasks, 0.01, create_graph)
    before = [p.numpy().copy() for p in model.parameters()]
    meta_batch = [
        SimpleNamespace(support=_as(t.support, bai.tensor), query=_as(t.query, bai.tensor))
        for t in tasks
    ]
    _MAML(model, inner_lr=0.01, create_graph=create_graph).meta_step(
        meta_batch, SGD(model.parameters(), lr=1.0)
    )
    for old, new, grad in zip(before, model.parameters(), expected):
        np.testing.assert_allclose(old - new.numpy(), grad.numpy(), rtol=1e-9, atol=1e-12)
    assert all(p.grad is None for p in model.parameters())

"""The loss-gradient pass (``graph/passes/loss_gradient.py``): in a compiled training step,
``nll_loss_grad`` -> ``log_softmax_grad`` of the same log-probabilities becomes one
``log_softmax_nll_grad`` node where nothing else reads the scattered gradient, and the step
computes what it computed before the pass (bit for bit) and what eager execution computes."""

import numpy as np
import pytest

import buildingai as bai
from buildingai import nn
from buildingai.graph import TensorSpec
from buildingai.graph.passes import join_loss_gradients
from buildingai.nn import functional as F

BATCH, FEATURES, CLASSES = 6, 5, 7


@pytest.fixture(params=["accelerated", "records"])
def acceleration(request):
    with bai.accel.enabled(request.param == "accelerated"):
        yield request.param


def _names(graph):
    return [node.op.name for node in graph.nodes]


def _batch():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((BATCH, FEATURES)).astype("float32")
    y = rng.integers(0, CLASSES, BATCH)
    y[2] = -100  # an ignored target: no gradient from its sample
    return bai.tensor(x), bai.tensor(y)


def _step(loss_of):
    """A linear model ending in log_softmax, trained by SGD on ``loss_of(log_probs, y)``."""
    bai.manual_seed(0)
    model = nn.Linear(FEATURES, CLASSES)
    optimizer = bai.optim.SGD(model.parameters(), lr=0.5)

    def step(x, y):
        optimizer.zero_grad()
        loss = loss_of(F.log_softmax(model(x), dim=1), y)
        loss.backward()
        optimizer.step()
        return loss

    return model, step


def _nll_mean(log_probs, y):
    return F.nll_loss(log_probs, y)


def _criterion_sum(log_probs, y):  # as a model written for nn.NLLLoss
    return nn.NLLLoss(reduction="sum")(log_probs, y)


def _nll_and_more(log_probs, y):  # the log-probabilities' gradient also comes from elsewhere
    return F.nll_loss(log_probs, y) + log_probs.exp().mean()


def test_classes_along_a_middle_axis_are_joined_too(acceleration):
    """(N, C, T) log-probabilities with (N, T) targets, as a sequence model scores its steps:
    the joined op runs its record (the kernel takes (N, C) rows), with the same results."""
    rng = np.random.default_rng(1)
    x = bai.tensor(rng.standard_normal((3, FEATURES, 4)).astype("float32"))
    y = bai.tensor(rng.integers(0, CLASSES, (3, 4)))
    results = []
    for compiled in (False, True):
        bai.manual_seed(0)
        model = nn.Conv1d(FEATURES, CLASSES, 1)
        step = _sequence_step(model, bai.optim.SGD(model.parameters(), lr=0.5))
        spec = [TensorSpec((None, FEATURES, 4)), TensorSpec((None, 4), "int64")]
        run = bai.compile(step, spec) if compiled else step
        losses = [run(x, y).item() for _ in range(2)]
        results.append((losses, [p.numpy().copy() for p in model.parameters()]))
        if compiled:
            assert "log_softmax_nll_grad" in _names(run.graph)
    (eager_losses, eager_state), (losses, state) = results
    np.testing.assert_allclose(losses, eager_losses, rtol=1e-6)
    for got, expected in zip(state, eager_state):
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


def _sequence_step(model, optimizer):
    def step(x, y):
        optimizer.zero_grad()
        loss = F.nll_loss(F.log_softmax(model(x), dim=1), y)
        loss.backward()
        optimizer.step()
        return loss

    return step


def _run(loss_of, compiled, optimize=True, steps=3):
    """Losses and parameters after ``steps`` steps, and the compiled graph (None in eager)."""
    x, y = _batch()
    model, step = _step(loss_of)
    spec = [TensorSpec((None, FEATURES)), TensorSpec((None,), "int64")]
    run = bai.compile(step, spec, optimize=optimize) if compiled else step
    losses = [run(x, y).item() for _ in range(steps)]
    graph = run.graph if compiled else None
    return losses, [p.numpy().copy() for p in model.parameters()], graph


@pytest.mark.parametrize("loss_of", [_nll_mean, _criterion_sum])
def test_nll_loss_through_log_softmax_is_one_gradient_node(acceleration, loss_of):
    losses, state, graph = _run(loss_of, compiled=True)
    names = _names(graph)
    assert names.count("log_softmax_nll_grad") == 1
    assert "nll_loss_grad" not in names and "log_softmax_grad" not in names
    before_losses, before_state, before = _run(loss_of, compiled=True, optimize=False)
    assert "nll_loss_grad" in _names(before) and "log_softmax_grad" in _names(before)
    assert "log_softmax_nll_grad" in _names(join_loss_gradients(before))
    assert losses == before_losses
    for got, expected in zip(state, before_state):
        np.testing.assert_array_equal(got, expected)
    eager_losses, eager_state, _ = _run(loss_of, compiled=False)
    np.testing.assert_allclose(losses, eager_losses, rtol=1e-6)
    for got, expected in zip(state, eager_state):
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


def test_a_scattered_gradient_summed_with_another_is_left_apart(acceleration):
    losses, state, graph = _run(_nll_and_more, compiled=True)
    names = _names(graph)
    assert "log_softmax_nll_grad" not in names and "nll_loss_grad" in names
    eager_losses, eager_state, _ = _run(_nll_and_more, compiled=False)
    np.testing.assert_allclose(losses, eager_losses, rtol=1e-6)
    for got, expected in zip(state, eager_state):
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)

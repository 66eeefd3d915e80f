"""memory_scope: intermediates released at the end of the block, results and gradients exactly
as without it, released tensors raising with the line that made them, and the leak report."""

from __future__ import annotations

import gc

import numpy as np
import pytest

import buildingai as bai
from buildingai import memory, nn
from buildingai.memory import ReleasedTensorError


def _current() -> int:
    gc.collect()
    return memory.stats()["current"]


def _layers():
    bai.manual_seed(0)
    return nn.Linear(32, 256), nn.Linear(256, 256), nn.Linear(256, 10)


def test_issue_snippet_releases_intermediates_and_stats_return_to_baseline():
    layer1, layer2, layer3 = _layers()
    input = bai.Tensor(np.random.default_rng(0).standard_normal((64, 32)).astype(np.float32))
    from buildingai import memory_scope

    with bai.no_grad():
        expected = layer3(layer2(layer1(input))).numpy()
        base = _current()
        with memory_scope():
            x = layer1(input)
            y = layer2(x)
            output = layer3(y)
    assert _current() - base == output.array.nbytes  # x and y are gone although named
    np.testing.assert_array_equal(output.numpy(), expected)
    with pytest.raises(ReleasedTensorError, match=r"x = layer1\(input\)"):
        x + 1
    with pytest.raises(ReleasedTensorError, match=r"y = layer2\(x\)"):
        y.numpy()
    with pytest.raises(ReleasedTensorError, match="scope.keep"):
        print(y.shape)
    del output
    assert _current() == base


def test_results_and_gradients_equal_the_run_without_the_scope():
    layer1, layer2, layer3 = _layers()
    input = bai.Tensor(np.random.default_rng(1).standard_normal((64, 32)).astype(np.float32))

    def run(scoped: bool):
        for layer in (layer1, layer2, layer3):
            layer.zero_grad()
        scope = bai.memory_scope() if scoped else None
        if scope is not None:
            scope.__enter__()
        center = input.mean(axis=0)  # no graph: used once, then not needed
        centered = input - center
        hidden = layer2(layer1(centered).relu())
        output = layer3(hidden)
        if scope is not None:
            scope.__exit__(None, None, None)
        output.sum().backward()
        grads = [p.grad.numpy() for layer in (layer1, layer2, layer3) for p in layer.parameters()]
        return output.numpy(), grads, center, hidden

    plain_output, plain_grads, _, _ = run(False)
    output, grads, center, hidden = run(True)
    np.testing.assert_array_equal(output, plain_output)
    for got, expected in zip(grads, plain_grads):
        np.testing.assert_array_equal(got, expected)
    with pytest.raises(ReleasedTensorError, match=r"center = input.mean\(axis=0\)"):
        center.sum()
    assert hidden.shape == (64, 256)  # saved by the output's graph: kept


def test_keep_parameters_and_exceptions():
    layer1, layer2, _ = _layers()
    input = bai.Tensor(np.ones((4, 32), np.float32))
    with bai.no_grad(), bai.memory_scope() as scope:
        hidden = scope.keep(layer1(input))
        output = layer2(hidden)
    assert hidden.shape == (4, 256) and output.shape == (4, 256)
    assert layer1.weight.shape == (256, 32)  # parameters are never released
    with pytest.raises(RuntimeError, match="stop"), bai.no_grad(), bai.memory_scope():
        first = layer1(input)
        layer2(first)
        raise RuntimeError("stop")
    assert first.shape == (4, 256)  # an exception leaves everything for the traceback


def test_report_names_the_running_sum_that_keeps_every_graph():
    layer1, layer2, layer3 = _layers()
    batches = [bai.Tensor(np.full((16, 32), i, np.float32)) for i in range(4)]
    total_loss = 0
    with bai.memory_scope(report=True) as scope:
        for batch in batches:
            loss = layer3(layer2(layer1(batch))).pow(2).mean()
            total_loss += loss
    first = scope.kept[0]
    assert first.history and "total_loss += loss" in first.line
    assert first.reason == "result of the block"
    assert first.nbytes >= 4 * 16 * 256 * 4  # every step's activations
    assert "total_loss += loss" in scope.report_text().splitlines()[1]
    assert "holds autograd history" in scope.report_text()


def test_a_long_block_forgets_freed_tensors_as_it_goes():
    x = bai.Tensor(np.ones(3, np.float32))
    with bai.no_grad(), bai.memory_scope() as scope:
        total = x
        for _ in range(5000):
            total = total + 1.0
            largest = len(scope._made)
    assert largest <= 4097  # the freed sums were dropped from the bookkeeping
    np.testing.assert_array_equal(total.numpy(), np.full(3, 5001.0, np.float32))

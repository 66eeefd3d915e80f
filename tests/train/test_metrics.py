"""Metrics against NumPy."""

import numpy as np
import pytest

import buildingai as bai
from buildingai.errors import ShapeError
from buildingai.train import Accuracy, Mean, accuracy, correct_counts, top_k_accuracy
from buildingai.train.metrics import metric_from_name


def test_accuracy_and_top_k_vs_numpy():
    rng = np.random.default_rng(0)
    scores = rng.standard_normal((50, 7))
    labels = rng.integers(0, 7, 50)
    assert accuracy(bai.tensor(scores), bai.tensor(labels)) == np.mean(scores.argmax(1) == labels)
    for k in (1, 3, 7):
        top = np.argsort(-scores, axis=1)[:, :k]
        expected = np.mean((top == labels[:, None]).any(axis=1))
        assert top_k_accuracy(scores, labels, k) == pytest.approx(expected)


def test_per_position_and_binary():
    rng = np.random.default_rng(1)
    scores = rng.standard_normal((4, 5, 6))  # (N, C, L)
    labels = rng.integers(0, 5, (4, 6))
    assert correct_counts(scores, labels) == (int(np.sum(scores.argmax(1) == labels)), 24)
    logits = np.array([-1.0, 2.0, 0.5, -0.1])
    assert accuracy(logits, np.array([0, 1, 0, 0])) == 0.75
    assert accuracy(logits[:, None], np.array([0, 1, 0, 0])) == 0.75


def test_accumulators():
    metric = Accuracy(top_k=2)
    metric.update(np.array([[3.0, 2, 1], [1, 2, 3]]), np.array([1, 0]))
    metric.update(np.array([[0.0, 0, 1]]), np.array([2]))
    assert metric.compute() == pytest.approx(2 / 3)
    metric.reset()
    assert np.isnan(metric.compute())
    mean = Mean()
    mean.update(2.0, weight=3)
    mean.update(bai.tensor(4.0), weight=1)
    assert mean.compute() == pytest.approx(2.5)


def test_errors_and_names():
    with pytest.raises(
        ShapeError, match=r"\[accuracy\] outputs \(3, 4\) do not fit targets \(2,\)"
    ):
        accuracy(np.zeros((3, 4)), np.zeros(2, int))
    with pytest.raises(ShapeError, match="top_k=5 must be in"):
        top_k_accuracy(np.zeros((3, 4)), np.zeros(3, int), 5)
    with pytest.raises(ShapeError, match="needs class scores"):
        top_k_accuracy(np.zeros(3), np.zeros(3, int), 2)
    assert metric_from_name("top5_accuracy").top_k == 5
    with pytest.raises(Exception, match="unknown metric 'f1'"):
        metric_from_name("f1")

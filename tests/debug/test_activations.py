"""activation_stats: per-module output statistics, checked against NumPy on the same values,
and a layer of dead ReLUs showing 100% zeros."""

from __future__ import annotations

import numpy as np
import pytest

import buildingai as bai
from buildingai import nn
from buildingai.debug import activation_stats


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layer1 = nn.Linear(5, 7)
        self.relu = nn.ReLU()
        self.layer2 = nn.Linear(7, 3)
        self.squash = nn.Tanh()

    def forward(self, x):
        return self.squash(self.layer2(self.relu(self.layer1(x))))


def batch(seed: int = 0):
    return bai.tensor(np.random.default_rng(seed).standard_normal((64, 5)))


def test_a_layer_of_dead_relus_shows_all_zeros():
    model = Net()
    with bai.no_grad():
        model.layer1.bias.array[...] = -1e3  # every pre-activation is negative: all ReLUs dead
    with activation_stats(model, "layer1", "relu") as stats:
        model(batch())
    report = stats.as_dict()
    assert report["relu"]["zeros"] == 1.0
    assert report["relu"]["max"] == 0.0
    assert report["layer1"]["zeros"] == 0.0
    assert "100.0%" in stats.table()


def test_statistics_match_numpy_over_every_call():
    model = Net()
    first, second = batch(1), batch(2)
    with activation_stats(model, "layer2", "squash") as stats:
        outputs = [model(first), model(second)]
    with bai.no_grad():
        hidden = [model.layer2(model.relu(model.layer1(x))).array for x in (first, second)]
    values = np.concatenate([h.ravel() for h in hidden])
    row = stats.report["layer2"]
    assert row["calls"] == 2 and row["count"] == values.size
    assert row["mean"] == pytest.approx(values.mean(), rel=1e-10)
    assert row["std"] == pytest.approx(values.std(), rel=1e-8)
    assert (row["min"], row["max"]) == (values.min(), values.max())
    assert row["saturated"] is None  # a Linear output has no bounded range
    squashed = np.concatenate([o.array.ravel() for o in outputs])
    assert stats.report["squash"]["saturated"] == pytest.approx(np.mean(np.abs(squashed) >= 0.99))


def test_saturation_threshold_for_other_modules_and_hooks_removed():
    model = Net()
    with bai.no_grad():
        model.layer1.weight.array *= 100
    with activation_stats(model, "layer1", saturation=3.0) as stats:
        out = model.layer1(batch())
    assert stats.report["layer1"]["saturated"] == pytest.approx(np.mean(np.abs(out.array) >= 3.0))
    model(batch())  # after the block nothing is recorded
    assert stats.report["layer1"]["calls"] == 1
    assert not model.layer1._forward_hooks


def test_default_watches_every_leaf_module_and_names_unknown_ones():
    model = Net()
    with activation_stats(model) as stats:
        model(batch())
    assert list(stats.report) == ["layer1", "relu", "layer2", "squash"]
    with pytest.raises(KeyError, match="has no module 'layer9'.*layer1"):
        activation_stats(model, "layer9")


def test_user_code_as_the_issue_writes_it():
    model = Net()
    optimizer = bai.optim.SGD(model.parameters(), lr=0.01)

    def train_step(batch):
        loss = model(batch).square().mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

    with activation_stats(model, "layer1", "layer2") as stats:
        train_step(batch())
    assert set(stats.as_dict()) == {"layer1", "layer2"}
    assert bai.debug.activation_stats is activation_stats


def test_float32_outputs_match_torch_in_float64():
    torch = pytest.importorskip("torch")
    model = nn.Sequential(nn.Linear(5, 300))
    x = bai.tensor(np.random.default_rng(3).standard_normal((200, 5)).astype(np.float32) + 4)
    with activation_stats(model, "0") as stats:
        out = model(x)
    reference = torch.from_numpy(np.asarray(out.array)).double()
    row = stats.report["0"]
    assert row["mean"] == pytest.approx(reference.mean().item(), rel=1e-6)
    assert row["std"] == pytest.approx(reference.std(correction=0).item(), rel=1e-5)

"""gradient_monitor: norms and NaN/Inf counts per parameter, compared with PyTorch, and the
exploding-gradient warning from a huge learning rate naming the parameter."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import buildingai as bai
from buildingai import nn
from buildingai.debug import GradientMonitor, GradientWarning, gradient_monitor


class Regressor(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.hidden = nn.Linear(6, 8)
        self.out = nn.Linear(8, 1)

    def forward(self, x):
        return self.out(self.hidden(x))


def data(seed: int = 0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((32, 6)) * 10
    return bai.tensor(x), bai.tensor(x.sum(axis=1, keepdims=True))


def model64():
    bai.manual_seed(0)
    model = Regressor()
    for parameter in model.parameters():
        parameter.data = parameter.data.astype(np.float64)
    return model


def test_exploding_gradients_from_a_huge_learning_rate_name_the_parameter():
    model = model64()
    x, y = data()
    optimizer = bai.optim.SGD(model.parameters(), lr=10.0)  # far too large for inputs of scale 10

    @gradient_monitor
    def train_step(x, y):
        loss = ((model(x) - y) ** 2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        return loss

    with pytest.warns(GradientWarning) as caught:
        for _ in range(4):
            train_step(x, y)
    assert "exploding gradient in 'out.weight'" in "\n".join(str(w.message) for w in caught)
    assert len(caught) == 4  # once per parameter, not once per step
    report = train_step.monitor.as_dict()
    assert set(report) == {"hidden.weight", "hidden.bias", "out.weight", "out.bias"}
    assert report["out.weight"]["status"] == "exploding"
    assert report["out.weight"]["passes"] == 4
    assert "exploding" in train_step.monitor.table()


def test_norms_match_pytorch():
    model = model64()
    x, y = data(1)
    with gradient_monitor(model, explode=1e12) as monitor:
        ((model(x) - y) ** 2).mean().backward()

    reference = torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.Linear(8, 1)).double()
    with torch.no_grad():
        for ours, theirs in zip(model.parameters(), reference.parameters()):
            theirs.copy_(torch.from_numpy(np.asarray(ours.data)))
    loss = (
        (reference(torch.from_numpy(np.asarray(x.data))) - torch.from_numpy(np.asarray(y.data)))
        ** 2
    ).mean()
    loss.backward()
    names = ["hidden.weight", "hidden.bias", "out.weight", "out.bias"]
    for name, parameter in zip(names, reference.parameters()):
        assert monitor.report[name]["norm"] == pytest.approx(
            parameter.grad.norm().item(), rel=1e-12
        )
        assert monitor.report[name]["status"] == "ok"
    expected_total = torch.cat([p.grad.flatten() for p in reference.parameters()]).norm().item()
    assert monitor.total_norm == pytest.approx(expected_total, rel=1e-12)


def test_context_form_detaches_and_counts_nan():
    model = model64()
    x, _ = data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", GradientWarning)
        with gradient_monitor(model) as monitor:
            (model(x) * float("nan")).sum().backward()
    assert monitor.report["out.bias"]["nan"] == 1
    assert monitor.report["out.bias"]["status"] == "nan/inf"
    assert any("NaN" in message for message in monitor.warnings)
    before = dict(monitor.report)
    model(x).sum().backward()  # after the block nothing is read
    assert monitor.report == before


def test_decorator_with_model_sees_a_later_backward_and_vanishing():
    model = model64()
    x, _ = data()

    @gradient_monitor(model, explode=1e3, vanish=1e-7)
    def forward(x):
        return model(x)

    with pytest.warns(GradientWarning) as caught:
        (forward(x) * 0.0).sum().backward()  # backward after the decorated forward returned
    assert "vanishing gradient in 'hidden.weight'" in "\n".join(str(w.message) for w in caught)
    assert caught[0].filename == __file__  # the warning points at the user's backward() line
    assert forward.monitor.report["hidden.weight"]["norm"] == 0.0
    forward.monitor.remove()


def test_user_code_as_the_issue_writes_it():
    model = model64()
    x, y = data()

    @gradient_monitor(model, explode=1e3, vanish=1e-7)
    def train_step(x, y):
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        return loss

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", GradientWarning)
        train_step(x, y)
        with gradient_monitor(model) as monitor:
            train_step(x, y)
    assert isinstance(monitor, GradientMonitor) and len(monitor.report) == 4


def test_monitor_refuses_a_non_module():
    with pytest.raises(TypeError, match=r"\[gradient_monitor\] expected a Module"):
        GradientMonitor(model=[1, 2])


def test_bare_form_names_parameters_by_module_path_and_other_leaves_by_order():
    bai.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Sequential(nn.Linear(4, 2)))
    scale = bai.tensor(np.ones(2), requires_grad=True)

    @gradient_monitor
    def step(x):
        (model(x) * scale).sum().backward()

    step(bai.tensor(np.random.default_rng(0).standard_normal((5, 3))))
    assert set(step.monitor.report) == {"0.weight", "0.bias", "2.0.weight", "2.0.bias", "leaf0"}
    assert step.monitor.report["leaf0"]["norm"] == pytest.approx(
        np.linalg.norm(
            model(bai.tensor(np.random.default_rng(0).standard_normal((5, 3)))).data.sum(0)
        )
    )

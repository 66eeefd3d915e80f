"""LBFGS against ``torch.optim.LBFGS`` in float64: the same problem from the same start gives
the same parameters after several steps, to rounding, with and without the strong-Wolfe line
search, and with the same number of closure evaluations; checkpoints resume the same run."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import buildingai as bai
from buildingai.optim import LBFGS, OptimizerError

torch = pytest.importorskip("torch")


def rosenbrock(x):
    """The banana valley: minimum 0 at (1, ..., 1)."""
    return ((1 - x[:-1]) ** 2).sum() + 100 * ((x[1:] - x[:-1] ** 2) ** 2).sum()


def _minimise_rosenbrock(library, start, steps: int, **options):
    x = library.tensor(start, requires_grad=True)
    optimizer = library.optim.LBFGS([x], **options)

    def closure():
        optimizer.zero_grad()
        loss = rosenbrock(x)
        loss.backward()
        return loss

    losses = [float(optimizer.step(closure).item()) for _ in range(steps)]
    state = optimizer.state[x]
    return x.detach().numpy(), losses, state["func_evals"], state["n_iter"]


@pytest.mark.parametrize(
    "start, steps, options",
    [
        ([-1.5, 2.0], 3, {"line_search_fn": "strong_wolfe"}),
        ([-1.5, 2.0], 8, {"line_search_fn": "strong_wolfe", "max_iter": 5}),
        ([-1.2, 1.0, -0.5, 0.8], 5, {"line_search_fn": "strong_wolfe", "max_iter": 5,
                                     "history_size": 3}),
        ([-1.5, 2.0], 3, {"lr": 0.1}),
        ([-1.2, 1.0, -0.5, 0.8], 4, {"lr": 0.05, "max_iter": 7, "history_size": 2}),
    ],
    ids=str,
)  # fmt: skip
def test_rosenbrock_steps_match_pytorch(start, steps, options):
    start = np.array(start)
    ours = _minimise_rosenbrock(bai, start, steps, **options)
    theirs = _minimise_rosenbrock(torch, start, steps, **options)
    np.testing.assert_allclose(ours[0], theirs[0], rtol=0, atol=1e-9, err_msg="parameters")
    np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-9, err_msg="losses")
    assert ours[2:] == theirs[2:], "function evaluations and iterations"


def _fit(library, x, y, kind: str, steps: int, **options):
    """Least squares (a Linear layer) or logistic regression (a Linear layer with a logistic
    loss), fitted by LBFGS; returns the layer's weight and bias."""
    library.manual_seed(0)
    layer = library.nn.Linear(x.shape[1], 1).double()
    with library.no_grad():
        layer.weight.copy_(library.tensor(np.linspace(-0.3, 0.4, x.shape[1])[None, :]))
        layer.bias.copy_(library.tensor([0.1]))
    loss_fn = library.nn.MSELoss() if kind == "least_squares" else library.nn.BCEWithLogitsLoss()
    optimizer = library.optim.LBFGS(layer.parameters(), **options)
    inputs, targets = library.tensor(x), library.tensor(y)

    def closure():
        optimizer.zero_grad()
        loss = loss_fn(layer(inputs), targets)
        loss.backward()
        return loss

    for _ in range(steps):
        optimizer.step(closure)
    return layer.weight.detach().numpy(), layer.bias.detach().numpy()


@pytest.mark.parametrize("kind", ["least_squares", "logistic"])
@pytest.mark.parametrize(
    "options",
    [{"line_search_fn": "strong_wolfe", "history_size": 4}, {"lr": 0.5, "max_iter": 10}],
    ids=["strong_wolfe", "fixed_step"],
)
def test_regressions_match_pytorch(kind, options):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((40, 5))
    scores = x @ np.array([1.0, -2.0, 0.5, 0.0, 3.0]) + 0.3
    y = scores[:, None] + 0.1 * rng.standard_normal((40, 1))
    if kind == "logistic":
        y = (y > 0).astype(np.float64)
    ours = _fit(bai, x, y, kind, 3, **options)
    theirs = _fit(torch, x, y, kind, 3, **options)
    for mine, expected in zip(ours, theirs):
        np.testing.assert_allclose(mine, expected, rtol=1e-9, atol=1e-11)


def test_float32_follows_pytorch_closely():
    start = np.array([-1.2, 1.0, -0.5, 0.8], dtype=np.float32)
    options = {"line_search_fn": "strong_wolfe", "max_iter": 5}
    ours = _minimise_rosenbrock(bai, start, 2, **options)
    theirs = _minimise_rosenbrock(torch, start, 2, **options)
    assert ours[0].dtype == np.float32
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-4, atol=1e-5)


def _resumable(start):
    x = bai.tensor(start, requires_grad=True)
    optimizer = LBFGS([x], max_iter=4, history_size=3, line_search_fn="strong_wolfe")

    def closure():
        optimizer.zero_grad()
        loss = rosenbrock(x)
        loss.backward()
        return loss

    return x, optimizer, closure


def test_state_dict_saved_and_loaded_resumes_the_same_run(tmp_path):
    start = np.array([-1.2, 1.0, -0.5, 0.8])
    x, optimizer, closure = _resumable(start)
    for _ in range(2):
        optimizer.step(closure)
    path = tmp_path / "lbfgs.bai"
    bai.save({"optimizer": optimizer.state_dict(), "x": x.detach()}, path)
    saved = bai.load(path)
    state = saved["optimizer"]["state"][0]
    assert {"d", "t", "old_dirs", "old_stps", "ro", "al", "H_diag", "prev_flat_grad"} <= set(state)
    assert saved["optimizer"]["param_groups"][0]["history_size"] == 3

    x_resumed, resumed, resumed_closure = _resumable(saved["x"].numpy())
    resumed.load_state_dict(saved["optimizer"])
    for _ in range(2):
        optimizer.step(closure)
        resumed.step(resumed_closure)
    np.testing.assert_array_equal(x_resumed.numpy(), x.numpy())
    assert resumed.state[x_resumed]["n_iter"] == optimizer.state[x]["n_iter"]


def test_state_dict_is_a_snapshot():
    x, optimizer, closure = _resumable(np.array([-1.2, 1.0]))
    optimizer.step(closure)
    saved = optimizer.state_dict()
    before = [array.copy() for array in saved["state"][0]["old_dirs"]]
    optimizer.step(closure)
    for kept, original in zip(saved["state"][0]["old_dirs"], before):
        np.testing.assert_array_equal(kept, original)


def test_a_state_dict_of_another_size_is_refused():
    x, optimizer, closure = _resumable(np.array([-1.2, 1.0, 0.5]))
    optimizer.step(closure)
    _, other, _ = _resumable(np.array([-1.2, 1.0]))
    with pytest.raises(OptimizerError, match="3 elements|2 elements"):
        other.load_state_dict(optimizer.state_dict())


def test_step_returns_the_first_loss_and_stops_at_an_optimum():
    x = bai.tensor([1.0, 1.0], requires_grad=True)
    optimizer = LBFGS([x])
    calls = []

    def closure():
        calls.append(1)
        optimizer.zero_grad()
        loss = rosenbrock(x)
        loss.backward()
        return loss

    loss = optimizer.step(closure)
    assert float(loss.item()) == 0.0 and len(calls) == 1  # zero gradient: done at once
    assert x.numpy().tolist() == [1.0, 1.0]


def test_signature_is_pytorch_s():
    ours = inspect.signature(LBFGS)
    theirs = inspect.signature(torch.optim.LBFGS)
    assert [(p.name, p.default) for p in ours.parameters.values()] == [
        (p.name, p.default) for p in theirs.parameters.values()
    ]


def test_errors_say_what_to_do():
    x = bai.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(OptimizerError, match="needs a closure"):
        LBFGS([x]).step()
    with pytest.raises(OptimizerError, match="line_search_fn 'wolfe'"):
        LBFGS([x], line_search_fn="wolfe")
    with pytest.raises(OptimizerError, match="one parameter group"):
        LBFGS([{"params": [x]}, {"params": [bai.tensor([1.0], requires_grad=True)]}])
    with pytest.raises(OptimizerError, match="history_size must be a positive integer"):
        LBFGS([x], history_size=0)
    with pytest.raises(OptimizerError, match="add_param_group"):
        LBFGS([x]).add_param_group({"params": [bai.tensor([1.0], requires_grad=True)]})

"""plot_computation_graph(model.forward) after the model has run, without recording: the most
recent call is replayed on stand-in values of its shapes, leaving no trace; training mode is
refused only where it changes what the model computes; without Graphviz one line says that only
the DOT text was written."""

import shutil

import numpy as np
import pytest

import buildingai as bai
from buildingai import nn
from buildingai.graph import GraphError, TensorSpec
from buildingai.vis import last_run, plot_computation_graph

from ..graph.models import MLP


def _x(batch: int, features: int = 12):
    rng = np.random.default_rng(batch)
    return bai.tensor(rng.standard_normal((batch, features)).astype("float32"))


def _train(model, steps: int = 3, batch: int = 8):
    optimizer = bai.optim.SGD(model.parameters(), lr=0.1)
    for step in range(steps):
        optimizer.zero_grad()
        loss = model(_x(batch + step)).square().mean()
        loss.backward()
        optimizer.step()


def test_the_model_is_drawn_after_training_as_the_design_uses_it():
    model = MLP()
    _train(model)  # the last step's batch is 10
    text = plot_computation_graph(model.forward)
    assert text.startswith('digraph "MLP"')
    assert "linear\\n(10, 16) float32\\nMLP.fc1" in text and "fc1.weight" in text
    assert last_run(model) is None and not model._forward_hooks  # nothing left recording


def test_a_replay_leaves_no_trace():
    bai.manual_seed(3)
    model = nn.Sequential(nn.Linear(12, 8), nn.BatchNorm1d(8), nn.Dropout(0.5), nn.Linear(8, 2))
    model(_x(4))
    model.eval()
    before = {name: t.numpy().copy() for name, t in model.state_dict().items()}
    expected_draw = bai.get_rng_state()["buildingai"]
    text = plot_computation_graph(model.forward)
    assert "(4, 8)" in text and "Sequential.1" in text
    after = {name: t.numpy().copy() for name, t in model.state_dict().items()}
    assert before.keys() == after.keys()
    for name in before:
        np.testing.assert_array_equal(after[name], before[name], err_msg=name)
    assert bai.get_rng_state()["buildingai"] == expected_draw  # no random draw consumed
    assert not any(part.training for part in model.modules())


def test_training_mode_without_dropout_or_batch_norm_is_drawn():
    model = MLP()  # training mode, and nothing in it depends on that
    model(_x(2))
    assert model.training
    assert "(2, 16)" in plot_computation_graph(model.forward)
    frozen = plot_computation_graph(model, input_signature=[TensorSpec((None, 12))])
    assert "(batch, 16)" in frozen
    assert all(part.training for part in model.modules())  # the flags are put back


@pytest.mark.parametrize(
    ("layer", "where"),
    [(nn.Dropout(0.3), "Sequential.1"), (nn.BatchNorm1d(8), "Sequential.1")],
    ids=["dropout", "batch_norm"],
)
def test_training_mode_is_refused_where_it_changes_the_computation(layer, where):
    model = nn.Sequential(nn.Linear(12, 8), layer, nn.ReLU())
    model(_x(3))
    state = {name: t.numpy().copy() for name, t in model.state_dict().items()}
    random_state = bai.get_rng_state()["buildingai"]
    message = rf"training mode changes what {where} computes"
    with pytest.raises(GraphError, match=message):
        plot_computation_graph(model.forward)
    with pytest.raises(GraphError, match=message):
        plot_computation_graph(model, input_signature=[TensorSpec((None, 12))])
    for name, array in state.items():  # the refusal left the running statistics alone
        np.testing.assert_array_equal(model.state_dict()[name].numpy(), array, err_msg=name)
    assert bai.get_rng_state()["buildingai"] == random_state
    assert model.training
    model.eval()
    assert "(3, 8)" in plot_computation_graph(model.forward)


def test_dropout_with_p_zero_changes_nothing_in_training_mode():
    model = nn.Sequential(nn.Linear(12, 8), nn.Dropout(0.0))
    model(_x(2))
    assert "(2, 8)" in plot_computation_graph(model.forward)


def test_keyword_and_plain_arguments_are_replayed():
    class Scaled(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = nn.Linear(12, 4)

        def forward(self, x, scale, *, offset):
            return self.fc(x) * scale + offset

    model = Scaled()
    model(_x(5), 2.0, offset=bai.ones(5, 4))
    text = plot_computation_graph(model.forward)
    assert "offset\\n(5, 4) float32" in text and "(5, 4)" in text


def test_the_last_call_that_ran_is_drawn_not_one_that_failed():
    model = MLP()
    model(_x(6))
    with pytest.raises(bai.errors.ShapeError):
        model(bai.zeros(2, 7))
    assert "(6, 16)" in plot_computation_graph(model.forward)


def test_a_call_with_an_argument_that_is_not_kept_says_so():
    class WithArray(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = nn.Linear(12, 4)

        def forward(self, x, table):
            return self.fc(x) + float(table.sum())

    model = WithArray()
    model(_x(2), np.ones(3))
    with pytest.raises(GraphError, match="most recent call took a ndarray, which is not kept"):
        plot_computation_graph(model.forward)


def test_a_part_called_only_inside_its_model_is_drawn_with_it():
    model = MLP()
    model(_x(2))
    with pytest.raises(GraphError, match="Linear has not been called on its own yet"):
        plot_computation_graph(model.fc1.forward)


def test_without_graphviz_one_line_says_only_the_dot_file_was_written(
    tmp_path, monkeypatch, capsys
):
    monkeypatch.setattr(shutil, "which", lambda name: None)
    model = MLP()
    model(_x(2))
    written = plot_computation_graph(model.forward, tmp_path / "mlp.svg")
    assert written == [tmp_path / "mlp.dot"]
    said = capsys.readouterr().err.splitlines()
    assert len(said) == 1
    assert "Graphviz's dot program is not installed" in said[0]
    assert str(tmp_path / "mlp.dot") in said[0] and "mlp.svg" in said[0]
    plot_computation_graph(model.forward, tmp_path / "plain.dot")  # a .dot asked for: silent
    assert capsys.readouterr().err == ""

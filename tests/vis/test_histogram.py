"""weight_histogram: one panel per parameter of a module (or one for a tensor), counts that
match NumPy's histogram, and PNG/SVG files."""

from __future__ import annotations

import numpy as np
import pytest

import buildingai as bai
from buildingai import nn
from buildingai.vis import weight_histogram

pytest.importorskip("matplotlib")


class ConvNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(1, 4, 3)
        self.fc = nn.Linear(16, 2)

    def forward(self, x):
        return self.fc(self.conv1(x).flatten(1))


def test_a_tensor_gives_one_panel_with_numpys_counts(tmp_path):
    model = ConvNet()
    figure = weight_histogram(model.conv1.weight, bins=10, path=tmp_path / "conv1.png")
    (axes,) = figure.axes
    counts = [patch.get_height() for patch in axes.patches]
    expected, _ = np.histogram(np.asarray(model.conv1.weight.data, dtype=np.float64), bins=10)
    assert counts == list(expected)
    assert (tmp_path / "conv1.png").read_bytes()[:4] == b"\x89PNG"


def test_a_model_gives_one_panel_per_parameter(tmp_path):
    model = ConvNet()
    figure = weight_histogram(model, path=tmp_path / "weights.svg")
    titles = [axes.get_title().splitlines()[0] for axes in figure.axes]
    assert titles == [
        "conv1.weight (4, 1, 3, 3)",
        "conv1.bias (4,)",
        "fc.weight (2, 16)",
        "fc.bias (2,)",
    ]
    assert (tmp_path / "weights.svg").read_text().lstrip().startswith("<?xml")


def test_non_tensors_are_refused():
    with pytest.raises(TypeError, match=r"\[weight_histogram\] expected a Tensor or a Module"):
        weight_histogram([1, 2, 3])
    with pytest.raises(ValueError, match="has no parameters"):
        weight_histogram(nn.ReLU())


def test_user_code_as_the_issue_writes_it():
    model = ConvNet()
    figure = weight_histogram(model.conv1.weight)
    assert len(figure.axes) == 1
    assert bai.vis.weight_histogram is weight_histogram


def test_missing_matplotlib_names_the_extra(monkeypatch):
    monkeypatch.setitem(__import__("sys").modules, "matplotlib.figure", None)
    with pytest.raises(ImportError, match=r"pip install 'buildingai\[vis\]'"):
        weight_histogram(nn.Linear(2, 2))

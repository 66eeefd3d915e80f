"""What a notebook shows for BuildingAI objects: the HTML of ``_repr_html_`` for a Tensor (shape,
dtype, device, gradient state, a few values), a Module (a table of its modules and parameters)
and a LiveDashboard (its charts), checked by calling the methods, as Jupyter does."""

from __future__ import annotations

import io
import shutil
import xml.etree.ElementTree as ElementTree

import numpy as np
import pytest

import buildingai as bai
from buildingai import nn
from buildingai.vis import LiveDashboard


def parsed(markup: str) -> ElementTree.Element:
    """The HTML as a tree: it must be well-formed, or a notebook would show it broken."""
    return ElementTree.fromstring(markup)


def text_of(markup: str) -> str:
    return " ".join("".join(parsed(markup).itertext()).split())


def test_a_tensor_shows_its_shape_dtype_gradient_state_and_values():
    x = bai.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.5]], requires_grad=True)
    text = text_of(x._repr_html_())
    assert "Tensor shape (2, 3) · float32 · cpu · requires_grad" in text
    assert "min 1 · max 6.5 · mean 3.583" in text
    assert "[[1. , 2. , 3. ], [4. , 5. , 6.5]]" in text
    assert "grad_fn=<mul>" in text_of((x * 2)._repr_html_())
    (x * 2).sum().backward()
    assert "has .grad" in text_of(x._repr_html_())


def test_a_large_tensor_shows_its_corners_and_other_dtypes_their_values():
    big = bai.arange(1_000_000).reshape(1000, 1000)
    markup = big._repr_html_()
    assert "shape (1000, 1000) · int64" in text_of(markup)
    assert "..." in markup and len(markup) < 2000  # a few values, not a million
    assert "min 0 · max 999999" in text_of(markup)
    flags = text_of(bai.tensor([True, False])._repr_html_())
    assert "bool" in flags and "min" not in flags and "[ True, False]" in flags
    assert "shape (0, 3)" in text_of(bai.zeros(0, 3)._repr_html_())
    assert "float64" in text_of(bai.tensor(np.array([1.5]))._repr_html_())


def test_a_model_shows_a_table_of_its_modules_and_parameters():
    model = nn.Sequential(nn.Linear(784, 32), nn.ReLU(), nn.Linear(32, 10))
    model[2].bias.requires_grad_(False)
    tree = parsed(model._repr_html_())
    rows = [[" ".join("".join(cell.itertext()).split()) for cell in row] for row in tree.iter("tr")]
    assert rows[0] == ["module", "type", "parameters", "shapes"]
    assert rows[1][:2] == ["(model)", "Sequential"]
    assert rows[2] == [
        "0", "Linear(in_features=784, out_features=32, bias=True)", "25,120",
        "weight (32, 784), bias (32,)",
    ]  # fmt: skip
    assert rows[3][:3] == ["1", "ReLU", ""]
    assert rows[4][2] == "330"
    total = model.num_parameters()
    assert f"{total:,} parameters ({total - 10:,} trainable), 99.4 KiB" in text_of(
        model._repr_html_()
    )


def test_a_shared_parameter_is_counted_once():
    first = nn.Linear(4, 4)
    second = nn.Linear(4, 4)
    second.weight = first.weight
    model = nn.Sequential(first, second)
    assert f"{model.num_parameters()} parameters" in text_of(model._repr_html_())


def test_the_dashboard_shows_its_charts_inline():
    dashboard = LiveDashboard(metrics=["loss", "accuracy"], file=io.StringIO())
    assert "no values yet" in dashboard._repr_html_()
    for step in range(5):
        dashboard.update({"loss": 1 / (step + 1), "accuracy": step / 5})
    markup = dashboard._repr_html_()
    parsed(markup)
    assert markup.count("<svg") == 2 and markup.count("<polyline") == 2
    assert "refresh" not in markup and "<script" not in markup
    assert ">accuracy</text>" in markup  # the y axis is titled with the metric


def test_ipython_picks_the_html():
    formatters = pytest.importorskip("IPython.core.formatters")
    formatter = formatters.DisplayFormatter()
    for thing in (bai.ones(2), nn.Linear(2, 3), LiveDashboard(metrics=["loss"])):
        data, _ = formatter.format(thing)
        assert "text/html" in data and "text/plain" in data


@pytest.mark.slow
def test_a_notebook_kernel_shows_them_as_html_and_the_graph_as_svg(tmp_path):
    nbformat = pytest.importorskip("nbformat", reason="pip install -e '.[notebooks]'")
    nbclient = pytest.importorskip("nbclient", reason="pip install -e '.[notebooks]'")
    kernelspec = pytest.importorskip("jupyter_client.kernelspec")
    if "python3" not in kernelspec.KernelSpecManager().find_kernel_specs():
        pytest.skip("no python3 Jupyter kernel installed (pip install ipykernel)")
    cells = [
        "import io\nimport buildingai as bai\nfrom buildingai import nn\n"
        "from buildingai.vis import LiveDashboard, plot_computation_graph",
        "bai.ones(2, 3)",
        "model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2)).eval()\nmodel",
        "dashboard = LiveDashboard(metrics=['loss'], file=io.StringIO())\n"
        "dashboard.update({'loss': 1.0})\ndashboard.update({'loss': 0.5})\ndashboard",
        "plot_computation_graph(model, example_inputs=bai.randn(3, 4))",
    ]
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    nbclient.NotebookClient(
        notebook, timeout=120, kernel_name="python3", resources={"metadata": {"path": tmp_path}}
    ).execute()
    shown = [cell.outputs[-1]["data"] for cell in notebook.cells[1:]]
    assert 'class="buildingai-tensor"' in shown[0]["text/html"]
    assert 'class="buildingai-module"' in shown[1]["text/html"]
    assert "<polyline" in shown[2]["text/html"]
    if shutil.which("dot"):  # Graphviz draws the graph; without it the notebook shows DOT text
        assert "<svg" in shown[3]["image/svg+xml"]
    else:
        assert "digraph" in shown[3]["text/plain"]

"""plot_computation_graph: DOT text always; SVG/PNG when Graphviz's dot is installed."""

import shutil

import pytest

from buildingai.graph import GraphError, TensorSpec, freeze
from buildingai.vis import graph_to_dot, plot_computation_graph

from ..graph.models import MLP


def test_dot_shows_ops_shapes_and_module_paths(tmp_path):
    written = plot_computation_graph(
        MLP().eval(), tmp_path / "mlp.dot", input_signature=[TensorSpec((None, 12))]
    )
    assert written == [tmp_path / "mlp.dot"]
    text = (tmp_path / "mlp.dot").read_text()
    assert text.startswith('digraph "MLP"')
    assert "linear\\n(batch, 16) float32\\nMLP.fc1" in text
    assert "input0\\n(batch, 12) float32" in text
    assert "fc1.weight" in text and "subgraph cluster_" in text
    assert "-> out0" in text


def test_static_graphs_and_graphs_plot_alike(tmp_path):
    static = freeze(MLP().eval(), [TensorSpec((2, 12))])
    plot_computation_graph(static, tmp_path / "a.gv")
    assert (tmp_path / "a.gv").read_text().count("->") == graph_to_dot(static.graph).count("->")


def test_a_model_needs_a_signature(tmp_path):
    with pytest.raises(GraphError, match="needs an input_signature"):
        plot_computation_graph(MLP().eval(), tmp_path / "x.dot")


@pytest.mark.parametrize("suffix", [".svg", ".png"])
def test_rendered_pictures_when_dot_is_installed(tmp_path, suffix):
    static = freeze(MLP().eval(), [TensorSpec((None, 12))])
    written = plot_computation_graph(static, tmp_path / f"mlp{suffix}")
    assert (tmp_path / "mlp.dot").exists()  # the DOT text is always written
    if shutil.which("dot") is None:
        assert written == [tmp_path / "mlp.dot"]
        pytest.skip("Graphviz 'dot' is not installed: only the DOT text was written")
    assert written[-1] == tmp_path / f"mlp{suffix}"
    data = (tmp_path / f"mlp{suffix}").read_bytes()
    assert data.startswith(b"\x89PNG") if suffix == ".png" else b"<svg" in data


def test_without_dot_only_the_text_is_written(tmp_path, monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name: None)
    static = freeze(MLP().eval(), [TensorSpec((None, 12))])
    assert plot_computation_graph(static, tmp_path / "m.svg") == [tmp_path / "m.dot"]

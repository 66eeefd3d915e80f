"""plot_computation_graph: DOT text always; SVG/PNG when Graphviz's dot is installed; a model's
most recent call (record_runs) or one call on example inputs when no signature is given."""

import shutil
import stat
import threading

import numpy as np
import pytest

import buildingai as bai
from buildingai.autograd import dispatch
from buildingai.graph import GraphError, TensorSpec, freeze
from buildingai.nn.moe import Expert, Router, dynamic_concat
from buildingai.vis import (
    DotSource,
    RunRecorder,
    graph_to_dot,
    last_run,
    plot_computation_graph,
    record_runs,
)

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


def test_a_model_that_never_ran_needs_inputs_or_a_signature(tmp_path):
    with pytest.raises(GraphError, match="run the model once, or pass example inputs"):
        plot_computation_graph(MLP().eval(), tmp_path / "x.dot")
    assert not (tmp_path / "x.dot").exists()


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


# ----- the most recent call of a model --------------------------------------------------------
def _x(batch: int):
    return bai.tensor(np.random.default_rng(batch).standard_normal((batch, 12)).astype("float32"))


def test_plot_of_the_most_recent_run_of_a_forward():
    model = MLP()
    with pytest.raises(GraphError, match="has not been called on its own yet.*run the model once"):
        plot_computation_graph(model.forward)
    assert not model._forward_pre_hooks and not model._forward_hooks  # nothing starts quietly
    record_runs(model)
    loss = model(_x(3)).square().sum()
    loss.backward()  # recording leaves training untouched
    assert model.fc1.weight.grad is not None and not dispatch.active_modes()
    text = plot_computation_graph(model.forward)
    assert isinstance(text, DotSource) and text.startswith('digraph "MLP"')
    assert "linear\\n(3, 16) float32\\nMLP.fc1" in text
    assert "input0\\n(3, 12) float32" in text and "fc1.weight" in text and "-> out0" in text
    model(_x(5))
    assert "linear\\n(5, 16) float32\\nMLP.fc1" in plot_computation_graph(model)  # latest
    graph = last_run(model)
    assert [node.op.name for node in graph.nodes] == ["linear", "relu", "linear", "tanh", "linear"]
    assert graph.values[graph.outputs[0]].kind == "op"  # the output is the last linear's


def test_a_recorded_run_goes_to_a_file_too(tmp_path):
    model = MLP()
    with record_runs(model):
        model(_x(2))
        assert plot_computation_graph(model.forward, tmp_path / "m.gv") == [tmp_path / "m.gv"]
        assert "(2, 4) float32" in (tmp_path / "m.gv").read_text()
    assert not model._forward_pre_hooks and not model._forward_hooks  # removed on exit
    assert last_run(model) is None


def test_example_inputs_record_one_call_now():
    model = MLP()
    text = plot_computation_graph(model.forward, example_inputs=_x(4))
    assert "linear\\n(4, 4) float32\\nMLP.fc3" in text
    assert not model._forward_hooks and last_run(model) is None  # nothing left recording

    def scaled_tanh(x, scale):
        return x.tanh() * scale

    text = plot_computation_graph(scaled_tanh, example_inputs=(_x(2), _x(2)))
    assert text.startswith('digraph "test_example_inputs_record_one_call_now.<locals>.scaled_tanh"')
    assert "input1" in text and text.count('fillcolor="#bbdefb"') == 2
    with pytest.raises(GraphError, match="is not a Module or its forward"):
        plot_computation_graph(scaled_tanh)


class _Twice(bai.nn.Module):
    """Calls its inner MLP twice and modifies a result in place."""

    def __init__(self) -> None:
        super().__init__()
        self.inner = MLP()

    def forward(self, x, *, offset):
        first = self.inner(x)
        second = self.inner(x * 2.0)
        second.add_(offset)
        return first, second


def test_nested_calls_in_place_ops_and_keyword_inputs():
    model = _Twice()
    record_runs(model.inner)
    record_runs(model)
    first, second = model(_x(3), offset=bai.ones(3, 4))
    outer = last_run(model)
    assert outer.output_kind == "tuple" and len(outer.outputs) == 2
    assert [outer.values[v].name for v in outer.inputs] == ["input0", "offset"]
    # the in-place add is the op that produced the second output
    producer = outer.producer()
    assert outer.nodes[producer[outer.outputs[1]]].op.name == "add"
    assert {node.module for node in outer.nodes} >= {"_Twice", "_Twice.inner.fc1"}
    inner = last_run(model.inner)  # the second call of the inner model
    assert inner.nodes[0].module == "_Twice.inner.fc1" and len(inner.nodes) == 5
    assert inner.values[inner.nodes[0].inputs[0]].kind == "input"
    assert not dispatch.active_modes()


def test_a_failing_call_leaves_no_recorder_behind_and_clones_record_nothing():
    model = MLP()
    record_runs(model)
    model(_x(2))
    with pytest.raises(bai.errors.ShapeError):
        model(bai.zeros(2, 7))
    assert not dispatch.active_modes()
    assert "(2, 16)" in plot_computation_graph(model)  # the last successful call
    clone = model.clone()
    clone(_x(6))
    assert last_run(clone) is None and "(6, 16)" not in plot_computation_graph(model)


def test_hooks_added_later_cannot_strand_a_recording():
    """A pre-hook added after record_runs that raises, or a forward hook that runs before the
    recorder's, would skip the recorder's end of call: its first call is left unrecorded and
    the recorder's hooks move to the ends."""
    model = MLP()
    record_runs(model)
    model(_x(2))
    calls = []

    def refuse_the_first_call(module, args):
        calls.append(args[0].shape)
        if len(calls) == 1:
            raise RuntimeError("not yet")

    model.register_forward_pre_hook(refuse_the_first_call)
    model.register_forward_hook(lambda module, args, output: None, prepend=True)
    with pytest.raises(RuntimeError, match="not yet"):
        model(_x(3))
    assert not dispatch.active_modes() and "(2, 16)" in plot_computation_graph(model)
    model(_x(4))
    assert not dispatch.active_modes() and len(calls) == 2
    assert "(4, 16)" in plot_computation_graph(model) and len(last_run(model).nodes) == 5


class _Interrupt(BaseException):
    """Like KeyboardInterrupt: not an Exception, so forward hooks do not see it."""


def test_a_call_interrupted_by_a_base_exception_is_abandoned():
    model, interrupt = MLP(), [True]
    record_runs(model)
    model.fc3.register_forward_pre_hook(lambda module, args: _raise_if(interrupt))
    seen = {}

    def run():  # on a fresh thread, whose dispatch state no other test shares
        with pytest.raises(_Interrupt):
            model(_x(2))
        stranded = [r for r in dispatch.active_modes() if isinstance(r, RunRecorder)]
        interrupt[0] = False
        model(_x(3))
        seen["stranded"] = stranded
        seen["nodes"] = len(last_run(model).nodes)
        seen["recording"] = [r.recording for r in dispatch.active_modes()]

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    assert len(seen["stranded"]) == 1 and seen["nodes"] == 5
    assert not seen["stranded"][0].recording and not seen["stranded"][0].seen
    assert not any(seen["recording"])  # at most the stopped one is left, ignoring ops


def _raise_if(flag):
    if flag[0]:
        raise _Interrupt


def test_threads_record_their_own_calls():
    model = MLP()
    record_runs(model)

    def run(batch):
        for _ in range(5):
            model(_x(batch))

    threads = [threading.Thread(target=run, args=(batch,)) for batch in (2, 3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    graph = last_run(model)
    batches = {graph.values[node.output].shape[0] for node in graph.nodes}
    assert len(batches) == 1 and batches <= {2, 3}  # one whole call, not a mix of two
    assert not dispatch.active_modes()


# ----- the DOT text in Jupyter ------------------------------------------------------------------
def test_dot_source_renders_as_svg_with_graphviz(tmp_path, monkeypatch):
    text = DotSource("digraph { a -> b }")
    monkeypatch.setattr(shutil, "which", lambda name: None)
    assert text._repr_svg_() is None  # Jupyter then shows the text

    class Printer:
        shown = ""

        def text(self, value):
            self.shown += value

    printer = Printer()
    text._repr_pretty_(printer, False)
    assert printer.shown == "digraph { a -> b }"
    fake_dot = tmp_path / "dot"
    fake_dot.write_text('#!/bin/sh\nread graph\necho "<svg>$1 $graph</svg>"\n')
    fake_dot.chmod(fake_dot.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setattr(shutil, "which", lambda name: str(fake_dot) if name == "dot" else None)
    assert text._repr_svg_().strip() == "<svg>-Tsvg digraph { a -> b }</svg>"


def test_a_recorded_run_renders_with_graphviz():
    if shutil.which("dot") is None:
        pytest.skip("Graphviz 'dot' is not installed")
    text = plot_computation_graph(MLP().forward, example_inputs=_x(2))
    assert "<svg" in text._repr_svg_()


class _RoutedExperts(bai.nn.Module):
    """Each sample through its best expert: which ops run depends on the data."""

    def __init__(self) -> None:
        super().__init__()
        self.router = Router(12, 3, top_k=1)
        self.experts = bai.nn.ModuleList([Expert(12, 8) for _ in range(3)])

    def forward(self, x):
        weights = self.router(x)
        outputs = []
        for i, expert in enumerate(self.experts):
            mask = weights.argmax(1) == i
            if mask.any():
                outputs.append(expert(x[mask]))
        return dynamic_concat(outputs, weights)


def test_a_data_dependent_model_is_drawn_as_it_ran():
    bai.manual_seed(0)
    model = _RoutedExperts()
    gate = model.router.gate.weight
    with bai.no_grad():
        gate[2] = (gate[0] + gate[1]) / 2  # never the strict best: expert 2 does not run
    record_runs(model)
    x = _x(16)
    model(x)
    used = sorted(set(model.router(x).argmax(1).tolist()))
    text = plot_computation_graph(model.forward)
    assert used == [0, 1]
    for expert in range(3):
        assert (f'"_RoutedExperts.experts.{expert}.fc1"' in text) == (expert in used)
    assert "argmax" in text and "_RoutedExperts.router.gate" in text

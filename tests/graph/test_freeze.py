"""freeze: tracing modules and functions, symbolic sizes, signature checks, and every error."""

import numpy as np
import pytest

import buildingai as bai
from buildingai import nn
from buildingai.errors import DTypeError, ShapeError
from buildingai.graph import GraphError, StaticGraph, TensorSpec, freeze

from .models import MLP


def _x(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype("float32")


def test_mlp_frozen_equals_eager_at_several_batch_sizes():
    model = MLP().eval()
    static = freeze(model, [TensorSpec((None, 12))])
    assert isinstance(static, StaticGraph)
    for batch in (1, 4, 9):
        x = _x(batch, 12, seed=batch)
        np.testing.assert_allclose(
            static(x).numpy(), model(bai.tensor(x)).numpy(), rtol=1e-6, atol=1e-6
        )
        assert static(bai.tensor(x)).shape == (batch, 4)  # Tensors are accepted too


def test_graph_records_parameters_by_state_dict_name_and_module_paths():
    model = MLP().eval()
    graph = freeze(model, [TensorSpec((None, 12))]).graph
    params = {v.name for v in graph.values.values() if v.kind == "param"}
    assert params == set(model.state_dict())
    assert [n.op.name for n in graph.nodes] == ["linear", "relu", "linear", "tanh", "linear"]
    assert graph.nodes[0].module == "MLP.fc1"
    assert str(graph.values[graph.outputs[0]].shape[0]) == "batch"
    assert graph.parameter_count() == sum(p.numel() for p in model.parameters())


def test_summary_lists_ops_shapes_modules_params_and_flops():
    text = freeze(MLP().eval(), [TensorSpec((None, 12))]).graph.summary()
    assert "linear" in text and "(batch, 16) float32" in text and "MLP.fc2" in text
    assert "208" in text  # fc1: 12 * 16 + 16 parameters
    assert "384" in text  # fc1 FLOPs at batch 1: 2 * 16 * 12
    assert "5 nodes" in text
    assert str(freeze(MLP().eval(), [TensorSpec((2, 12))])).startswith("Graph(")


def test_symbolic_reshape_targets_and_slices_follow_the_batch():
    def function(x):  # (N, 8)
        n = x.shape[0]
        y = x.reshape(n, 2, -1).sum(1).reshape(n * 2, -1)  # (2N, 2)
        return y[1:], y[: n + 1]

    static = freeze(function, [TensorSpec((None, 8))])
    reshape = static.graph.nodes[2]
    assert repr(reshape.attrs["shape"][0]) == "2*batch"
    for batch in (1, 4):
        x = _x(batch, 8)
        eager = function(bai.tensor(x))
        frozen = static(x)
        assert isinstance(frozen, tuple) and len(frozen) == 2
        for a, b in zip(eager, frozen):
            np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_named_symbols_are_shared_between_inputs():
    def function(a, b):
        return a.reshape(a.shape[0] * a.shape[1]) + b.reshape(-1)

    static = freeze(function, [TensorSpec(("n", "m")), TensorSpec(("n", "m"))])
    out = static(_x(3, 5), _x(3, 5, seed=1))
    assert out.shape == (15,)
    with pytest.raises(ShapeError, match="symbolic size 'n' is 3"):
        static(_x(3, 5), _x(4, 5))


def test_signature_errors_name_input_and_dimension():
    static = freeze(MLP().eval(), [TensorSpec((None, 12), name="pixels")])
    with pytest.raises(ShapeError, match=r"pixels has 3 dimensions .* has 2"):
        static(_x(2, 12, 1))
    with pytest.raises(ShapeError, match="pixels has size 11 in dimension 1 .* fixes it to 12"):
        static(_x(2, 11))
    with pytest.raises(ShapeError, match="pixels has dtype float64") as info:
        static(_x(2, 12).astype("float64"))
    assert isinstance(info.value, DTypeError)
    with pytest.raises(GraphError, match="expected 1 inputs"):
        static(_x(2, 12), _x(2, 12))


def test_functions_and_constants_created_inside_the_call():
    table = bai.tensor(_x(4))

    def function(x):
        offset = bai.tensor(np.arange(4, dtype="float32"))  # made outside dispatch: a constant
        return x * table + offset

    static = freeze(function, [TensorSpec((None, 4))])
    kinds = sorted(v.kind for v in static.graph.values.values())
    assert kinds.count("const") == 2
    x = _x(3, 4)
    np.testing.assert_allclose(static(x).numpy(), function(bai.tensor(x)).numpy())


def test_zeros_sized_by_the_batch_become_a_symbolic_fill():
    def function(x):
        state = bai.zeros(x.shape[0], 3)  # an initial state sized by the batch
        return x[:, :3] + state

    static = freeze(function, [TensorSpec((None, 5))])
    assert static.graph.nodes[0].op.name == "full"
    assert static(_x(6, 5)).shape == (6, 3)


@pytest.mark.parametrize(
    "read",
    [
        lambda t: bool((t > 0).any()),
        lambda t: t.sum().item(),
        lambda t: t.tolist(),
        lambda t: t.numpy(),
        lambda t: float(t.sum()),
    ],
)
def test_data_dependent_control_flow_is_refused_with_file_and_line(read):
    def function(x):
        if read(x) is None:
            return x
        return x * 2

    with pytest.raises(GraphError, match=r"depends on the inputs .* at .*test_freeze\.py:\d+"):
        freeze(function, [TensorSpec((None, 3))])


def test_reading_parameters_is_allowed():
    weight = bai.tensor(_x(3))

    def function(x):
        scale = float(weight.sum())  # a constant: does not depend on the input
        return x * scale

    freeze(function, [TensorSpec((2, 3))])


def test_shape_dependent_control_flow_is_refused():
    def function(x):
        return x.exp() if x.shape[0] > 2 else x.sin()

    with pytest.raises(GraphError, match="ran different ops"):
        freeze(function, [TensorSpec((None, 3))])


def test_value_dependent_constants_are_refused():
    def function(x):
        positive = bai.tensor(x.data > 0)  # computed behind dispatch's back
        return x.where(positive, 0.0)

    with pytest.raises(GraphError, match="values depend on the input values"):
        freeze(function, [TensorSpec((2, 3))])


def test_unexplained_sizes_are_refused():
    def function(x):
        return x.reshape(-1)[: x.shape[0] // 2]

    with pytest.raises(GraphError, match="no expression"):
        freeze(function, [TensorSpec((None,))])


def test_in_place_changes_of_traced_values_are_refused():
    def function(x):
        y = x * 2
        y.add_(1)
        return y + 1

    with pytest.raises(GraphError, match="modified in place"):
        freeze(function, [TensorSpec((2, 3))])


def test_training_mode_train_graphs_and_bad_arguments_are_refused():
    with pytest.raises(GraphError, match="training mode"):
        freeze(MLP(), [TensorSpec((None, 12))])
    with pytest.raises(GraphError, match="train=True is not supported"):
        freeze(MLP().eval(), [TensorSpec((None, 12))], train=True)
    with pytest.raises(GraphError, match="not a TensorSpec"):
        freeze(MLP().eval(), [(None, 12)])
    with pytest.raises(GraphError, match="returned dict"):
        freeze(lambda x: {"y": x * 2}, [TensorSpec((2,))])


def test_dropout_is_absent_in_eval_mode():
    model = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5)).eval()
    static = freeze(model, [TensorSpec((None, 4))])
    assert [n.op.name for n in static.graph.nodes] == ["linear"]

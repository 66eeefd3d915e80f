"""freeze: tracing modules and functions, symbolic sizes, signature checks, and every error."""

import threading

import numpy as np
import pytest

import buildingai as bai
from buildingai import nn
from buildingai.errors import DTypeError, ShapeError
from buildingai.graph import GraphError, StaticGraph, TensorSpec, freeze, parallel
from buildingai.ops.abstract import ValueSpec

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


def test_summary_lists_ops_shapes_modules_params_flops_and_bytes():
    graph = freeze(MLP().eval(), [TensorSpec((None, 12))]).graph
    text = graph.summary()
    assert "linear" in text and "(batch, 16) float32" in text and "MLP.fc2" in text
    assert "208" in text  # fc1: 12 * 16 + 16 parameters
    # FLOPs and bytes come from the op record's cost, each symbolic size counted as 1
    float32 = np.dtype("float32")
    fc1 = graph.nodes[0]
    flops, read, written = fc1.op.cost(
        ValueSpec((1, 12), float32), ValueSpec((16, 12), float32), ValueSpec((16,), float32)
    )
    assert graph.cost(fc1) == (flops, read + written)
    assert flops >= 2 * 16 * 12 and read + written == (12 + 16 * 12 + 16 + 16) * 4
    row = text.splitlines()[3].split()
    assert row[-2:] == [str(flops), str(read + written)]
    assert "5 nodes" in text and "bytes moved" in text
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


def test_resolved_sizes_are_kept_per_batch_size():
    def function(x):  # (N, 8) -> (2N, 4)
        return x.reshape(x.shape[0] * 2, -1)

    static = freeze(function, [TensorSpec((None, 8))])
    for batch in (3, 1, 3, 5, 1):  # sizes seen again take the kept attributes
        x = _x(batch, 8)
        np.testing.assert_array_equal(static(x).numpy(), x.reshape(2 * batch, 4))
    assert len(static.plan._resolved) == 3


def test_named_symbols_are_shared_between_inputs():
    def function(a, b):
        return a.reshape(a.shape[0] * a.shape[1]) + b.reshape(-1)

    static = freeze(function, [TensorSpec(("n", "m")), TensorSpec(("n", "m"))])
    out = static(_x(3, 5), _x(3, 5, seed=1))
    assert out.shape == (15,)
    with pytest.raises(ShapeError, match="symbolic size 'n' is 3"):
        static(_x(3, 5), _x(4, 5))


def test_fitting_inputs_bind_alike_on_the_quick_and_the_explained_path():
    static = freeze(
        lambda a, b: a.reshape(-1) + b.reshape(-1), [TensorSpec(("n", 4)), TensorSpec(("n", 4))]
    )
    a, b = _x(3, 4), _x(3, 4, seed=1)
    for inputs in ((a, b), (bai.tensor(a), bai.tensor(b))):
        quick = static._bind_fitting(inputs)
        explained = static._bind_explained(inputs)
        assert quick[1] == explained[1] == {"n": 3}
        assert all(x is y for x, y in zip(quick[0], explained[0]))
    # a nested list is no array yet: only the explained path takes it (and names its dtype)
    assert static._bind_fitting((a.tolist(), b)) is None
    with pytest.raises(ShapeError, match="input 0 has dtype float64"):
        static(a.tolist(), b)
    # a misfit is left to the explained path, which names it
    assert static._bind_fitting((a, _x(2, 4))) is None
    with pytest.raises(ShapeError, match="symbolic size 'n' is 3"):
        static.bind((a, _x(2, 4)))


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


def test_zeros_sized_by_the_batch_is_a_full_node_with_a_symbolic_shape():
    def function(x):  # (N, 5)
        state = bai.zeros(x.shape[0], 16)  # an initial state sized by the batch
        return x.sum(1, keepdims=True) + state

    static = freeze(function, [TensorSpec((None, 5))])
    full = next(node for node in static.graph.nodes if node.op.name == "full")
    assert str(full.attrs["shape"]) == "(batch, 16)"
    assert str(static.graph.values[full.output].shape) == "(batch, 16)"
    assert not any(v.kind == "const" for v in static.graph.values.values())
    for batch in (1, 6, 13):
        x = _x(batch, 5, seed=batch)
        np.testing.assert_allclose(static(x).numpy(), function(bai.tensor(x)).numpy(), rtol=1e-6)
        assert static(x).shape == (batch, 16)


def test_a_fixed_size_equal_to_a_sample_size_stays_fixed():
    # 13 is the sample size of the batch: a constant of that size must not become the batch
    def function(x):  # (N, 4) -> (N, 13)
        projection = bai.ones(4, 13)
        offsets = bai.tensor(np.arange(13, dtype="float32"))  # made from NumPy: a constant
        return x @ projection + offsets

    static = freeze(function, [TensorSpec((None, 4))])
    assert str(static.graph.values[static.graph.outputs[0]].shape) == "(batch, 13)"
    full = next(node for node in static.graph.nodes if node.op.name == "full")
    assert full.attrs["shape"] == (4, 13)
    for batch in (2, 13):
        x = _x(batch, 4, seed=batch)
        np.testing.assert_allclose(static(x).numpy(), function(bai.tensor(x)).numpy(), rtol=1e-6)


def test_arange_of_a_symbolic_length_gives_positions_at_every_length():
    def function(x):  # (N, T)
        positions = bai.arange(x.shape[1]).astype("float32")  # (T,)
        countdown = bai.arange(x.shape[1], 0, -1).astype("float32")  # T, T-1, ..., 1
        return x + positions - countdown

    static = freeze(function, [TensorSpec((None, None))])
    arange = [node for node in static.graph.nodes if node.op.name == "arange"]
    assert [str(static.graph.values[n.output].shape) for n in arange] == ["(dim1,)"] * 2
    for length in (1, 4, 17):
        x = _x(3, length, seed=length)
        np.testing.assert_array_equal(static(x).numpy(), function(bai.tensor(x)).numpy())


def test_a_numpy_constant_sized_by_the_sample_batch_is_refused_where_it_meets_the_batch():
    def function(x):  # made from NumPy: a constant of the shape it has, (13, 1)
        return x + bai.tensor(np.ones((x.shape[0], 1), dtype="float32"))

    with pytest.raises(
        GraphError, match=r"'add' gets inputs .* only at this trace's sample"
    ) as info:
        freeze(function, [TensorSpec((None, 3))])
    assert "test_freeze.py" in str(info.value) and "bai.zeros(x.shape[0]" in info.value.help
    static = freeze(lambda x: x + bai.ones(x.shape[0], 1), [TensorSpec((None, 3))])
    assert static(_x(4, 3)).shape == (4, 3)


def _factories_model(x):  # (N, T) -> (N, T)
    batch, length = x.shape
    state = bai.zeros(batch, 1) + bai.full((batch, 1), 0.5)  # (N, 1)
    positions = bai.arange(length).astype("float32") * bai.ones_like(x)  # (N, T)
    identity = bai.eye(length)  # (T, T)
    ramp = bai.linspace(0.0, 1.0, length)  # (T,)
    counts = bai.full((batch, 1), length).astype("float32")  # the length as a value
    return (x + state + positions) @ identity + ramp + counts + bai.zeros_like(x)


@pytest.mark.parametrize("optimize", [False, True])
def test_factories_eager_frozen_and_onnxruntime_agree_at_two_sizes(optimize):
    pytest.importorskip("onnx")
    pytest.importorskip("onnxruntime")
    from buildingai.export import export_onnx, run_onnxruntime

    static = freeze(_factories_model, [TensorSpec((None, None))], optimize=optimize)
    made = {node.op.name for node in static.graph.nodes}
    assert {"full", "arange", "eye", "linspace"} <= made
    model = export_onnx(static)
    for batch, length in ((2, 3), (5, 8)):
        x = _x(batch, length, seed=batch)
        eager = _factories_model(bai.tensor(x)).numpy()
        np.testing.assert_allclose(static(x).numpy(), eager, rtol=1e-6, atol=1e-6)
        (exported,) = run_onnxruntime(model, x)
        assert exported.shape == eager.shape and exported.dtype == eager.dtype
        np.testing.assert_allclose(exported, eager, rtol=1e-5, atol=1e-5)


def test_an_arange_length_no_expression_gives_is_refused():
    def function(x):
        every_other = bai.arange(0, x.shape[1], 2)  # ceil(T / 2): no c * T + k for every T
        return x.sum(1, keepdims=True) + every_other.astype("float32")

    with pytest.raises(GraphError, match=r"'arange'.*cannot be expressed") as info:
        freeze(function, [TensorSpec((2, None))])
    assert "fixed" in info.value.help


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


def test_shape_dependent_control_flow_is_refused_with_file_and_line():
    def function(x):
        return x.exp() if x.shape[0] > 2 else x.sin()

    with pytest.raises(GraphError, match=r"\(batch > 2\) at .*test_freeze\.py:\d+") as info:
        freeze(function, [TensorSpec((None, 3))])
    assert "cannot branch on a symbolic size" in str(info.value)


def test_comparisons_that_hold_for_every_size_are_answered():
    def function(x):
        n = x.shape[0]
        assert n > 0 and n - 1 >= 0 and n * 2 != n and x.shape[1] == 3
        return x.exp() if n >= 1 else x.sin()

    assert [node.op.name for node in freeze(function, [TensorSpec((None, 3))]).graph.nodes] == [
        "exp"
    ]


def test_value_dependent_constants_are_refused():
    def function(x):
        positive = bai.tensor(x.array > 0)  # computed behind dispatch's back
        return x.where(positive, 0.0)

    with pytest.raises(GraphError, match="values depend on the input values"):
        freeze(function, [TensorSpec((2, 3))])


@pytest.mark.parametrize(
    "compute",
    [
        lambda a: np.concatenate([a[:1], a[1:]]),
        lambda a: np.nonzero(a > 0)[0].astype(a.dtype),
        lambda a: np.where(a > 0, a, 0.0),
        lambda a: np.unique(a, return_counts=True)[0],
        lambda a: np.searchsorted(np.sort(a.reshape(-1)), a.reshape(-1)).astype(a.dtype),
    ],
)
def test_numpy_functions_keep_the_mark_of_values_that_depend_on_the_inputs(compute):
    """NumPy functions that return plain arrays (concatenate, nonzero, where...) keep the mark
    too: a constant made from their result is refused, not frozen with the sample's values."""

    def function(x):
        return x.sum() + bai.tensor(compute(x.array)).sum()

    with pytest.raises(GraphError, match="tensor created outside the traced ops"):
        freeze(function, [TensorSpec((2, 3))])


@pytest.mark.parametrize(
    "read",
    [
        lambda x: x.detach().abs().sum().item(),
        lambda x: x.data.sum().item(),
        # read with no op in between: before, these gave the sample's values as constants
        lambda x: float(x.detach().numpy().sum()),
        lambda x: float(x.data.numpy().sum()),
        lambda x: x.detach().tolist()[0],
        lambda x: float(np.asarray(x).sum()),
    ],
)
def test_reading_a_detached_view_of_an_input_is_refused(read):
    """x.detach() and x.data share the input's memory: their values depend on the input too."""

    def function(x):
        return x * read(x)

    with pytest.raises(GraphError, match="reads the value of a tensor that depends on the inputs"):
        freeze(function, [TensorSpec((3,))])
    frozen = freeze(lambda x: (x.detach() * 2.0).relu() + x, [TensorSpec((3,))])
    values = np.array([-1.0, 2.0, 0.5], np.float32)
    np.testing.assert_array_equal(frozen(values).numpy(), np.maximum(values * 2, 0) + values)


def test_unexplained_sizes_are_refused():
    def function(x):
        return x.reshape(-1)[: x.shape[0] // 2]

    with pytest.raises(GraphError, match=r"batch // 2 at .*test_freeze\.py:\d+.*no expression"):
        freeze(function, [TensorSpec((None,))])


def test_python_numbers_equal_to_a_symbolic_size_are_refused_as_op_inputs():
    def function(x):
        return x.sum(0) / x.shape[0]  # would freeze the sample batch size as a constant

    with pytest.raises(GraphError, match=r"Python number 13, which is the symbolic size batch"):
        freeze(function, [TensorSpec((None, 3))])


def test_in_place_changes_of_traced_values_are_traced():
    def function(x):
        y = x * 2
        before = y + 1  # reads the value before the change
        y.add_(1)
        return y + before

    static = freeze(function, [TensorSpec((2, 3))])
    x = bai.tensor(np.arange(6, dtype=np.float32).reshape(2, 3))
    np.testing.assert_array_equal(static(x).numpy(), function(x).numpy())


def test_a_view_read_after_its_base_changed_in_place_is_refused():
    def function(x):
        y = x * 2
        row = y[0]  # a view: eager execution sees the change below through it
        y.add_(1)
        return row + 1

    with pytest.raises(GraphError, match="modified in place"):
        freeze(function, [TensorSpec((2, 3))])


def test_training_mode_train_graphs_and_bad_arguments_are_refused():
    with pytest.raises(GraphError, match="training mode"):
        freeze(MLP(), [TensorSpec((None, 12))])
    with pytest.raises(GraphError, match="needs the optimizer"):
        freeze(MLP().eval(), [TensorSpec((None, 12)), TensorSpec((None,), "int64")], train=True)
    with pytest.raises(GraphError, match="not a TensorSpec"):
        freeze(MLP().eval(), [(None, 12)])
    with pytest.raises(GraphError, match="returned dict"):
        freeze(lambda x: {"y": x * 2}, [TensorSpec((2,))])


def test_dropout_is_absent_in_eval_mode():
    model = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5)).eval()
    static = freeze(model, [TensorSpec((None, 4))])
    assert [n.op.name for n in static.graph.nodes] == ["linear"]


def test_views_reshapes_and_slice_bounds_from_symbolic_sizes_stay_symbolic():
    def function(x):  # (B, T, 6)
        batch, steps, channels = x.shape
        y = x.reshape(batch * steps, channels).tanh().view(batch, steps, 2, 3)
        head = y[:, : steps - 1]  # (B, T - 1, 2, 3)
        pooled = head.sum(1).reshape(x.shape[0], -1)  # (B, 6)
        return pooled, head, x[:, steps - 1]  # the last step: an int index below a size

    static = freeze(function, [TensorSpec(("b", "t", 6))])
    reshape, view = [n.attrs["shape"] for n in static.graph.nodes if n.op.name == "reshape"][:2]
    assert str(reshape) == "(b*t, 6)" and str(view) == "(b, t, 2, 3)"
    shapes = [str(static.graph.values[v].shape) for v in static.graph.outputs]
    assert shapes == ["(b, 6)", "(b, t-1, 2, 3)", "(b, 6)"]
    for batch, steps in ((2, 3), (1, 7)):
        x = _x(batch, steps, 6)
        for eager, frozen in zip(function(bai.tensor(x)), static(x)):
            np.testing.assert_allclose(frozen.numpy(), eager.numpy(), rtol=1e-6)


def test_another_thread_runs_eager_code_unaffected_during_a_freeze():
    seen = {}

    def other_thread(traced_input):
        local = bai.tensor(_x(4, 3))
        y = (local * 2).sum()
        seen["value"] = float(y)  # reading values is fine off the tracing thread
        seen["shape_types"] = {type(extent) for extent in local.shape}
        seen["traced_input"] = traced_input.numpy().shape  # guarded only on the tracing thread
        seen["traced_shape_types"] = {type(extent) for extent in traced_input.shape}

    def function(x):
        worker = threading.Thread(target=other_thread, args=(x,))
        worker.start()
        worker.join()
        return x.exp()

    static = freeze(function, [TensorSpec((None, 3))])
    assert [node.op.name for node in static.graph.nodes] == ["exp"]  # the thread's ops are not
    assert seen["value"] == pytest.approx(float((bai.tensor(_x(4, 3)) * 2).sum()))
    assert seen["shape_types"] == {int} and seen["traced_shape_types"] == {int}
    assert seen["traced_input"] == (13, 3)
    assert type(bai.tensor(_x(2, 3)).shape[0]) is int  # and nothing is left installed


def test_tracing_returns_symbolic_tensors_and_leaves_the_tensor_class_alone():
    from buildingai.graph.symbolic import SymbolicInt
    from buildingai.graph.trace import SymbolicTensor

    attributes = {name: bai.Tensor.__dict__[name] for name in ("shape", "size", "numel", "item")}
    seen = {}

    def function(x):
        seen["class"] = type(x)
        y = x.exp()
        seen["output"], seen["rows"] = type(y), y.shape[0]
        seen["tensor_class"] = {name: bai.Tensor.__dict__[name] for name in attributes}
        return y

    freeze(function, [TensorSpec((None, 3))])
    assert seen["class"] is SymbolicTensor and seen["output"] is SymbolicTensor
    assert isinstance(seen["rows"], SymbolicInt) and seen["rows"] == 13  # the sample size
    assert seen["tensor_class"] == attributes  # nothing patched, during or after


def test_a_compiled_step_gives_parameters_their_own_class_back():
    model = nn.Linear(3, 2)
    optimizer = bai.optim.SGD(model.parameters(), lr=0.1)

    def step(x):
        optimizer.zero_grad()
        loss = model(x).sum()
        loss.backward()
        optimizer.step()
        return loss

    bai.compile(step, [TensorSpec((4, 3))])
    assert {type(parameter) for parameter in model.parameters()} == {nn.Parameter}


def test_lazy_layers_are_built_from_the_signature_without_moving_the_random_state():
    model = nn.Sequential(nn.Linear(6, 8), nn.DenseClassifier(3, hidden=5, dropout=0.2)).eval()
    state = bai.backend.random.get_rng_state()
    static = freeze(model, [TensorSpec((None, 6))])
    after = bai.backend.random.get_rng_state()
    assert after["buildingai"] == state["buildingai"]
    np.testing.assert_array_equal(after["numpy"]["key"], state["numpy"]["key"])
    assert [node.op.name for node in static.graph.nodes] == ["linear", "linear", "relu", "linear"]
    params = {v.name for v in static.graph.values.values() if v.kind == "param"}
    assert params == set(model.state_dict())
    assert not any(module.training for _, module in model.named_modules())
    x = _x(4, 6)
    np.testing.assert_allclose(static(x).numpy(), model(bai.tensor(x)).numpy(), rtol=1e-6)


def test_a_lazily_built_layer_in_training_mode_asks_for_one_batch_first():
    class LazyHead(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.head = None

        def forward(self, x):
            if self.head is None:  # built in training mode, whatever this module's mode
                self.head = nn.Sequential(nn.Linear(x.shape[-1], 2), nn.Dropout(0.5))
            return self.head(x)

    with pytest.raises(GraphError, match="training mode after building its layers") as info:
        freeze(LazyHead().eval(), [TensorSpec((None, 6))])
    assert "run one batch through the model first" in str(info.value)


class _WrongInfer(bai.ops.Op):
    """Doubles the last dimension, but its infer claims the shape is unchanged."""

    name = "widen"

    def forward(self, ctx, xp, x):
        return xp.concatenate([x, x], axis=-1)

    def infer(self, x):
        return x


class _NoInfer(bai.ops.Op):
    name = "opaque"

    def forward(self, ctx, xp, x):
        return x * 2


def test_an_infer_that_disagrees_with_forward_is_an_internal_error_naming_the_op():
    with pytest.raises(GraphError, match=r"internal error.*'widen'.*forward returned \(13, 6\)"):
        freeze(lambda x: _WrongInfer()(x), [TensorSpec((None, 3))])


def test_an_op_without_infer_freezes_only_with_fixed_sizes():
    static = freeze(lambda x: _NoInfer()(x), [TensorSpec((2, 3))])
    assert static(_x(2, 3)).shape == (2, 3)
    with pytest.raises(GraphError, match=r"'opaque' has no abstract evaluation"):
        freeze(lambda x: _NoInfer()(x), [TensorSpec((None, 3))])


def test_size_and_numel_are_symbolic_during_the_trace():
    def function(x):  # (B, 4)
        flat = x.reshape(x.numel())
        return flat[: x.size(0) * 2], x.reshape(x.size(0), 2, -1)

    static = freeze(function, [TensorSpec((None, 4))])
    assert str(static.graph.nodes[0].attrs["shape"]) == "(4*batch,)"
    for batch in (1, 3):
        x = _x(batch, 4)
        for eager, frozen in zip(function(bai.tensor(x)), static(x)):
            np.testing.assert_array_equal(frozen.numpy(), eager.numpy())


def test_a_shape_error_in_the_traced_call_names_the_shapes_not_devices():
    def function(x):
        return x + bai.ones(4, 4)

    with pytest.raises(ShapeError, match=r"\[add\] shapes \(13, 3\) float32, \(4, 4\) float32"):
        freeze(function, [TensorSpec((None, 3))])


def test_parallel_branches_inside_the_traced_call_are_recorded():
    def function(x):
        with parallel():
            a = (x * 2.0).tanh()
            b = (x + 1.0).exp()
        return a + b

    static = freeze(function, [TensorSpec((None, 3))])
    assert sorted(node.op.name for node in static.graph.nodes) == sorted(
        ["mul", "tanh", "add", "exp", "add"]
    )
    x = _x(5, 3)
    np.testing.assert_allclose(static(x).numpy(), function(bai.tensor(x)).numpy(), rtol=1e-6)

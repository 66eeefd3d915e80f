"""Each pass alone, on small graphs with a known result; then all of them on real models."""

import inspect

import numpy as np
import pytest

import buildingai as bai
from buildingai.graph import TensorSpec, freeze
from buildingai.graph.passes import (
    assemble_slices,
    eliminate_common_subexpressions,
    eliminate_dead_code,
    fold_constants,
    fuse_elementwise,
    optimize,
    reuse_buffers,
)
from buildingai.graph.passes.fusion import FUSIBLE, FusedElementwise
from buildingai.ops import all_ops
from buildingai.ops.abstract import ValueSpec

from .models import MLP


def _x(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype("float32")


def _names(graph):
    return [getattr(n.op, "label", n.op.name) for n in graph.nodes]


def test_constant_folding_computes_constant_subgraphs_once():
    weight = bai.tensor(_x(3, 3))

    def function(x):
        folded = (weight * 2).exp().sum(0)  # constant: folded away
        return x + folded

    graph = freeze(function, [TensorSpec((None, 3))]).graph
    assert _names(graph) == ["mul", "exp", "sum", "add"]
    folded = fold_constants(graph)
    assert _names(folded) == ["add"]
    value = folded.nodes[0].inputs[1]
    np.testing.assert_allclose(folded.constants[value], (weight * 2).exp().sum(0).numpy())


def test_constant_folding_keeps_growing_and_symbolic_nodes():
    def function(x):
        ones = bai.ones(1, 3).expand((4, 3))  # would grow: kept
        return x.reshape(x.shape[0], 4, 3) + ones

    graph = freeze(function, [TensorSpec((None, 12))]).graph
    assert _names(fold_constants(graph)) == _names(graph)


def test_constant_folding_keeps_any_node_whose_output_outgrows_its_inputs():
    column, row = bai.tensor(_x(64, 1)), bai.tensor(_x(1, 64, seed=1))

    def function(x):
        outer = (column * row).sum(0)  # the (64, 64) product of 128 elements is kept
        scaled = (row * 2).exp()  # as large as its input: folded
        return x + outer + scaled

    graph = freeze(function, [TensorSpec((None, 64))]).graph
    assert _names(fold_constants(graph)) == ["mul", "sum", "add", "add"]


def test_dead_code_elimination_drops_unused_nodes_and_constants():
    unused = bai.tensor(_x(3))

    def function(x):
        (x * unused).exp()  # computed, never used
        return x.tanh()

    graph = freeze(function, [TensorSpec((2, 3))]).graph
    assert _names(graph) == ["mul", "exp", "tanh"]
    cleaned = eliminate_dead_code(graph)
    assert _names(cleaned) == ["tanh"]
    assert not cleaned.constants


def test_common_subexpressions_are_computed_once():
    def function(x):
        a = (x * 2).exp()
        b = (x * 2).exp()  # the same op on the same inputs with the same attributes
        c = (x * 3).exp()  # a different scalar: not the same
        return a + b + c

    graph = freeze(function, [TensorSpec((2, 3))]).graph
    merged = eliminate_common_subexpressions(graph)
    assert _names(merged) == ["mul", "exp", "mul", "exp", "add", "add"]
    add = merged.nodes[4]
    assert add.inputs[0] == add.inputs[1]


def test_cse_compares_array_attributes_by_value():
    index = np.array([0, 2])

    def function(x):
        return x[:, index] + x[:, np.array([0, 2])] + x[:, np.array([1, 2])]

    graph = eliminate_common_subexpressions(freeze(function, [TensorSpec((2, 3))]).graph)
    assert _names(graph).count("index") == 2


def test_fusion_makes_one_kernel_with_out_buffers():
    def function(x, y):
        return ((x * 0.5 + y).tanh() * x).relu()

    static = freeze(function, [TensorSpec((None, 8)), TensorSpec((None, 8))])
    fused = fuse_elementwise(static.graph)
    assert _names(fused) == ["mul+add+tanh+mul+relu"]
    kernel = fused.nodes[0].op
    assert isinstance(kernel, FusedElementwise)
    assert "out=t0" in kernel.source  # intermediates reuse the kernel's own buffer
    x, y = _x(5, 8), _x(5, 8, seed=1)
    np.testing.assert_array_equal(static.__class__(fused)(x, y).numpy(), static(x, y).numpy())


def test_fusion_stops_at_values_with_several_readers_outputs_and_other_dtypes():
    def function(x):
        shared = x.exp()  # read twice: stays a separate node
        doubled = x.astype("float64") * 2.0  # another dtype: not fused with the float32 chain
        return shared.tanh() + shared.sin(), doubled.exp()

    graph = fuse_elementwise(freeze(function, [TensorSpec((2, 3))]).graph)
    assert _names(graph) == ["exp", "cast", "tanh+sin+add", "mul+exp"]


def _scattered(first, second, third, shape=(4, 9)):
    """Three tensors put into zeros at slices of the last axis and summed, as a split's
    backward sums its pieces' gradients."""
    pieces = zip((first, second, third), ((0, 2), (2, 5), (5, 9)))
    sums = [bai.zeros_index_add(p, shape, (slice(None), slice(a, b))) for p, (a, b) in pieces]
    return (sums[0] + sums[1]) + sums[2]


def test_slices_that_tile_an_axis_are_assembled_into_one_concatenation():
    static = freeze(_scattered, [TensorSpec((4, 2)), TensorSpec((4, 3)), TensorSpec((4, 4))])
    assert _names(static.graph).count("zeros_index_add") == 3
    assembled = eliminate_dead_code(assemble_slices(static.graph))
    assert _names(assembled) == ["concatenate"]
    assert assembled.nodes[0].attrs == {"axis": 1}
    arrays = _x(4, 2), _x(4, 3, seed=1), _x(4, 4, seed=2)
    np.testing.assert_array_equal(
        static.__class__(assembled)(*arrays).numpy(), static(*arrays).numpy()
    )


def test_pieces_merged_by_reshapes_are_joined_before_the_merge():
    def function(first, second, third):
        heads = [t.permute(0, 2, 1).reshape(4, 6) for t in (first, second, third)]  # copies
        pieces = zip(heads, ((0, 6), (6, 12), (12, 18)))
        sums = [bai.zeros_index_add(p, (4, 18), (slice(None), slice(a, b))) for p, (a, b) in pieces]
        return sums[0] + sums[1] + sums[2]

    static = freeze(function, [TensorSpec((4, 2, 3))] * 3)
    assembled = eliminate_dead_code(assemble_slices(static.graph))
    assert _names(assembled) == ["permute"] * 3 + ["concatenate", "reshape"]
    arrays = _x(4, 2, 3), _x(4, 2, 3, seed=1), _x(4, 2, 3, seed=2)
    np.testing.assert_array_equal(
        static.__class__(assembled)(*arrays).numpy(), static(*arrays).numpy()
    )


def test_slices_with_a_gap_an_overlap_or_a_broadcast_stay_sums():
    def gap(first, second, third):
        return _scattered(first, second, third, shape=(4, 10))  # the last column stays zero

    def broadcast(first, second, third):
        return _scattered(first, second, third[:1])  # one row spread over four

    specs = [TensorSpec((4, 2)), TensorSpec((4, 3)), TensorSpec((4, 4))]
    for function in (gap, broadcast):
        graph = freeze(function, specs).graph
        assert _names(assemble_slices(graph)) == _names(graph)


@pytest.mark.parametrize("name", sorted(FUSIBLE))
def test_fusion_table_matches_each_op_forward(name):
    """The generated kernels call the backend function FUSIBLE names: it must compute exactly
    what the op record's forward computes, on the dtypes fusion accepts."""
    op = next(record for record in all_ops() if record.name == name)
    function, extra = FUSIBLE[name]
    # the arrays forward takes: its parameters after (ctx, xp)
    parameters = inspect.signature(op.forward).parameters.values()
    arity = len([p for p in parameters if p.kind == p.POSITIONAL_OR_KEYWORD]) - 2
    for dtype in ("float32", "float64"):
        # positive values inside every fusible function's domain (0.1 to 0.9; above 1 for acosh)
        arrays = [np.abs(np.tanh(_x(4, 5, seed=k))) * 0.8 + 0.1 for k in range(arity)]
        arrays = [(a + 1.0 if name == "acosh" else a).astype(dtype) for a in arrays]
        expected = op.forward(object(), np, *arrays)
        args = arrays + ([extra] if extra is not None else [])
        got = getattr(np, function)(*args)
        assert got.dtype == expected.dtype
        np.testing.assert_array_equal(got, expected)


def test_buffer_reuse_donates_a_dying_intermediate_to_a_fused_kernel():
    def function(x):
        h = x @ x.T  # a fresh (N, N) buffer, read only by the fused chain below
        return (h * 0.5).tanh() + 1.0

    graph = fuse_elementwise(freeze(function, [TensorSpec((None, 4))]).graph)
    planned = reuse_buffers(graph)
    assert planned.donations == {2: graph.nodes[1].output}
    static = freeze(function, [TensorSpec((None, 4))])
    x = _x(6, 4)
    np.testing.assert_allclose(static.__class__(planned)(x).numpy(), static(x).numpy(), rtol=1e-6)


def test_buffer_reuse_never_donates_inputs_constants_or_outputs():
    def function(x):
        return (x * 2).exp()  # x is the caller's array: never written

    planned = reuse_buffers(fuse_elementwise(freeze(function, [TensorSpec((2, 3))]).graph))
    assert planned.donations == {}


def test_executor_frees_slots_after_their_last_reader():
    static = freeze(MLP().eval(), [TensorSpec((None, 12))])
    frees = [len(step.free) for step in static.plan.steps]
    assert frees[1:] == [1, 1, 1, 1]  # each intermediate dies at its only reader


def test_optimize_keeps_results_of_real_models():
    model = MLP().eval()
    static = freeze(model, [TensorSpec((None, 12))])
    optimized = freeze(model, [TensorSpec((None, 12))], optimize=True)
    assert len(optimized.graph.nodes) <= len(static.graph.nodes)
    x = _x(7, 12)
    np.testing.assert_allclose(optimized(x).numpy(), static(x).numpy(), rtol=1e-6, atol=1e-6)
    assert optimize(static.graph) is not static.graph


def test_concurrent_workers_give_the_same_results():
    def function(x):
        a = (x @ x.T).tanh()
        b = (x.T @ x).exp().sum()
        return a.sum() + b

    static = freeze(function, [TensorSpec((None, 6))])
    x = _x(5, 6)
    np.testing.assert_allclose(static.with_workers(2)(x).numpy(), static(x).numpy(), rtol=1e-6)


def test_the_donated_buffer_is_written_in_place_at_run_time(monkeypatch):
    import buildingai.graph.executor as executor

    handed_over = []
    original = executor._donated

    def spy(slots, index):
        array = original(slots, index)
        handed_over.append(array is not None)
        return array

    monkeypatch.setattr(executor, "_donated", spy)

    def function(x):
        return ((x @ x.T) * 0.5).tanh() + 1.0

    static = freeze(function, [TensorSpec((None, 4))], optimize=True)
    x = _x(5, 4)
    np.testing.assert_allclose(static(x).numpy(), function(bai.tensor(x)).numpy(), rtol=1e-6)
    assert handed_over == [True]


def test_a_fused_kernel_infers_its_output_and_counts_its_steps_flops_once_in_bytes():
    def function(x, y):
        return ((x * 0.5 + y).tanh() * x).relu()

    static = freeze(function, [TensorSpec((None, 8)), TensorSpec((None, 8))])
    fused = fuse_elementwise(static.graph)
    kernel = fused.nodes[0].op
    batch = fused.values[fused.inputs[0]].shape[0]
    spec = ValueSpec((batch, 8), np.dtype("float32"))
    assert kernel.infer(spec, spec) == spec
    flops, read, written = kernel.cost(spec, spec)
    # five steps of one FLOP per element; two inputs read, one output written
    assert (flops, read, written) == (5 * 8 * batch, 2 * 32 * batch, 32 * batch)
    steps_flops = sum(fused.cost(node)[0] for node in static.graph.nodes)
    assert fused.cost(fused.nodes[0])[0] == steps_flops

"""parallel(): deferred eager ops run as concurrent branches; frozen graphs with workers."""

import threading

import numpy as np
import pytest

import buildingai as bai
import buildingai.nn.functional as F
from buildingai.graph import GraphError, TensorSpec, freeze, parallel
from buildingai.graph.parallel import LazyTensor


def _x(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


def _branches(x):
    a = (x @ x.T).tanh()
    b = (x * 2.0).exp() @ x.T
    return a, b


def test_ops_are_recorded_then_run_with_eager_results():
    x = bai.tensor(_x(5, 3))
    with parallel():
        a, b = _branches(x)
        assert isinstance(a, LazyTensor) and a.shape == (5, 5) and a.dtype == np.float64
        c = a + b
    expected = sum(_branches(x), bai.zeros(1))
    np.testing.assert_allclose(c.numpy(), expected.numpy())


def test_reading_a_value_inside_the_block_forces_what_it_needs():
    x = bai.tensor(_x(4, 4))
    with parallel():
        a, b = _branches(x)
        values = a.numpy()  # runs a's ops now, on this thread
        assert a._pending is None and b._pending is not None
    np.testing.assert_allclose(values, _branches(x)[0].numpy())


def test_backward_flows_through_parallel_branches():
    data = _x(4, 3)
    x = bai.tensor(data, requires_grad=True)
    with parallel():
        a, b = _branches(x)
        loss = a.sum() + b.sum()
    loss.backward()
    reference = bai.tensor(data, requires_grad=True)
    expected_a, expected_b = _branches(reference)
    (expected_a.sum() + expected_b.sum()).backward()
    np.testing.assert_allclose(x.grad.numpy(), reference.grad.numpy(), rtol=1e-12)


def test_independent_branches_run_on_different_threads():
    threads = set()

    class Watch(bai.DispatchMode):
        def after_op(self, op, inputs, output, attrs):
            threads.add(threading.get_ident())

    x = bai.tensor(_x(64, 64))
    with bai.dispatch_mode(Watch()), parallel(workers=2):
        a = x
        b = x
        for _ in range(8):  # linear: its public function reads no values, so nothing is forced
            a = F.linear(a, x).tanh()
            b = F.linear(b, x).sin()
    assert len(threads) == 2 and threading.get_ident() not in threads


def test_parallel_blocks_do_not_nest():
    with parallel(), pytest.raises(GraphError, match="cannot be nested"), parallel():
        pass


def test_frozen_graphs_run_independent_branches_on_a_pool():
    def function(x):
        a = (x @ x.T).tanh()
        b = (x.T @ x).exp()
        return a.sum() + b.sum()

    static = freeze(function, [TensorSpec((None, 8), "float64")]).with_workers(2)
    x = _x(6, 8)
    np.testing.assert_allclose(static(x).numpy(), function(bai.tensor(x)).numpy())


class _Failing(bai.ops.Op):
    """An op whose forward raises, to check that a branch's failure reaches the caller."""

    name = "failing"

    def forward(self, ctx, xp, x):
        raise RuntimeError("this branch failed")


def test_an_exception_inside_a_branch_reaches_the_caller_and_leaves_parallel_usable():
    x = bai.tensor(_x(4, 4))
    with pytest.raises(RuntimeError, match="this branch failed"), parallel():
        _healthy = (x @ x.T).tanh()
        _Failing()(x)
    with parallel():  # a later block works normally
        a, b = _branches(x)
    expected_a, expected_b = _branches(x)
    np.testing.assert_allclose(a.numpy(), expected_a.numpy())
    np.testing.assert_allclose(b.numpy(), expected_b.numpy())


class _Doubling(bai.ops.Op):
    """An op record without ``infer``: parallel() cannot know its output, so it runs at once."""

    name = "doubling"

    def forward(self, ctx, xp, x):
        return x * 2


def test_lazy_shapes_and_dtypes_come_from_the_op_records_infer():
    x = bai.tensor(_x(4, 6))
    with parallel():
        total = x.sum(1, keepdims=True)
        single = x.astype("float32")
        grid = single.reshape(2, 12).exp()
        for lazy, shape, dtype in (
            (total, (4, 1), np.float64),
            (single, (4, 6), np.float32),
            (grid, (2, 12), np.float32),
        ):
            assert isinstance(lazy, LazyTensor) and lazy._pending is not None
            assert lazy.shape == shape and lazy.dtype == dtype
        doubled = _Doubling()(x)  # no infer: run now, not recorded
        assert not isinstance(doubled, LazyTensor)
    np.testing.assert_allclose(total.numpy(), x.numpy().sum(1, keepdims=True))
    np.testing.assert_allclose(grid.numpy(), np.exp(x.numpy().astype("float32").reshape(2, 12)))
    np.testing.assert_allclose(doubled.numpy(), 2 * x.numpy())

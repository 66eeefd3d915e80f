"""A kernel's ``min_size``: calls whose first input is smaller than every active kernel of the op
takes skip them without asking ``applies``, and give the record's result."""

from __future__ import annotations

import numpy as np
import pytest

import buildingai as bai
from buildingai.accel import activations, products, registry
from buildingai.ops.activation import RELU


@pytest.fixture
def asked(monkeypatch, accel_on):
    """The sizes of the first inputs relu.fused's ``applies`` was asked about."""
    entry = registry.kernel("relu.fused")
    sizes = []

    def spy(xp, x, _applies=entry.applies):
        sizes.append(x.size)
        return _applies(xp, x)

    monkeypatch.setattr(entry, "applies", spy)
    return sizes


def test_the_op_knows_its_smallest_accelerated_input(accel_on):
    assert RELU.accelerated_from == activations.RELU_MIN_SIZE > 0
    with registry.enabled(False):
        assert RELU.accelerated == () and RELU.accelerated_from == 0


@pytest.mark.parametrize("path", ["apply", "function", "frozen"])
def test_small_calls_skip_the_kernels_large_ones_ask_them(asked, path):
    rng = np.random.default_rng(0)
    small = rng.standard_normal((3, 5)).astype(np.float32)
    large = rng.standard_normal(activations.RELU_MIN_SIZE).astype(np.float32)
    for x in (small, large):
        if path == "apply":
            out = bai.autograd.dispatch.apply(RELU, bai.tensor(x)).numpy()
        elif path == "function":
            with bai.no_grad():
                out = bai.nn.functional.relu(bai.tensor(x)).numpy()
        else:
            frozen = bai.graph.freeze(bai.nn.ReLU().eval(), [bai.graph.TensorSpec(x.shape)])
            out = frozen(bai.tensor(x)).numpy()
        np.testing.assert_array_equal(out, np.maximum(x, 0))
    assert small.size not in asked and large.size in asked


def test_the_call_size_multiplies_the_first_two_inputs():
    a, b = np.ones((3, 4)), np.ones((4, 5))
    assert registry.call_size([a]) == 12 and registry.call_size([a, b, np.ones(7)]) == 240
    assert registry.call_size([a, 2.0]) is None  # a Python number: no bound applies


def test_too_small_reads_the_call_size():
    class Op:
        accelerated_from = 240

    a, b = np.ones((3, 4)), np.ones((4, 5))
    assert not registry.too_small(Op, [a, b]) and registry.too_small(Op, [a, b[:, :4]])
    assert registry.too_small(Op, [a]) and registry.too_small(Op, [])  # sizes 12 and 1
    assert not registry.too_small(Op, [a, 2.0])  # a Python number: no bound applies


@pytest.mark.parametrize("path", ["operator", "apply"])
def test_a_product_bound_skips_small_products(monkeypatch, accel_on, path):
    """A bound on the multiply-adds (their upper bound a.size * b.size) keeps small products
    away from a kernel's applies; larger ones still ask it."""
    entry = registry.kernel("matmul.routed")
    asked = []

    def spy(xp, a, b, _applies=entry.applies, **attrs):
        asked.append(a.shape)
        return _applies(xp, a, b, **attrs)

    monkeypatch.setattr(entry, "applies", spy)
    monkeypatch.setattr(entry, "min_size", 1 << 18)
    registry.set_enabled("matmul.routed", True)  # refreshes the op's bound
    from buildingai.ops.linalg import MATMUL

    try:
        assert MATMUL.accelerated_from == 1 << 18
        rng = np.random.default_rng(1)
        for shape in ((16, 16), (64, 64)):
            a, b = rng.standard_normal(shape), rng.standard_normal(shape)
            if path == "operator":
                out = (bai.tensor(a) @ bai.tensor(b)).numpy()
            else:
                out = bai.autograd.dispatch.apply(MATMUL, bai.tensor(a), bai.tensor(b)).numpy()
            np.testing.assert_allclose(out, a @ b, rtol=1e-12)
        assert asked == [(64, 64)]
    finally:
        monkeypatch.undo()
        registry.set_enabled("matmul.routed", True)
    assert MATMUL.accelerated_from == products.ROUTED_MIN_SIZE


@pytest.mark.parametrize("name", ["matmul.routed", "linear.routed"])
def test_the_routed_products_bound_is_where_applies_starts(monkeypatch, accel_on, name):
    """Below ``min_size`` applies is False for every shape; at it, a column (n, 1) times a
    (1, 1) matrix (n multiply-adds, call size n) is routed."""
    entry = registry.kernel(name)
    assert entry.min_size == products.ROUTED_MIN_SIZE
    monkeypatch.setattr(products, "_routed", lambda xp, *arrays, **attrs: True)
    one = np.ones((1, 1), np.float32)
    for rows, routed in ((entry.min_size - 1, False), (entry.min_size, True)):
        column = np.ones((rows, 1), np.float32)
        assert registry.call_size([column, one]) == rows
        assert bool(entry.applies(np, column, one)) is routed
    rng = np.random.default_rng(2)
    for _ in range(200):  # operands of any shape below the bound
        first = tuple(rng.integers(1, 80, rng.integers(2, 4)))
        inner = first[-1]
        second = (*first[:-2], inner, int(rng.integers(1, 80)))
        if name == "linear.routed":
            second = (int(rng.integers(1, 80)), inner)
        a, b = np.ones(first, np.float32), np.ones(second, np.float32)
        if registry.call_size([a, b]) < entry.min_size:
            assert not entry.applies(np, a, b)


def test_an_operator_with_a_python_number_has_no_bound(monkeypatch, accel_on):
    """``tensor * 2.0``: the operator's written-out size test meets a number, where no bound
    applies, and still asks the kernels; ``tensor * tensor`` below the bound skips them."""
    from buildingai.ops.elementwise import MUL

    asked = []

    def applies(xp, a, b):
        asked.append((getattr(a, "shape", a), getattr(b, "shape", b)))
        return False  # the record computes it either way

    monkeypatch.setattr(registry, "_entries", dict(registry._entries))
    registry.register(MUL, applies, lambda ctx, xp, a, b: a * b, name="mul.spy", min_size=1 << 10)
    try:
        x = bai.tensor(np.arange(6.0).reshape(2, 3))
        np.testing.assert_array_equal((x * 2.0).numpy(), np.arange(6.0).reshape(2, 3) * 2)
        np.testing.assert_array_equal((x * x).numpy(), np.arange(6.0).reshape(2, 3) ** 2)
        assert asked == [((2, 3), 2.0)]
    finally:
        monkeypatch.undo()
        registry._refresh(MUL)
    assert MUL.accelerated == ()

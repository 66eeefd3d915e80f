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
        accelerated_size = None  # no size rule of its own

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
        size = registry.call_size([a, b]) if entry.size is None else entry.size(a, b)
        if size < entry.min_size:
            assert not entry.applies(np, a, b)


def test_a_linear_layer_is_sized_by_its_multiply_adds(accel_on):
    """(1, 784) times a (256, 784) weight: 200,704 multiply-adds, under the routed bound,
    though the call size (784 * 200,704) is far above it."""
    from buildingai.ops.linalg import LINEAR, LINEAR_RELU

    x, weight = np.ones((1, 784), np.float32), np.ones((256, 784), np.float32)
    for op in (LINEAR, LINEAR_RELU):
        assert op.accelerated_size is products._layer_multiply_adds
        assert registry.too_small(op, [x, weight, np.ones(256, np.float32)])
        assert not registry.too_small(op, [np.ones((2, 784), np.float32), weight])
    with registry.enabled(False):
        assert LINEAR.accelerated_size is None


@pytest.mark.parametrize("path", ["module", "apply", "frozen"])
def test_a_small_linear_call_skips_the_routed_kernel(monkeypatch, accel_on, path):
    entry = registry.kernel("linear.routed")
    asked = []

    def spy(xp, x, weight, bias=None, _applies=entry.applies):
        asked.append(x.shape)
        return _applies(xp, x, weight, bias)

    monkeypatch.setattr(entry, "applies", spy)
    layer = bai.nn.Linear(784, 256).eval()
    rng = np.random.default_rng(3)
    for rows in (1, 4):  # 200,704 and 802,816 multiply-adds
        x = rng.standard_normal((rows, 784)).astype(np.float32)
        expected = x @ layer.weight.numpy().T + layer.bias.numpy()
        if path == "module":
            with bai.no_grad():
                out = layer(bai.tensor(x)).numpy()
        elif path == "apply":
            out = layer(bai.tensor(x)).detach().numpy()  # the parameters record: apply
        else:
            frozen = bai.graph.freeze(layer, [bai.graph.TensorSpec(x.shape)])
            out = frozen(bai.tensor(x)).numpy()
        np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)
    assert asked and set(asked) == {(4, 784)}  # (a frozen graph asks when traced too)


def test_kernels_of_one_op_share_its_size_rule(monkeypatch):
    from buildingai.errors import ArgumentError
    from buildingai.ops.linalg import LINEAR

    monkeypatch.setattr(registry, "_entries", dict(registry._entries))
    with pytest.raises(ArgumentError, match="sizes calls of 'linear' otherwise"):
        registry.register(LINEAR, lambda *a: False, lambda *a: None, name="linear.spy")
    registry._refresh(LINEAR)


def test_an_operator_keeps_its_ops_size_rule(monkeypatch, accel_on):
    """``x * y`` on an op with a size rule of its own: the rule decides, not a.size * b.size."""
    from buildingai.ops.elementwise import MUL

    asked = []

    def applies(xp, a, b):
        asked.append(a.shape)
        return False

    monkeypatch.setattr(registry, "_entries", dict(registry._entries))
    registry.register(
        MUL, applies, lambda ctx, xp, a, b: a * b, name="mul.spy", min_size=10,
        size=lambda a, b: a.shape[0],
    )  # fmt: skip
    try:
        small, large = bai.tensor(np.ones((9, 100))), bai.tensor(np.ones((12, 2)))
        np.testing.assert_array_equal((small * small).numpy(), np.ones((9, 100)))
        np.testing.assert_array_equal((large * large).numpy(), np.ones((12, 2)))
        assert asked == [(12, 2)]
    finally:
        monkeypatch.undo()
        registry._refresh(MUL)
    assert MUL.accelerated == () and MUL.accelerated_size is None


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


def test_a_kernel_bound_above_the_op_s_smallest_still_holds(monkeypatch, accel_on):
    """Of an op's kernels, one that takes only larger calls than another is never asked about
    a smaller call, while the other still is: ``mean`` with ``mean.rows_and_columns`` bound
    above ``mean.channels`` (which takes any size); both give NumPy's mean."""
    from buildingai.ops.reduce import MEAN

    pytest.importorskip("numba")  # mean.channels, the kernel for any size, needs it
    entry = registry.kernel("mean.rows_and_columns")
    monkeypatch.setattr(entry, "min_size", 1 << 13)
    registry._refresh(MEAN)
    asked = []

    def spy(xp, x, _applies=entry.applies, **attrs):
        asked.append(x.size)
        return _applies(xp, x, **attrs)

    monkeypatch.setattr(entry, "applies", spy)
    try:
        assert MEAN.accelerated_from == 0  # mean.channels' bound: the op's smallest
        rng = np.random.default_rng(0)
        small = rng.standard_normal((8, 16, 32)).astype(np.float32)
        large = rng.standard_normal((64, 16, 32)).astype(np.float32)
        for x in (small, large):
            out = bai.tensor(x).mean(-1).numpy()
            np.testing.assert_allclose(out, x.mean(-1), rtol=1e-6, atol=1e-7)
        assert asked == [large.size]
    finally:
        monkeypatch.undo()
        registry._refresh(MEAN)

"""apply_binary: the short path for unrecorded binary ops gives what apply gives, and hands every
other case (gradients, interceptors, odd inputs, failures) to apply."""

import numpy as np
import pytest

import buildingai as bai
from buildingai.autograd import dispatch
from buildingai.ops import elementwise as ops
from buildingai.ops.linalg import MATMUL


def test_same_result_and_fields_as_apply():
    a, b = bai.tensor([[1.0, 2.0]]), bai.tensor([[3.0], [4.0]])
    fast, general = dispatch.apply_binary(ops.ADD, a, b), dispatch.apply(ops.ADD, a, b)
    np.testing.assert_array_equal(fast.numpy(), general.numpy())
    assert fast.dtype == general.dtype and not fast.requires_grad and fast.is_leaf
    assert fast._version == [0, None] and fast._version is not a._version


def test_python_numbers_and_dtype_rules():
    x = bai.tensor([1, 2], dtype=bai.int64)
    assert (x * 0.5).dtype == bai.float32  # PyTorch: int tensor * Python float -> default float
    assert (2 * x).dtype == bai.int64
    y = bai.ones(2)
    assert (y * np.float64(2)).dtype == bai.float32  # NumPy scalars are weak, as Python's
    assert (y / 3).numpy()[0] == pytest.approx(1 / 3)


def test_a_gradient_is_recorded_through_the_general_path():
    a = bai.ones(2, 2, requires_grad=True)
    out = dispatch.apply_binary(MATMUL, a, bai.ones(2, 2))
    assert out.requires_grad and out.grad_fn is not None
    out.sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), np.full((2, 2), 2.0))


def test_interceptors_see_the_op():
    seen = []

    class Watch(dispatch.Interceptor):
        def after_op(self, op, inputs, output, attrs):
            seen.append(op.name)

    with dispatch.intercept(Watch()):
        bai.ones(2) + bai.ones(2)
    assert seen == ["add"]


def test_failures_are_explained_by_the_general_path():
    with pytest.raises(bai.ShapeError, match=r"\[add\] shapes \(2,\) float32, \(3,\) float32"):
        bai.ones(2) + bai.ones(3)
    with pytest.raises(bai.ShapeError, match=r"\[matmul\] cannot multiply \(2, 3\) by \(2, 3\)"):
        bai.ones(2, 3) @ bai.ones(2, 3)


def test_a_forward_keeps_nothing_between_calls():
    bai.nn.functional.gelu(bai.ones(3), approximate="tanh")  # its forward keeps a gate array
    bai.ones(2) + bai.ones(2)
    assert not dispatch._SCRATCH.__dict__


def test_a_recorded_call_guards_its_inputs_against_in_place_changes():
    a, b = bai.ones(2, requires_grad=True), bai.ones(2)
    out = a * b  # mul keeps its inputs for backward
    b.add_(1.0)
    with pytest.raises(bai.AutogradError, match=r"\[mul\] backward needs an input of 'mul'"):
        out.sum().backward()


def test_recorded_results_match_the_general_path_to_second_order():
    x = bai.tensor([0.5, -1.5], dtype=bai.float64, requires_grad=True)
    y = x * x * 3.0 - x / 2.0  # every op here takes the short path
    (first,) = bai.grad(y.sum(), [x], create_graph=True)
    (second,) = bai.grad(first.sum(), [x])
    np.testing.assert_allclose(first.numpy(), 6 * x.numpy() - 0.5)
    np.testing.assert_allclose(second.numpy(), [6.0, 6.0])


def test_numpy_scalars_take_the_short_path_as_python_numbers(monkeypatch):
    """A NumPy scalar is weakly typed, as in PyTorch: float32 * np.float64(2) stays float32,
    and its gradient is the same as with the Python number; apply is not needed for it."""

    def general(*args, **kwargs):
        raise AssertionError("the short path handed a NumPy scalar to apply")

    monkeypatch.setattr(dispatch, "apply", general)
    x = bai.tensor(np.ones((2, 2), np.float32), requires_grad=True)
    for scalar in (np.float32(0.5), np.float64(0.5), np.int64(2)):
        for out in (x * scalar, scalar * x, x + scalar, x / scalar):
            assert out.dtype == np.float32
    (x * np.float64(3.0)).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.full((2, 2), 3.0, np.float32))

"""The binary operators (``x + y``, ``x @ y``, ``buildingai.mul``...) take apply's steps for the
commonest call (a binary op on the CPU that no mode watches) in one function
(``dispatch.binary_operator``): they give what apply's general path gives: values, fields,
gradients, errors and the op stream."""

import numpy as np
import pytest

import buildingai as bai
from buildingai.autograd import dispatch
from buildingai.autograd.tensor import version_counter
from buildingai.ops import elementwise as ops
from buildingai.ops.linalg import MATMUL


class _Watch(dispatch.DispatchMode):
    """An observer that does nothing: with it on the stack every op takes apply's general path."""

    def after_op(self, op, inputs, output, attrs):
        pass


def test_same_result_and_fields_as_the_general_path():
    a, b = bai.tensor([[1.0, 2.0]]), bai.tensor([[3.0], [4.0]])
    fast = a + b
    with dispatch.dispatch_mode(_Watch()):
        general = dispatch.apply(ops.ADD, a, b)
    np.testing.assert_array_equal(fast.numpy(), general.numpy())
    assert fast.dtype == general.dtype and not fast.requires_grad and fast.is_leaf
    assert fast.version == 0 and version_counter(fast) is not version_counter(a)


def test_python_numbers_and_dtype_rules():
    x = bai.tensor([1, 2], dtype=bai.int64)
    assert (x * 0.5).dtype == bai.float32  # PyTorch: int tensor * Python float -> default float
    assert (2 * x).dtype == bai.int64
    y = bai.ones(2)
    assert (y * np.float64(2)).dtype == bai.float32  # NumPy scalars are weak, as Python's
    assert (y / 3).numpy()[0] == pytest.approx(1 / 3)


def test_a_gradient_is_recorded_by_the_operator():
    a = bai.ones(2, 2, requires_grad=True)
    out = a @ bai.ones(2, 2)
    assert out.requires_grad and out.grad_fn is not None
    out.sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), np.full((2, 2), 2.0))


def test_modes_see_the_op():
    seen = []

    class Watch(dispatch.DispatchMode):
        def after_op(self, op, inputs, output, attrs):
            seen.append(op.name)

    a, b = bai.ones(2), bai.ones(2)
    with dispatch.dispatch_mode(Watch()):
        a + b
    assert seen == ["add"]


def test_failures_are_explained_by_the_general_path():
    with pytest.raises(bai.ShapeError, match=r"\[add\] shapes \(2,\) float32, \(3,\) float32"):
        bai.ones(2) + bai.ones(3)
    with pytest.raises(bai.ShapeError, match=r"\[matmul\] cannot multiply \(2, 3\) by \(2, 3\)"):
        bai.ones(2, 3) @ bai.ones(2, 3)


def test_a_forward_keeps_nothing_between_calls():
    bai.nn.functional.gelu(bai.ones(3), approximate="tanh")  # its forward keeps a gate array
    bai.ones(2) + bai.ones(2)
    assert not hasattr(dispatch._SCRATCH, "cache")  # an unrecorded call's context keeps nothing


def test_a_recorded_call_guards_its_inputs_against_in_place_changes():
    a, b = bai.ones(2, requires_grad=True), bai.ones(2)
    out = a * b  # mul keeps its inputs for backward
    b.add_(1.0)
    with pytest.raises(bai.AutogradError, match=r"\[mul\] backward needs an input of 'mul'"):
        out.sum().backward()


def test_a_parameter_operand_takes_the_short_steps_and_is_guarded(monkeypatch):
    """A layer's ``weight * x`` (an RMSNorm's scale, a LayerScale): a Parameter is a tensor to
    the operators, as to apply; its in-place change after the op is caught at backward."""
    weight = bai.nn.Parameter(bai.tensor([2.0, 3.0]))
    x = bai.tensor([1.0, -1.0], requires_grad=True)
    square = bai.nn.Parameter(bai.tensor(np.ones((2, 2), np.float32)))

    def general(*args, **kwargs):
        raise AssertionError("took apply's general path")

    monkeypatch.setattr(dispatch, "_unwrap", general)
    for out in (weight * x, x * weight, weight + 1.0, 2.0 * weight, square @ square):
        assert type(out) is bai.Tensor and out.requires_grad
    monkeypatch.undo()
    out = weight * x
    out.sum().backward()
    np.testing.assert_array_equal(weight.grad.numpy(), [1.0, -1.0])
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 3.0])
    out = x * weight
    with bai.no_grad():
        weight.mul_(2.0)
    with pytest.raises(bai.AutogradError, match=r"\[mul\] backward needs an input of 'mul'"):
        out.sum().backward()


def test_recorded_results_match_the_general_path_to_second_order():
    x = bai.tensor([0.5, -1.5], dtype=bai.float64, requires_grad=True)
    y = x * x * 3.0 - x / 2.0  # every op here takes the operators' short steps
    (first,) = bai.grad(y.sum(), [x], create_graph=True)
    (second,) = bai.grad(first.sum(), [x])
    np.testing.assert_allclose(first.numpy(), 6 * x.numpy() - 0.5)
    np.testing.assert_allclose(second.numpy(), [6.0, 6.0])


def test_numpy_scalars_act_as_python_numbers():
    """A NumPy scalar is weakly typed, as in PyTorch: float32 * np.float64(2) stays float32,
    and its gradient is the same as with the Python number."""
    x = bai.tensor(np.ones((2, 2), np.float32), requires_grad=True)
    for scalar in (np.float32(0.5), np.float64(0.5), np.int64(2)):
        for out in (x * scalar, scalar * x, x + scalar, x / scalar):
            assert out.dtype == np.float32
    (x * np.float64(3.0)).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.full((2, 2), 3.0, np.float32))


class _Recorder(dispatch.DispatchMode):
    def __init__(self) -> None:
        self.names = []

    def after_op(self, op, inputs, output, attrs):
        self.names.append(op.name)


def _op_stream(requires_grad: bool) -> tuple[list, list]:
    """The op names a dispatch mode sees in a small model's forward, and in its backward."""
    bai.manual_seed(0)
    model = bai.nn.Sequential(bai.nn.Linear(4, 8), bai.nn.Tanh(), bai.nn.Linear(8, 2))
    for parameter in model.parameters():
        parameter.requires_grad_(requires_grad)
    x = bai.tensor(np.random.default_rng(0).standard_normal((3, 4)), dtype=bai.float32)
    recorder = _Recorder()
    with dispatch.dispatch_mode(recorder):
        out = model(x * 2.0 + 1.0)
        loss = ((out - 0.5) * (out - 0.5) / 2.0).sum()
        forward = list(recorder.names)
        if requires_grad:
            loss.backward()
    return forward, recorder.names[len(forward) :]


def test_values_and_gradients_are_the_same_with_or_without_the_short_steps():
    def step():
        bai.manual_seed(0)
        model = bai.nn.Sequential(bai.nn.Linear(4, 8), bai.nn.Tanh(), bai.nn.Linear(8, 2))
        x = bai.tensor(np.random.default_rng(0).standard_normal((3, 4)), dtype=bai.float32)
        out = model(x * 2.0 + 1.0)
        ((out - 0.5) * (out - 0.5) / 2.0).sum().backward()
        return [out.numpy()] + [p.grad.numpy() for p in model.parameters()]

    short = step()
    with dispatch.dispatch_mode(_Watch()):
        general = step()
    for left, right in zip(short, general):
        np.testing.assert_array_equal(left, right)


def test_modes_see_the_same_forward_ops_with_or_without_gradients():
    recorded_forward, _ = _op_stream(requires_grad=True)
    unrecorded_forward, backward = _op_stream(requires_grad=False)
    assert recorded_forward == unrecorded_forward and backward == []
    assert {"add", "sub", "mul", "div"} <= set(recorded_forward)


def test_parallel_branches_show_modes_the_eager_ops():
    from buildingai.graph import parallel

    x = bai.tensor(np.random.default_rng(0).standard_normal((8, 8)))

    def branches():
        return (x @ x).tanh() + 1.0, (x * 2.0).exp() - x

    eager, deferred = _Recorder(), _Recorder()
    with dispatch.dispatch_mode(eager):
        expected = branches()
    with dispatch.dispatch_mode(deferred), parallel(workers=2):
        results = branches()
    assert sorted(deferred.names) == sorted(eager.names)
    for result, reference in zip(results, expected):
        np.testing.assert_array_equal(result.numpy(), reference.numpy())


def test_operators_are_apply_of_their_op():
    a, b = bai.tensor([[1.0, 2.0]]), bai.tensor([[3.0], [4.0]])
    for operator, op in ((a + b, ops.ADD), (a - b, ops.SUB), (a * b, ops.MUL), (a / b, ops.DIV)):
        expected = dispatch.apply(op, a, b)
        np.testing.assert_array_equal(operator.numpy(), expected.numpy())
        assert operator.dtype == expected.dtype and operator.is_leaf and not operator.requires_grad
    np.testing.assert_array_equal((b @ a).numpy(), dispatch.apply(MATMUL, b, a).numpy())


def test_the_product_operator_takes_vectors_through_matmul():
    m, v = bai.ones(2, 3), bai.tensor([1.0, 2.0, 3.0])
    assert (m @ v).shape == (2,) and (v @ v).shape == ()
    np.testing.assert_array_equal((m @ v).numpy(), [6.0, 6.0])
    np.testing.assert_array_equal((v @ m.T).numpy(), [6.0, 6.0])


def test_an_op_with_a_check_has_no_operator_short_path():
    class Checked(ops.Add):
        def check(self, a, b):
            pass

    with pytest.raises(bai.BuildingAIError, match="has a check"):
        dispatch.binary_operator(Checked())

"""``dispatch.tensor_operator`` (the path of ``linear`` and ``relu``) takes apply's steps for an
unrecorded CPU call in one function: it gives what apply's general path gives (values, fields,
gradients, errors, the op stream), and compared with PyTorch in float64."""

import numpy as np
import pytest
import torch

import buildingai as bai
import buildingai.nn.functional as F
from buildingai import accel
from buildingai.autograd import dispatch
from buildingai.autograd.tensor import version_counter
from buildingai.errors import ShapeError
from buildingai.ops.activation import RELU
from buildingai.ops.linalg import LINEAR


class _Watch(dispatch.DispatchMode):
    """Records the ops that run; with it on the stack every op takes apply's general path."""

    def __init__(self):
        self.seen = []

    def after_op(self, op, inputs, output, attrs):
        self.seen.append(op.name)


def _layer(rng, batch=3, features=5, outputs=4):
    x = rng.standard_normal((batch, features))
    weight = rng.standard_normal((outputs, features))
    bias = rng.standard_normal(outputs)
    return x, weight, bias


@pytest.mark.parametrize("accelerated", [False, True])
def test_linear_and_relu_match_pytorch_without_recording(accelerated):
    x, weight, bias = _layer(np.random.default_rng(0))
    with accel.enabled(accelerated), bai.no_grad():
        ours = F.relu(F.linear(bai.tensor(x), bai.tensor(weight), bai.tensor(bias)))
        no_bias = F.linear(bai.tensor(x), bai.tensor(weight))
    expected = torch.relu(torch.nn.functional.linear(*map(torch.tensor, (x, weight, bias))))
    np.testing.assert_allclose(ours.numpy(), expected.numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(no_bias.numpy(), x @ weight.T, rtol=1e-12, atol=1e-12)
    assert not ours.requires_grad and ours.is_leaf and ours.version == 0


def test_same_result_and_fields_as_the_general_path():
    x, weight, bias = (bai.tensor(a) for a in _layer(np.random.default_rng(1)))
    fast = dispatch.tensor_operator(LINEAR)(x, weight, bias)
    with dispatch.dispatch_mode(_Watch()):
        general = dispatch.apply(LINEAR, x, weight, bias)
    np.testing.assert_array_equal(fast.numpy(), general.numpy())
    assert fast.dtype == general.dtype and fast.shape == general.shape
    assert fast.grad is None and fast._base is None
    assert version_counter(fast) is not version_counter(x)


def test_parameters_under_no_grad_give_an_unrecorded_output():
    layer = bai.nn.Linear(5, 4)
    with bai.no_grad():
        out = bai.nn.ReLU()(layer(bai.ones(2, 5)))
    assert not out.requires_grad and out.grad_fn is None


def test_gradients_are_recorded_and_match_pytorch():
    x, weight, bias = _layer(np.random.default_rng(2))
    ours = [bai.tensor(a, requires_grad=True) for a in (x, weight, bias)]
    theirs = [torch.tensor(a, requires_grad=True) for a in (x, weight, bias)]
    F.relu(F.linear(*ours)).sum().backward()
    torch.relu(torch.nn.functional.linear(*theirs)).sum().backward()
    for mine, reference in zip(ours, theirs):
        np.testing.assert_allclose(mine.grad.numpy(), reference.grad.numpy(), rtol=1e-12)


def test_a_layer_reads_a_weight_that_replaced_its_parameter():
    layer = bai.nn.Linear(3, 2)
    del layer.weight  # as pruning does: the parameter goes, a plain tensor takes its name
    layer.weight = bai.zeros(2, 3)
    with bai.no_grad():
        out = layer(bai.ones(1, 3))
    np.testing.assert_array_equal(out.numpy(), layer.bias.numpy()[None])


def test_modes_see_the_ops():
    watch = _Watch()
    x, weight, bias = (bai.tensor(a) for a in _layer(np.random.default_rng(3)))
    with dispatch.dispatch_mode(watch), bai.no_grad():
        F.relu(F.linear(x, weight, bias))
        bai.nn.ReLU()(x)
    assert watch.seen == ["linear", "relu", "relu"]


def test_shape_errors_name_the_op_and_the_module():
    model = bai.nn.Sequential(bai.nn.Linear(3, 2))
    with bai.no_grad(), pytest.raises(ShapeError, match=r"\[linear\]") as caught:
        model(bai.ones(1, 4))
    assert caught.value.where is not None and "0" in caught.value.where


def test_relu_of_a_python_number_goes_the_general_way():
    assert F.relu(bai.tensor(-2.0)).item() == 0.0
    operator = dispatch.tensor_operator(RELU, general=lambda x: dispatch.apply(RELU, x))
    assert operator(bai.tensor([-1.0, 2.0])).numpy().tolist() == [0.0, 2.0]

"""``max``/``min`` in both spellings: with PyTorch's ``dim`` (keyword or positional) they return
``(values, indices)`` as ``torch.max(x, dim)`` (gradient to the chosen element); with NumPy's
keyword ``axis`` values only."""

import numpy as np
import pytest

import buildingai as bai
from buildingai.errors import ShapeError
from tests.helpers import check_op

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("name", ["max", "min"])
@pytest.mark.parametrize(("shape", "dim"), [((3, 4), 1), ((3, 4), 0), ((2, 3, 4), -1), ((5,), 0)])
@pytest.mark.parametrize("keepdim", [False, True])
def test_dim_returns_values_and_indices_like_torch(name, shape, dim, keepdim):
    check_op(lambda x: getattr(x, name)(dim=dim, keepdim=keepdim), shape, gradcheck=False)
    check_op(lambda x: getattr(x, name)(dim=dim, keepdim=keepdim).values, shape, gradgrad=True)


@pytest.mark.parametrize("name", ["max", "min"])
def test_function_form_and_named_fields(name):
    array = np.random.default_rng(1).standard_normal((3, 5))
    result = getattr(bai, name)(bai.tensor(array), dim=1)
    expected = getattr(torch, name)(torch.tensor(array), dim=1)
    assert isinstance(result, tuple) and result._fields == ("values", "indices")
    np.testing.assert_array_equal(result.values.numpy(), expected.values.numpy())
    np.testing.assert_array_equal(result.indices.numpy(), expected.indices.numpy())
    assert result.indices.dtype == np.int64
    values, indices = result  # unpacks as torch's
    assert values is result.values and indices is result.indices


@pytest.mark.parametrize("name", ["max", "min"])
def test_ties_and_nan_pick_the_first_and_send_the_gradient_there(name):
    array = np.array([[1.0, 3.0, 3.0, 0.0], [2.0, 2.0, -1.0, 2.0], [np.nan, 1.0, 2.0, np.nan]])
    if name == "min":
        array = np.where(np.isnan(array), array, -array)
    ours = bai.tensor(array, requires_grad=True)
    theirs = torch.tensor(array, requires_grad=True)
    result = getattr(ours, name)(dim=1)
    expected = getattr(theirs, name)(dim=1)
    np.testing.assert_array_equal(result.indices.numpy(), expected.indices.numpy())
    np.testing.assert_array_equal(result.values.numpy(), expected.values.detach().numpy())
    result.values.sum().backward()
    expected.values.sum().backward()
    np.testing.assert_array_equal(ours.grad.numpy(), theirs.grad.numpy())


@pytest.mark.parametrize("name", ["max", "min"])
def test_axis_keeps_numpy_values_only(name):
    array = np.random.default_rng(2).standard_normal((3, 4))
    x = bai.tensor(array)
    for result in (getattr(x, name)(axis=1), getattr(bai, name)(x, axis=1)):
        assert isinstance(result, bai.Tensor)
        np.testing.assert_array_equal(result.numpy(), getattr(np, name)(array, axis=1))
    assert isinstance(getattr(x, name)(axis=(0, 1), keepdims=True), bai.Tensor)
    assert isinstance(getattr(x, name)(), bai.Tensor)


def test_tutorial_line_unpacks_predicted_classes():
    logits = np.random.default_rng(4).standard_normal((8, 10))
    outputs = bai.tensor(logits)
    _, predicted = outputs.max(1)
    np.testing.assert_array_equal(predicted.numpy(), torch.tensor(logits).max(1)[1].numpy())
    assert predicted.dtype == np.int64 and predicted.shape == (8,)


@pytest.mark.parametrize("name", ["max", "min"])
@pytest.mark.parametrize(
    "call",
    [
        lambda lib, x, name: getattr(x, name)(1),
        lambda lib, x, name: getattr(x, name)(-1, True),
        lambda lib, x, name: getattr(x, name)(0, keepdim=True),
        lambda lib, x, name: getattr(lib, name)(x, 1),
        lambda lib, x, name: getattr(lib, name)(x, 0, False),
    ],
)
def test_positional_dim_returns_values_and_indices_like_torch(name, call):
    array = np.random.default_rng(5).standard_normal((3, 4))
    ours = bai.tensor(array, requires_grad=True)
    theirs = torch.tensor(array, requires_grad=True)
    result, expected = call(bai, ours, name), call(torch, theirs, name)
    assert isinstance(result, tuple) and result._fields == ("values", "indices")
    np.testing.assert_array_equal(result.values.numpy(), expected.values.detach().numpy())
    np.testing.assert_array_equal(result.indices.numpy(), expected.indices.numpy())
    (
        result.values
        * bai.tensor(np.arange(1.0, 1 + result.values.size).reshape(result.values.shape))
    ).sum().backward()
    (
        expected.values
        * torch.arange(1.0, 1 + expected.values.numel()).reshape(expected.values.shape)
    ).sum().backward()
    np.testing.assert_array_equal(ours.grad.numpy(), theirs.grad.numpy())


@pytest.mark.parametrize("name", ["max", "min"])
def test_positional_axes_tuple_keeps_numpy_values_only(name):
    array = np.random.default_rng(6).standard_normal((2, 3, 4))
    result = getattr(bai.tensor(array), name)((0, 2))
    assert isinstance(result, bai.Tensor)
    np.testing.assert_array_equal(result.numpy(), getattr(np, name)(array, axis=(0, 2)))


def test_positional_dim_and_keyword_dim_together_are_refused():
    x = bai.tensor(np.ones((2, 3)))
    with pytest.raises(TypeError, match="got both positional dim=1 and dim=0"):
        x.max(1, dim=0)
    with pytest.raises(TypeError, match="got both positional keepdim=True and keepdim=False"):
        x.min(1, True, keepdim=False)


@pytest.mark.parametrize(("name", "torch_name"), [("max", "maximum"), ("min", "minimum")])
def test_binary_form_is_elementwise_like_torch(name, torch_name):
    check_op(
        lambda a, b: getattr(bai, name)(a, b),
        (3, 4),
        (4,),
        torch_fn=lambda a, b: getattr(torch, name)(a, b),
    )
    check_op(lambda a, b: getattr(a, name)(b), (2, 3), (2, 3), torch_fn=getattr(torch, torch_name))


def test_zero_dim_tensor_is_its_own_extreme():
    result = bai.tensor(2.5).max(dim=0)
    expected = torch.tensor(2.5).max(dim=0)
    assert result.values.item() == expected.values.item()
    assert result.indices.item() == expected.indices.item() == 0


def test_dim_errors_name_the_op_and_the_fix():
    x = bai.tensor(np.ones((2, 3)))
    with pytest.raises(ShapeError, match=r"\[max\] with dim= returns \(values, indices\)"):
        x.max(dim=(0, 1))
    with pytest.raises(ShapeError, match=r"\[min\] axis 2 is out of range"):
        x.min(dim=2)
    with pytest.raises(ShapeError, match=r"\[max\] cannot reduce dimension 1 of size 0"):
        bai.tensor(np.ones((2, 0))).max(dim=1)
    with pytest.raises(TypeError, match="got both axis=0 and dim=1"):
        x.max(axis=0, dim=1)


def test_indices_select_the_values():
    array = np.random.default_rng(3).standard_normal((4, 6))
    values, indices = bai.tensor(array).max(dim=1, keepdim=True)
    np.testing.assert_array_equal(
        np.take_along_axis(array, indices.numpy(), axis=1), values.numpy()
    )
    gathered = bai.tensor(array).gather(1, indices)
    np.testing.assert_array_equal(gathered.numpy(), values.numpy())

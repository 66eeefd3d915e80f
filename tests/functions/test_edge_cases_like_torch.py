"""Edge cases matched to PyTorch: zero-size inner dimensions in batched matmul/linear, 0-d
inputs of gather/index_select/argmax/argmin/cumsum/transpose, relu's gradient at NaN, and the
dtype of two Python floats through a binary op."""

from __future__ import annotations

import numpy as np
import pytest

import buildingai as bai
import buildingai.nn.functional as F

from ..helpers import check_op, constant, torch

# ----- zero-size inner dimensions -----------------------------------------------------------------


@pytest.mark.parametrize(
    "shapes",
    [((5, 5, 0), (0, 5)), ((2, 5, 0), (2, 0, 3)), ((0,), (0, 4)), ((3, 0), (0,)), ((4, 0), (0, 2))],
)
def test_matmul_with_an_empty_inner_dimension_gives_zeros(shapes):
    check_op(lambda a, b: a @ b, *shapes, gradgrad=True)


def test_linear_with_an_empty_inner_dimension_gives_zeros_or_the_bias():
    check_op(lambda x, w: F.linear(x, w), (2, 3, 0), (5, 0), torch_fn=torch.nn.functional.linear)
    check_op(
        lambda x, w, b: F.linear(x, w, b), (2, 3, 0), (5, 0), (5,),
        torch_fn=torch.nn.functional.linear,
    )  # fmt: skip


def test_the_issue_calls_verbatim():
    assert (bai.zeros(5, 5, 0) @ bai.zeros(0, 5)).shape == (5, 5, 5)
    assert F.linear(bai.zeros(2, 3, 0), bai.zeros(5, 0)).shape == (2, 3, 5)


# ----- 0-d inputs ---------------------------------------------------------------------------------


def test_gather_on_a_0d_input_is_0d_as_in_torch():
    check_op(
        lambda x, i: bai.gather(x, 0, i),
        (),
        constant(0),
        torch_fn=lambda x, i: torch.gather(x, 0, i),
    )
    check_op(
        lambda x, i: x.gather(-1, i), (), constant(0), torch_fn=lambda x, i: x.gather(-1, i)
    )  # fmt: skip


@pytest.mark.parametrize("index", [[0], [0, 0, 0], np.zeros(0, np.int64)], ids=str)
@pytest.mark.parametrize("dim", [0, -1])
def test_gather_on_a_0d_input_with_a_1d_index_is_shaped_like_the_index(index, dim):
    check_op(
        lambda x, i: bai.gather(x, dim, i),
        (),
        constant(np.asarray(index, np.int64)),
        torch_fn=lambda x, i: torch.gather(x, dim, i),
        gradgrad=True,
    )


def test_gather_on_a_0d_input_refuses_what_torch_refuses():
    x = bai.tensor(2.5)
    with pytest.raises(
        bai.ShapeError, match=r"\[gather\] index has 2 dimensions but the input is 0-d"
    ):
        bai.gather(x, 0, bai.tensor([[0]]))
    with pytest.raises(bai.ShapeError, match=r"\[gather\] axis 1 is out of range for a 0-d"):
        bai.gather(x, 1, bai.tensor([0]))
    with pytest.raises(bai.IndexingError, match=r"\[gather\] index 1 is out of range"):
        bai.gather(x, 0, bai.tensor([1]))


@pytest.mark.parametrize("index", [[0], 0])
def test_index_select_on_a_0d_input_is_0d_as_in_torch(index):
    check_op(
        lambda x, i: bai.index_select(x, 0, i),
        (),
        constant(index),
        torch_fn=lambda x, i: torch.index_select(x, 0, i),
    )


@pytest.mark.parametrize("name", ["argmax", "argmin", "cumsum", "cumprod"])
@pytest.mark.parametrize("dim", [0, -1])
def test_scalar_axis_of_0d_inputs(name, dim):
    check_op(
        lambda x: getattr(bai, name)(x, dim=dim), (), torch_fn=lambda x: getattr(torch, name)(x, dim=dim)
    )  # fmt: skip
    with pytest.raises(bai.ShapeError, match=rf"\[{name}\] axis 1 is out of range for a 0-d"):
        getattr(bai, name)(bai.tensor(1.0), dim=1)


@pytest.mark.parametrize("shape", [(), (3,)])
@pytest.mark.parametrize("axes", [(0, 0), (-1, -1), (0, -1)])
def test_transpose_of_0d_and_1d_inputs(shape, axes):
    check_op(lambda x: x.transpose(*axes), shape)
    with pytest.raises(bai.ShapeError, match=r"\[swapaxes\] axis 2 is out of range"):
        bai.zeros(shape).transpose(0, 2)


# ----- relu at NaN --------------------------------------------------------------------------------


def test_relu_passes_the_gradient_through_at_nan_as_torch():
    values = np.array([np.nan, -1.0, 0.0, 2.0, np.nan, -0.0])
    upstream = np.array([1.0, 2.0, 3.0, 4.0, np.inf, 5.0])
    ours_x = bai.tensor(values, requires_grad=True)
    theirs_x = torch.tensor(values, requires_grad=True)
    for grads in ([1.0] * 6, upstream):  # the finite fast path and the where path
        (ours,) = bai.grad(ours_x.relu(), [ours_x], grad_outputs=bai.tensor(np.asarray(grads)))
        (theirs,) = torch.autograd.grad(theirs_x.relu(), [theirs_x], torch.tensor(grads))
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


# ----- two Python floats --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name", ["add", "sub", "mul", "div", "maximum", "minimum", "remainder", "floor_divide", "pow"]
)
def test_two_python_floats_give_the_default_float_dtype(name):
    out = getattr(bai, name)(1.5, 2.0)
    # torch wants tensors: torch.tensor of a Python number is what a Python number stands for
    expected = getattr(torch, name)(torch.tensor(1.5), torch.tensor(2.0))
    assert out.dtype == bai.float32 == np.dtype(str(expected.dtype).replace("torch.", ""))
    assert out.shape == ()
    np.testing.assert_allclose(out.numpy(), expected.numpy())
    integers = getattr(torch, name)(torch.tensor(3), torch.tensor(2))
    assert getattr(bai, name)(3, 2).dtype == integers.numpy().dtype

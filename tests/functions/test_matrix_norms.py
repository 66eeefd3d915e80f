"""Matrix norms against PyTorch in float64, values and gradients: ``norm(x, "nuc")``,
``norm(x, ord=2)`` of a matrix (its largest singular value), ``linalg.matrix_norm`` with every
order, ``linalg.norm`` and ``linalg.svdvals``, second derivatives included. ``x.norm(2)`` stays
torch.norm's vector norm."""

import math

import numpy as np
import pytest

import buildingai as bai
from buildingai.errors import BuildingAIError, ShapeError
from tests.helpers import check_op

torch = pytest.importorskip("torch")

ORDERS = ["fro", "nuc", 2, -2, 1, -1, math.inf, -math.inf]


def test_the_spellings_that_needed_a_matrix_norm():
    array = np.random.default_rng(0).standard_normal((3, 4))
    x, t = bai.tensor(array), torch.tensor(array)
    np.testing.assert_allclose(bai.norm(x, "nuc").item(), torch.norm(t, "nuc").item())
    np.testing.assert_allclose(x.norm("nuc").item(), t.norm("nuc").item())
    np.testing.assert_allclose(bai.norm(x, ord=2).item(), torch.linalg.norm(t, ord=2).item())
    matrix_norm = bai.linalg.matrix_norm(x)
    np.testing.assert_allclose(matrix_norm.item(), torch.linalg.matrix_norm(t).item())
    # torch.norm's p (positional) stays a vector norm of all elements, as in PyTorch
    np.testing.assert_allclose(x.norm(2).item(), t.norm(2).item())
    assert not np.isclose(x.norm(2).item(), bai.norm(x, ord=2).item())


@pytest.mark.parametrize("ord", ORDERS, ids=str)
@pytest.mark.parametrize("shape", [(3, 4), (4, 3), (2, 3, 3)], ids=str)
def test_matrix_norm_values_and_gradients_like_torch(ord, shape):
    check_op(
        lambda x: bai.linalg.matrix_norm(x, ord),
        shape,
        torch_fn=lambda x: torch.linalg.matrix_norm(x, ord),
    )


@pytest.mark.parametrize("ord", ORDERS, ids=str)
def test_matrix_norm_over_other_axes_keeping_them(ord):
    check_op(
        lambda x: bai.linalg.matrix_norm(x, ord, dim=(2, 0), keepdim=True),
        (3, 2, 4),
        torch_fn=lambda x: torch.linalg.matrix_norm(x, ord, dim=(2, 0), keepdim=True),
    )


@pytest.mark.parametrize(
    ("ord", "dim", "shape"),
    [(None, None, (3, 4)), (2, None, (3, 4)), ("nuc", None, (4, 2)), (None, None, (2, 3, 4)),
     (3, 1, (3, 4)), (None, (0, 2), (2, 3, 4)), (-math.inf, None, (5,)), (1, None, (3, 3))],
    ids=str,
)  # fmt: skip
def test_linalg_norm_picks_vector_or_matrix_like_torch(ord, dim, shape):
    check_op(
        lambda x: bai.linalg.norm(x, ord, dim),
        shape,
        torch_fn=lambda x: torch.linalg.norm(x, ord, dim),
    )
    if dim is None:  # the keyword ord= of norm and the Tensor method are the same
        check_op(lambda x: x.norm(ord=ord), shape, torch_fn=lambda x: torch.linalg.norm(x, ord))


def test_nuclear_norm_through_torch_norm_spellings():
    check_op(lambda x: bai.norm(x, "nuc"), (3, 5), torch_fn=lambda x: torch.norm(x, "nuc"))
    check_op(
        lambda x: x.norm(p="nuc", dim=(0, 2), keepdim=True),
        (3, 2, 4),
        torch_fn=lambda x: torch.norm(x, p="nuc", dim=(0, 2), keepdim=True),
    )


@pytest.mark.parametrize("shape", [(3, 4), (2, 5, 2), (1, 3)], ids=str)
def test_svdvals_like_torch(shape):
    check_op(bai.linalg.svdvals, shape, torch_fn=torch.linalg.svdvals)


def test_a_loss_with_a_spectral_penalty_trains_like_torch():
    array = np.random.default_rng(7).standard_normal((4, 3))
    weight = bai.tensor(array, requires_grad=True)
    theirs = torch.tensor(array, requires_grad=True)
    loss = (weight * weight).sum() + 0.1 * bai.norm(weight, ord=2) + bai.norm(weight, "nuc")
    expected = (theirs * theirs).sum() + 0.1 * torch.linalg.norm(theirs, 2)
    expected = expected + torch.norm(theirs, "nuc")
    loss.backward()
    expected.backward()
    np.testing.assert_allclose(loss.item(), expected.item(), rtol=1e-12)
    np.testing.assert_allclose(weight.grad.numpy(), theirs.grad.numpy(), rtol=1e-10)


def test_errors_name_the_function_and_what_is_allowed():
    with pytest.raises(ShapeError, match=r"\[matrix_norm\] needs at least 2 dimensions"):
        bai.linalg.matrix_norm(bai.zeros(4))
    with pytest.raises(ValueError, match=r"\[matrix_norm\] unsupported ord 3"):
        bai.linalg.matrix_norm(bai.zeros(2, 2), 3)
    with pytest.raises(ShapeError, match=r"dim must be a pair, got \(0, 1, 2\)"):
        bai.norm(bai.zeros(2, 3, 4), "nuc")  # PyTorch: "dim must be a 2-tuple"
    with pytest.raises(ShapeError, match=r"the input must be 1-D or 2-D"):
        bai.linalg.norm(bai.zeros(2, 3, 4), 2)
    with pytest.raises(TypeError, match=r"\[norm\] got both p=1 .* and ord=2"):
        bai.norm(bai.zeros(2, 2), 1, ord=2)
    with pytest.raises(bai.DTypeError, match=r"\[svdvals\] computes in float32 or float64"):
        bai.linalg.svdvals(bai.zeros(2, 2, dtype="int64"))


@pytest.mark.parametrize("ord", ["nuc", 2, -2], ids=str)
@pytest.mark.parametrize("shape", [(3, 4), (4, 3), (2, 3, 3)], ids=str)
def test_second_derivatives_of_singular_value_norms_like_torch(ord, shape):
    check_op(
        lambda x: bai.linalg.matrix_norm(x, ord),
        shape,
        torch_fn=lambda x: torch.linalg.matrix_norm(x, ord),
        gradgrad=True,
    )


def test_third_derivatives_of_singular_values_say_they_are_missing():
    x = bai.tensor(np.random.default_rng(1).standard_normal((3, 3)), requires_grad=True)
    (grad,) = bai.grad(bai.norm(x, "nuc"), [x], create_graph=True)
    (second,) = bai.grad((grad * grad).sum(), [x], create_graph=True)
    with pytest.raises(BuildingAIError, match=r"\[svdvals_hessian\] third derivatives"):
        second.sum().backward()

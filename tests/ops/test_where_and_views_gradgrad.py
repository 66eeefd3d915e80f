"""``where`` and ``masked_fill`` against PyTorch (broadcasting, scalars, zero-size, second
derivatives, and exact zeros for the unselected branch even under inf/nan upstream gradients),
plus second-derivative cases for extrema and view ops."""

import numpy as np
import pytest

import buildingai as bai
from tests.helpers import check_op, constant, mask

torch = pytest.importorskip("torch")

# (condition, a, b) shapes: equal, broadcasting on each input in turn and on all three at once,
# scalars, size-1 and zero-size dimensions
WHERE_SHAPES = [
    ((3, 4), (3, 4), (3, 4)),
    ((3, 1), (3, 4), (3, 4)),
    ((3, 4), (1, 4), (3, 4)),
    ((3, 4), (3, 4), (3, 1)),
    ((3, 1, 1), (1, 4, 1), (1, 1, 5)),
    ((2, 3), (), (3,)),
    ((), (2, 3), (2, 3)),
    ((1,), (1,), (1,)),
    ((0, 3), (1, 3), (0, 1)),
    ((2, 0), (2, 1), (0,)),
]


@pytest.mark.parametrize("shapes", WHERE_SHAPES, ids=str)
def test_where_matches_torch(shapes):
    condition, a, b = shapes
    check_op(bai.where, mask(*condition), a, b, torch_fn=torch.where, gradgrad=True)


@pytest.mark.parametrize("shapes", WHERE_SHAPES[:6], ids=str)
def test_where_method_form(shapes):
    condition, a, b = shapes
    check_op(
        lambda c, x, y: x.where(c, y),
        mask(*condition),
        a,
        b,
        torch_fn=lambda c, x, y: x.where(c, y),
        gradgrad=True,
    )


@pytest.mark.parametrize("scalar", [2.5, -1.0, 0.0])
def test_where_with_a_scalar_on_either_side(scalar):
    check_op(bai.where, mask(3, 4), (3, 4), scalar, torch_fn=torch.where, gradgrad=True)
    check_op(bai.where, mask(3, 4), scalar, (3, 4), torch_fn=torch.where, gradgrad=True)
    check_op(bai.where, mask(2, 1), scalar, (1, 3), torch_fn=torch.where, gradgrad=True)


def test_where_with_two_scalars_gives_the_default_float_dtype():
    condition = bai.tensor([True, False, True])
    out = bai.where(condition, 1.0, 2.0)
    expected = torch.where(torch.tensor([True, False, True]), 1.0, 2.0)
    assert out.dtype.name == str(expected.dtype).replace("torch.", "") == "float32"
    np.testing.assert_array_equal(out.numpy(), expected.numpy())


def test_where_inside_a_composite_matches_torch():
    # a safe log: the gradient of the unselected branch never reaches x
    check_op(
        lambda x: bai.where(x > 0, (x.abs() + 1e-3).log(), x * x),
        (3, 2),
        torch_fn=lambda x: torch.where(x > 0, (x.abs() + 1e-3).log(), x * x),
        gradgrad=True,
    )


def test_where_condition_from_a_constant_array():
    condition = np.array([[True, False, False], [False, True, True]])
    check_op(bai.where, constant(condition), (2, 3), (2, 3), torch_fn=torch.where, gradgrad=True)


def test_where_shape_error_names_where():
    with pytest.raises(
        bai.ShapeError, match=r"\[where\] shapes \(3,\) bool, \(2,\) float32, \(3,\) float32"
    ) as info:
        bai.where(bai.ones(3) > 0, bai.ones(2), bai.ones(3))
    assert "help:" in str(info.value)


def _upstream():
    """An upstream gradient with inf and nan exactly at the positions where(...) did not pick."""
    condition = np.array([True, False, True, False])
    for_a = np.array([1.0, np.inf, 2.0, np.nan])  # inf/nan where b was picked
    for_b = np.array([-np.inf, 3.0, np.nan, 4.0])  # inf/nan where a was picked
    return condition, for_a, for_b


@pytest.mark.parametrize("which", ["a", "b"])
def test_where_unselected_branch_gets_exactly_zero_under_inf_and_nan(which):
    condition, for_a, for_b = _upstream()
    upstream = for_a if which == "a" else for_b
    a = bai.tensor(np.array([1.0, 2.0, 3.0, 4.0]), requires_grad=True)
    b = bai.tensor(np.array([5.0, 6.0, 7.0, 8.0]), requires_grad=True)
    ga, gb = bai.grad(bai.where(bai.tensor(condition), a, b), [a, b], bai.tensor(upstream))

    ta = torch.tensor([1.0, 2.0, 3.0, 4.0], dtype=torch.float64, requires_grad=True)
    tb = torch.tensor([5.0, 6.0, 7.0, 8.0], dtype=torch.float64, requires_grad=True)
    tga, tgb = torch.autograd.grad(
        torch.where(torch.tensor(condition), ta, tb), [ta, tb], torch.tensor(upstream)
    )
    np.testing.assert_array_equal(ga.numpy(), tga.numpy())
    np.testing.assert_array_equal(gb.numpy(), tgb.numpy())
    unselected = ga.numpy()[~condition] if which == "a" else gb.numpy()[condition]
    assert np.all(unselected == 0.0)


def test_where_unselected_branch_zero_with_broadcasting_and_scalars():
    condition = np.array([[True, False], [False, True]])
    upstream = np.array([[1.0, np.inf], [np.nan, 2.0]])
    a = bai.tensor(np.array([3.0, 4.0]), requires_grad=True)  # broadcast over rows
    (ga,) = bai.grad(bai.where(bai.tensor(condition), a, 0.0), [a], bai.tensor(upstream))
    ta = torch.tensor([3.0, 4.0], dtype=torch.float64, requires_grad=True)
    (tga,) = torch.autograd.grad(
        torch.where(torch.tensor(condition), ta, 0.0), [ta], torch.tensor(upstream)
    )
    np.testing.assert_array_equal(ga.numpy(), tga.numpy())
    np.testing.assert_array_equal(ga.numpy(), [1.0, 2.0])


def test_where_unselected_branch_zero_when_differentiating_a_gradient():
    # where() applied to a first-order gradient: nan upstream at the unselected position must not
    # reach x or w in the second backward
    condition = np.array([True, False, True])
    upstream = np.array([1.0, np.nan, 1.0])
    x = bai.tensor(np.array([1.0, 2.0, 3.0]), requires_grad=True)
    w = bai.tensor(np.array([1.0, 5.0, 1.0]), requires_grad=True)
    (g,) = bai.grad(bai.where(bai.tensor(condition), x * x, 0.0).sum(), [x], create_graph=True)
    h = bai.where(bai.tensor(condition), g * w, bai.tensor(np.array(np.inf)))
    gx, gw = bai.grad(h, [x, w], bai.tensor(upstream))

    tx = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64, requires_grad=True)
    tw = torch.tensor([1.0, 5.0, 1.0], dtype=torch.float64, requires_grad=True)
    tc = torch.tensor(condition)
    (tg,) = torch.autograd.grad(torch.where(tc, tx * tx, 0.0).sum(), [tx], create_graph=True)
    th = torch.where(tc, tg * tw, torch.tensor(np.inf, dtype=torch.float64))
    tgx, tgw = torch.autograd.grad(th, [tx, tw], torch.tensor(upstream))
    np.testing.assert_array_equal(gx.numpy(), tgx.numpy())
    np.testing.assert_array_equal(gw.numpy(), tgw.numpy())
    np.testing.assert_array_equal(gx.numpy(), [2.0, 0.0, 2.0])


def test_masked_fill_matches_torch():
    for x_shape, mask_shape in [((3, 4), (3, 4)), ((3, 4), (1, 4)), ((2, 3, 4), (3, 1))]:
        check_op(
            lambda x, m: x.masked_fill(m, -1.5),
            x_shape,
            mask(*mask_shape),
            gradgrad=True,
        )


def test_masked_fill_filled_positions_get_exactly_zero_under_inf_and_nan():
    fill = np.array([False, True, True, False])
    upstream = np.array([1.0, np.inf, np.nan, 2.0])
    x = bai.tensor(np.arange(4.0), requires_grad=True)
    value = bai.tensor(np.array(0.5), requires_grad=True)
    out = bai.masked_fill(x, bai.tensor(fill), value)
    gx, gv = bai.grad(out, [x, value], bai.tensor(upstream))

    tx = torch.arange(4.0, dtype=torch.float64, requires_grad=True)
    tv = torch.tensor(0.5, dtype=torch.float64, requires_grad=True)
    tgx, tgv = torch.autograd.grad(
        tx.masked_fill(torch.tensor(fill), tv), [tx, tv], torch.tensor(upstream)
    )
    np.testing.assert_array_equal(gx.numpy(), tgx.numpy())
    np.testing.assert_array_equal(gx.numpy(), [1.0, 0.0, 0.0, 2.0])
    assert np.isnan(gv.item()) and np.isnan(tgv.item())  # the filled positions did carry nan

    # with a number as the value only x has a gradient, still exactly 0 where filled
    y = bai.tensor(np.arange(4.0), requires_grad=True)
    (gy,) = bai.grad(y.masked_fill(bai.tensor(fill), 0.0), [y], bai.tensor(upstream))
    np.testing.assert_array_equal(gy.numpy(), [1.0, 0.0, 0.0, 2.0])


def test_masked_fill_value_gets_the_sum_over_filled_positions_under_inf_elsewhere():
    fill = np.array([True, False, True])
    upstream = np.array([1.5, np.inf, 2.0])
    x = bai.tensor(np.zeros(3), requires_grad=True)
    value = bai.tensor(np.array(1.0), requires_grad=True)
    (gv,) = bai.grad(bai.masked_fill(x, bai.tensor(fill), value), [value], bai.tensor(upstream))
    assert gv.item() == 3.5


# ----- second derivatives of extrema and view ops -----------------------------------------------


@pytest.mark.parametrize(
    "shape, axis",
    [((5,), None), ((3, 4), 1), ((3, 4), -2), ((2, 3, 4), (0, 2)), ((3, 1), 1)],
    ids=str,
)
@pytest.mark.parametrize(
    "name, torch_name", [("max", "amax"), ("min", "amin"), ("amax", "amax"), ("amin", "amin")]
)
@pytest.mark.parametrize("keepdims", [False, True])
def test_extrema_second_derivatives_without_ties(shape, axis, name, torch_name, keepdims):
    dims = tuple(range(len(shape))) if axis is None else axis
    check_op(
        lambda x: getattr(bai, name)(x * x * x, axis=axis, keepdims=keepdims),
        shape,
        torch_fn=lambda x: getattr(torch, torch_name)(x * x * x, dim=dims, keepdim=keepdims),
        gradgrad=True,
    )


def test_max_method_dim_spelling_second_derivative():
    check_op(
        lambda x: (x.max(dim=0, keepdim=True).values * x).sin(),
        (3, 2),
        torch_fn=lambda x: (x.max(dim=0, keepdim=True).values * x).sin(),
        gradgrad=True,
    )


@pytest.mark.parametrize(
    "shape, new_shape",
    [((2, 6), (3, 4)), ((2, 6), (12,)), ((2, 6), (-1, 3)), ((3,), (1, 3, 1)), ((0, 4), (2, 0))],
    ids=str,
)
def test_view_second_derivative(shape, new_shape):
    check_op(
        lambda x: (x * x).view(*new_shape) * 2.0,
        shape,
        torch_fn=lambda x: (x * x).view(*new_shape) * 2.0,
        gradgrad=True,
    )
    check_op(
        lambda x: bai.view(x.exp(), new_shape),
        shape,
        torch_fn=lambda x: x.exp().view(new_shape),
        gradgrad=True,
    )


@pytest.mark.parametrize(
    "shape, axes", [((2, 3), (0, 1)), ((2, 3, 4), (0, 2)), ((2, 3, 4), (-1, 1)), ((3,), (0, 0))],
    ids=str,
)  # fmt: skip
def test_swapaxes_second_derivative(shape, axes):
    check_op(
        lambda x: bai.swapaxes(x * x, *axes).tanh(),
        shape,
        torch_fn=lambda x: torch.swapaxes(x * x, *axes).tanh(),
        gradgrad=True,
    )
    check_op(
        lambda x: x.swapaxes(*axes) ** 3,
        shape,
        torch_fn=lambda x: x.swapaxes(*axes) ** 3,
        gradgrad=True,
    )


@pytest.mark.parametrize(
    "shape, target",
    [((3,), (2, 3)), ((3, 1), (3, 4)), ((1,), (2, 2)), ((), (3,)), ((1, 3), (2, 0, 3))],
    ids=str,
)
def test_broadcast_to_second_derivative(shape, target):
    check_op(
        lambda x: bai.broadcast_to(x * x, target).sin(),
        shape,
        torch_fn=lambda x: torch.broadcast_to(x * x, target).sin(),
        gradgrad=True,
    )
    check_op(
        lambda x: x.broadcast_to(target) * x.broadcast_to(target),
        shape,
        torch_fn=lambda x: x.broadcast_to(target) * x.broadcast_to(target),
        gradgrad=True,
    )

"""median, nanmedian, quantile, nanquantile, nansum, nanmean, var_mean, std_mean,
logcumsumexp, cummax, cummin, cdist, dist, histc and bincount against PyTorch in float64:
values, int64 indices, gradients (ties, NaN, zero distances), empty and 0-d inputs, errors,
PyTorch's documentation examples, and frozen graphs of the composites."""

from __future__ import annotations

import math

import numpy as np
import pytest

import buildingai as bai
from buildingai.errors import ArgumentError, DTypeError, ShapeError
from buildingai.graph import freeze
from buildingai.graph.graph import GraphError

from ..helpers import check_op, constant, integers, torch

nan, inf = math.nan, math.inf


def assert_same(ours, theirs, exact: bool = False) -> None:
    """Values, shape and dtype of a tensor (or of each of a tuple's) equal to PyTorch's."""
    if isinstance(theirs, tuple):
        assert isinstance(ours, tuple) and len(ours) == len(theirs)
        for mine, reference in zip(ours, theirs):
            assert_same(mine, reference, exact)
        return
    expected = theirs.detach().numpy()
    got = ours.numpy()
    assert got.shape == expected.shape and got.dtype == expected.dtype, (got, expected)
    if exact or expected.dtype.kind in "biu":
        np.testing.assert_array_equal(got, expected)
    else:
        np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)


def both(function, *arrays):
    """``function(library, *tensors)`` for BuildingAI and for PyTorch, on the same arrays."""
    ours = function(bai, *(bai.tensor(np.asarray(a)) for a in arrays))
    theirs = function(torch, *(torch.tensor(np.asarray(a)) for a in arrays))
    return ours, theirs


# with ties and NaN: [1, 2, 2, 3] has a tied median; the rows with NaN propagate or skip it
TIES_AND_NAN = np.array([[1.0, 2.0, 2.0, 3.0], [2.0, nan, 1.0, nan], [nan, nan, nan, nan]])

# ----- median / nanmedian ---------------------------------------------------------------------


@pytest.mark.parametrize("name", ["median", "nanmedian"])
@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("keepdim", [False, True])
def test_median_along_a_dim_matches_torch(name, dim, keepdim):
    check_op(
        lambda x: getattr(bai, name)(x, dim, keepdim),
        (3, 6, 4),
        torch_fn=lambda x: getattr(torch, name)(x, dim, keepdim),
    )


@pytest.mark.parametrize("name", ["median", "nanmedian"])
def test_median_of_every_element_matches_torch(name):
    check_op(lambda x: getattr(x, name)(), (4, 5), torch_fn=lambda x: getattr(x, name)())


@pytest.mark.parametrize("name", ["median", "nanmedian"])
@pytest.mark.parametrize("row", [0, 1])
def test_median_of_every_element_shares_the_gradient_among_ties_and_nan(name, row):
    # PyTorch splits it evenly among the elements equal to the result (the NaN ones for NaN)
    check_op(
        lambda x: getattr(bai, name)(x),
        constant(TIES_AND_NAN[row], requires_grad=True),
        torch_fn=lambda x: getattr(torch, name)(x),
        gradcheck=False,
    )


@pytest.mark.parametrize("name", ["median", "nanmedian"])
def test_median_along_a_dim_with_ties_and_nan_matches_torch_indices(name):
    # the rows with some NaN: median takes the first NaN, nanmedian the median of the rest
    check_op(
        lambda x: getattr(bai, name)(x, 1),
        constant(TIES_AND_NAN[:2], requires_grad=True),
        torch_fn=lambda x: getattr(torch, name)(x, 1),
        gradcheck=False,
    )
    ours, theirs = both(lambda m, x: getattr(m, name)(x, 0), TIES_AND_NAN[:2])
    assert_same(ours, theirs)


def test_median_index_among_many_ties_matches_torch():
    values = np.random.default_rng(1).integers(0, 3, size=(6, 41)).astype(np.float64)
    for dim in (0, 1):
        ours, theirs = both(lambda m, x, dim=dim: m.median(x, dim), values)
        assert_same(ours, theirs)


def test_median_of_integers_and_0d_and_empty_inputs():
    assert_same(*both(lambda m, x: m.median(x), np.array([3, 1, 2, 4])))
    assert_same(*both(lambda m, x: m.median(x, 0), np.array([3, 1, 2, 4])))
    assert_same(*both(lambda m, x: m.median(x, 0), np.array(5.0)))
    assert_same(*both(lambda m, x: m.nanmedian(x, -1, True), np.array(nan)))
    assert_same(*both(lambda m, x: m.median(x), np.zeros(0)))  # nan
    assert_same(*both(lambda m, x: m.median(x, 0), np.zeros((2, 0))))
    with pytest.raises(ShapeError, match=r"^\[median\] cannot reduce dimension 0 of size 0"):
        bai.median(bai.zeros(0, 3), 0)
    with pytest.raises(ArgumentError, match=r"^\[median\] keepdim needs a dim"):
        bai.median(bai.zeros(3), keepdim=True)


def test_nanmedian_of_an_all_nan_row_is_nan():
    ours = bai.nanmedian(bai.tensor(TIES_AND_NAN), 1)
    assert np.isnan(ours.values.numpy()[2])
    assert np.isnan(TIES_AND_NAN[2, ours.indices.numpy()[2]])


def test_median_documentation_examples():
    torch = bai
    a = torch.tensor([[2, 3, 1], [float("nan"), 1, float("nan")]])
    np.testing.assert_array_equal(a.median(0).values.numpy(), [np.nan, 1.0, np.nan])
    np.testing.assert_array_equal(a.median(0).indices.numpy(), [1, 1, 1])
    np.testing.assert_array_equal(a.nanmedian(0).values.numpy(), [2.0, 1.0, 1.0])
    np.testing.assert_array_equal(a.nanmedian(0).indices.numpy(), [0, 1, 0])
    a = torch.tensor([1, float("nan"), 3, 2])
    assert np.isnan(a.median().item())
    assert a.nanmedian().item() == 2.0
    a = torch.tensor([[0.2505, -0.3982, -0.9948, 0.3518, -1.3131],
                      [0.3180, -0.6993, 1.0436, 0.0438, 0.2270],
                      [-0.2751, 0.7303, 0.2192, 0.3321, 0.2488],
                      [1.0778, -1.9510, 0.7048, 0.4742, -0.7125]])  # fmt: skip
    values, indices = torch.median(a, 1)
    np.testing.assert_allclose(values.numpy(), [-0.3982, 0.2270, 0.2488, 0.4742], rtol=1e-6)
    np.testing.assert_array_equal(indices.numpy(), [1, 4, 4, 3])


# ----- quantile / nanquantile -----------------------------------------------------------------

INTERPOLATIONS = ["linear", "lower", "higher", "midpoint", "nearest"]


@pytest.mark.parametrize("name", ["quantile", "nanquantile"])
@pytest.mark.parametrize("interpolation", INTERPOLATIONS)
@pytest.mark.parametrize(("dim", "keepdim"), [(None, False), (None, True), (1, False), (-1, True)])
def test_quantile_matches_torch_for_a_tensor_of_levels(name, interpolation, dim, keepdim):
    # levels whose ranks q (n - 1) are not whole, so finite differences see no jump
    check_op(
        lambda x, q: getattr(bai, name)(x, q, dim, keepdim, interpolation=interpolation),
        (3, 6, 2),
        constant([0.13, 0.55, 0.88], requires_grad=True),
        torch_fn=lambda x, q: getattr(torch, name)(x, q, dim, keepdim, interpolation=interpolation),
    )


@pytest.mark.parametrize("name", ["quantile", "nanquantile"])
@pytest.mark.parametrize("interpolation", INTERPOLATIONS)
def test_quantile_with_nan_matches_torch(name, interpolation):
    for q in (0.0, 0.3, 0.5, 1.0):
        check_op(
            lambda x, q=q: getattr(bai, name)(x, q, 1, interpolation=interpolation),
            constant(TIES_AND_NAN, requires_grad=True),
            torch_fn=lambda x, q=q: getattr(torch, name)(x, q, 1, interpolation=interpolation),
            gradcheck=False,
        )


def test_quantile_nearest_rounds_ranks_half_to_even_and_infinities_as_torch():
    levels = np.array([0.125, 0.375, 0.5, 0.625, 0.875])
    for interpolation in INTERPOLATIONS:
        ours, theirs = both(
            lambda m, x, q, mode=interpolation: m.quantile(x, q, interpolation=mode),
            np.arange(5.0),
            levels,
        )
        assert_same(ours, theirs)
    for values in ([1.0, inf], [-inf, inf]):
        assert_same(*both(lambda m, x, q: m.quantile(x, q), values, [0.0, 0.5, 1.0]))


def test_quantile_of_0d_and_with_no_levels():
    assert_same(*both(lambda m, x: m.quantile(x, 0.3, 0, True), np.array(3.0)))
    assert_same(*both(lambda m, x: m.quantile(x, 0.3), np.array(3.0)))
    assert_same(*both(lambda m, x, q: m.quantile(x, q, 0), np.ones((3, 2)), np.zeros(0)))
    assert_same(*both(lambda m, x: m.nanquantile(x, 0.3), [nan, nan]))


def test_quantile_refuses_what_torch_refuses():
    x = bai.tensor(np.ones((3, 2)))
    with pytest.raises(ArgumentError, match=r"^\[quantile\] q must be in \[0, 1\]"):
        bai.quantile(x, 1.5)
    with pytest.raises(DTypeError, match=r"^\[quantile\] input must have a floating-point"):
        bai.quantile(bai.tensor([1, 2]), 0.5)
    with pytest.raises(DTypeError, match=r"^\[nanquantile\] q has dtype float32"):
        bai.nanquantile(x, bai.tensor(np.array([0.5], np.float32)))
    with pytest.raises(ShapeError, match=r"^\[quantile\] q must be a number or a 1-D tensor"):
        bai.quantile(x, bai.tensor(np.array([[0.5]])))
    with pytest.raises(ShapeError, match=r"^\[quantile\] the input is empty"):
        bai.quantile(bai.tensor(np.zeros((0, 2))), 0.5)
    with pytest.raises(ArgumentError, match=r"^\[quantile\] interpolation must be one of"):
        bai.quantile(x, 0.5, interpolation="cubic")


def test_quantile_documentation_examples():
    torch = bai
    a = torch.arange(4.0)
    assert torch.quantile(a, 0.6, interpolation="linear").item() == pytest.approx(1.8)
    assert torch.quantile(a, 0.6, interpolation="lower").item() == 1.0
    assert torch.quantile(a, 0.6, interpolation="higher").item() == 2.0
    assert torch.quantile(a, 0.6, interpolation="midpoint").item() == 1.5
    assert torch.quantile(a, 0.6, interpolation="nearest").item() == 2.0
    assert torch.quantile(a, 0.4, interpolation="nearest").item() == 1.0
    a = torch.tensor([[0.0795, -1.2117, 0.9765], [1.1707, 0.6706, 0.4884]])
    q = torch.tensor([0.25, 0.5, 0.75])
    assert torch.quantile(a, q, dim=1, keepdim=True).shape == (3, 2, 1)
    np.testing.assert_allclose(
        torch.quantile(a, q, dim=1, keepdim=True).numpy()[:, :, 0],
        [[-0.5661, 0.5795], [0.0795, 0.6706], [0.5280, 0.9206]],
        atol=1e-4,
    )
    t = torch.tensor([float("nan"), 1, 2])
    assert np.isnan(t.quantile(0.5).item())
    assert t.nanquantile(0.5).item() == 1.5
    t = torch.tensor([[float("nan"), float("nan")], [1, 2]])
    np.testing.assert_array_equal(t.nanquantile(0.5, dim=0).numpy(), [1.0, 2.0])
    np.testing.assert_array_equal(t.nanquantile(0.5, dim=1).numpy(), [np.nan, 1.5])


# ----- nansum / nanmean / var_mean / std_mean -------------------------------------------------


@pytest.mark.parametrize("name", ["nansum", "nanmean"])
@pytest.mark.parametrize(
    ("dim", "keepdim"), [(None, False), (1, False), ((0, 1), True), (-1, True)]
)
def test_nansum_and_nanmean_match_torch(name, dim, keepdim):
    # the rows with some NaN (PyTorch's gradient of an all-NaN mean is NaN, ours 0: see below)
    check_op(
        lambda x: getattr(bai, name)(x, dim, keepdim),
        constant(TIES_AND_NAN[:2], requires_grad=True),
        torch_fn=lambda x: getattr(torch, name)(x, dim, keepdim),
        gradcheck=False,
    )
    check_op(lambda x: getattr(x, name)(dim, keepdim), (3, 4), torch_fn=None)


def test_nanmean_of_only_nan_is_nan_with_a_zero_gradient():
    x = bai.tensor(TIES_AND_NAN, requires_grad=True)
    means = bai.nanmean(x, 1)
    assert_same(means, torch.nanmean(torch.tensor(TIES_AND_NAN), 1))
    means.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy()[2], 0.0)


def test_nansum_dtypes_match_torch():
    assert_same(*both(lambda m, x: m.nansum(x), np.array([1, 2], np.int32)))
    assert_same(*both(lambda m, x: m.nansum(x), np.array([True, True])))
    assert_same(*both(lambda m, x: m.nansum(x, dtype=m.float64), np.array([1.0, nan], np.float32)))
    assert_same(*both(lambda m, x: m.nanmean(x, 0, dtype=m.float64), np.ones((2, 3), np.float32)))
    assert_same(*both(lambda m, x: m.nanmean(x), np.zeros(0)))
    with pytest.raises(DTypeError, match=r"^\[nanmean\] input must have a floating-point"):
        bai.nanmean(bai.tensor([1, 2]))


def test_nansum_and_nanmean_documentation_examples():
    torch = bai
    a = torch.tensor([1.0, 2.0, float("nan"), 4.0])
    assert torch.nansum(a).item() == 7.0
    assert torch.nansum(torch.tensor([1.0, float("nan")])).item() == 1.0
    a = torch.tensor([[1, 2], [3.0, float("nan")]])
    assert torch.nansum(a).item() == 6.0
    np.testing.assert_array_equal(torch.nansum(a, dim=0).numpy(), [4.0, 2.0])
    np.testing.assert_array_equal(torch.nansum(a, dim=1).numpy(), [3.0, 3.0])
    x = torch.tensor([[math.nan, 1, 2], [1, 2, 3]])
    assert np.isnan(x.mean().item())
    assert x.nanmean().item() == pytest.approx(1.8)
    np.testing.assert_allclose(x.nanmean(dim=0).numpy(), [1.0, 1.5, 2.5])
    assert np.isnan(torch.tensor([math.nan]).nanmean().item())


@pytest.mark.parametrize("name", ["var_mean", "std_mean"])
def test_var_mean_and_std_mean_match_torch(name):
    check_op(lambda x: getattr(bai, name)(x), (3, 4), torch_fn=lambda x: getattr(torch, name)(x))
    check_op(
        lambda x: getattr(bai, name)(x, (0, 2), correction=0, keepdim=True),
        (3, 4, 5),
        torch_fn=lambda x: getattr(torch, name)(x, (0, 2), correction=0, keepdim=True),
    )
    check_op(
        lambda x: getattr(bai, name)(x, 1, False, True),
        (3, 4),
        torch_fn=lambda x: getattr(torch, name)(x, 1, False, True),
    )
    check_op(
        lambda x: getattr(bai, name)(x, False),
        (3, 4),
        torch_fn=lambda x: getattr(torch, name)(x, False),
    )


def test_var_mean_and_std_mean_documentation_examples():
    torch = bai
    a = torch.tensor(
        [[ 0.2035,  1.2959,  1.8101, -0.4644],
         [ 1.5027, -0.3270,  0.5905,  0.6538],
         [-1.5745,  1.3330, -0.5596, -0.6548],
         [ 0.1264, -0.5080,  1.6420,  0.1992]]
    )  # fmt: skip
    variance, average = torch.var_mean(a, dim=0, keepdim=True)
    np.testing.assert_allclose(variance.numpy(), [[1.5926, 1.0056, 1.2005, 0.3646]], atol=1e-4)
    np.testing.assert_allclose(average.numpy(), [[0.0645, 0.4485, 0.8707, -0.0665]], atol=1e-4)
    deviation, average = torch.std_mean(a, dim=0, keepdim=True)
    np.testing.assert_allclose(deviation.numpy(), [[1.2620, 1.0028, 1.0957, 0.6038]], atol=1e-4)


# ----- logcumsumexp / cummax / cummin ---------------------------------------------------------


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_logcumsumexp_matches_torch(dim):
    check_op(
        lambda x: bai.logcumsumexp(x, dim),
        (5, 11, 3),
        torch_fn=lambda x: torch.logcumsumexp(x, dim),
        gradgrad=True,
    )


def test_logcumsumexp_is_stable_for_large_and_infinite_values():
    scale = np.random.default_rng(2).standard_normal((3, 9)) * 500
    check_op(
        lambda x: x.logcumsumexp(1),
        constant(scale, requires_grad=True),
        torch_fn=lambda x: x.logcumsumexp(1),
        gradcheck=False,
    )
    with np.errstate(over="ignore"):
        values = [-1000.0, 0.0, -inf, 1000.0, inf, nan, 1.0]
        assert_same(*both(lambda m, x: m.logcumsumexp(x, 0), values))
    assert_same(*both(lambda m, x: m.logcumsumexp(x, 0), [-inf, -inf, 1.0]))
    assert_same(*both(lambda m, x: m.logcumsumexp(x, 0), np.array(2.0)))
    assert_same(*both(lambda m, x: m.logcumsumexp(x, 0), np.zeros(0)))
    with pytest.raises(DTypeError, match=r"^\[logcumsumexp\]"):
        bai.logcumsumexp(bai.tensor([1, 2]), 0)


@pytest.mark.parametrize("name", ["cummax", "cummin"])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_cummax_and_cummin_match_torch(name, dim):
    check_op(
        lambda x: getattr(bai, name)(x, dim),
        (4, 9, 3),
        torch_fn=lambda x: getattr(torch, name)(x, dim),
    )


@pytest.mark.parametrize("name", ["cummax", "cummin"])
def test_cummax_and_cummin_take_the_last_tie_and_the_last_nan_as_torch(name):
    values = np.array([1.0, 3.0, 3.0, 2.0, 3.0, 1.0, 1.0, nan, 5.0, nan, 1.0])
    check_op(
        lambda x: getattr(bai, name)(x, 0),
        constant(values, requires_grad=True),
        torch_fn=lambda x: getattr(torch, name)(x, 0),
        gradcheck=False,
    )
    ties = np.random.default_rng(3).integers(0, 3, size=(5, 17))
    assert_same(*both(lambda m, x: getattr(m, name)(x, 1), ties))
    assert_same(*both(lambda m, x: getattr(m, name)(x, 0), ties.astype(np.float64)))
    assert_same(*both(lambda m, x: getattr(m, name)(x, 0), [True, False, True, True]))
    assert_same(*both(lambda m, x: getattr(m, name)(x, 0), np.array(2.0)))
    assert_same(*both(lambda m, x: getattr(m, name)(x, 0), np.zeros((0, 3))))
    assert_same(*both(lambda m, x: getattr(m, name)(x, 1), np.zeros((0, 3))))


def test_cummax_and_cummin_documentation_examples():
    torch = bai
    a = torch.tensor([-0.3449, -1.5447, 0.0685, -1.5104, -1.1706, 0.2259, 1.4696, -1.3284,
                      1.9946, -0.8209])  # fmt: skip
    values, indices = torch.cummax(a, dim=0)
    np.testing.assert_allclose(
        values.numpy(),
        [-0.3449, -0.3449, 0.0685, 0.0685, 0.0685, 0.2259, 1.4696, 1.4696, 1.9946, 1.9946],
        rtol=1e-6,
    )
    np.testing.assert_array_equal(indices.numpy(), [0, 0, 2, 2, 2, 5, 6, 6, 8, 8])
    a = torch.tensor([-0.2284, -0.6628, 0.0975, 0.2680, -1.3298, -0.4220, -0.3885, 1.1762,
                      0.9165, 1.6684])  # fmt: skip
    values, indices = torch.cummin(a, dim=0)
    np.testing.assert_array_equal(indices.numpy(), [0, 1, 1, 1, 4, 4, 4, 4, 4, 4])
    assert values.numpy()[-1] == pytest.approx(-1.3298)


# ----- cdist / dist ---------------------------------------------------------------------------

ORDERS = [0, 0.5, 1, 2, 3, inf]


@pytest.mark.parametrize("p", ORDERS)
def test_cdist_matches_torch(p):
    check_op(
        lambda a, b: bai.cdist(a, b, p),
        (2, 4, 3),
        (5, 3),
        torch_fn=lambda a, b: torch.cdist(a, b, p),
    )
    check_op(
        lambda a, b: bai.cdist(a, b, p),
        (3, 1, 2, 4),
        (2, 5, 4),
        torch_fn=lambda a, b: torch.cdist(a, b, p),
        gradcheck=False,
    )


@pytest.mark.parametrize("p", ORDERS)
@pytest.mark.parametrize(
    "mode",
    [
        "use_mm_for_euclid_dist_if_necessary",
        "use_mm_for_euclid_dist",
        "donot_use_mm_for_euclid_dist",
    ],
)
def test_cdist_gradient_at_zero_distance_and_at_ties_matches_torch(p, mode):
    # rows 0 of each are equal (distance 0); [3, 4] - [1, 2] ties in |difference| (inf-norm)
    check_op(
        lambda a, b: bai.cdist(a, b, p, mode),
        constant([[1.0, 2.0], [3.0, 4.0]], requires_grad=True),
        constant([[1.0, 2.0], [0.0, 0.0], [1.0, 4.0]], requires_grad=True),
        torch_fn=lambda a, b: torch.cdist(a, b, p, mode),
        gradcheck=False,
    )


def test_cdist_of_many_points_uses_the_matmul_form_like_torch():
    check_op(lambda a, b: bai.cdist(a, b), (30, 3), (4, 3), torch_fn=lambda a, b: torch.cdist(a, b))
    check_op(
        lambda a, b: bai.cdist(a, b, compute_mode="donot_use_mm_for_euclid_dist"),
        (30, 3),
        (4, 3),
        torch_fn=lambda a, b: torch.cdist(a, b, compute_mode="donot_use_mm_for_euclid_dist"),
    )


def test_cdist_of_empty_inputs_and_errors():
    assert_same(*both(lambda m, a, b: m.cdist(a, b), np.zeros((0, 2)), np.zeros((3, 2))))
    for p in (0, 1, 2, inf):
        assert_same(
            *both(lambda m, a, b, p=p: m.cdist(a, b, p), np.zeros((2, 0)), np.zeros((3, 0)))
        )
    with pytest.raises(ShapeError, match=r"^\[cdist\] x1 must have at least 2 dimensions"):
        bai.cdist(bai.zeros(3), bai.zeros(3))
    with pytest.raises(ShapeError, match=r"^\[cdist\] .* same number of features"):
        bai.cdist(bai.zeros(2, 3), bai.zeros(2, 4))
    with pytest.raises(ArgumentError, match=r"^\[cdist\] p must be a number >= 0"):
        bai.cdist(bai.zeros(2, 3), bai.zeros(2, 3), -1)
    with pytest.raises(DTypeError, match=r"^\[cdist\] x1 must have a floating-point dtype"):
        bai.cdist(bai.tensor([[1, 2]]), bai.tensor([[1, 2]]))
    with pytest.raises(ArgumentError, match=r"^\[cdist\] 'fast' is not a compute_mode"):
        bai.cdist(bai.zeros(2, 3), bai.zeros(2, 3), compute_mode="fast")


def test_cdist_documentation_example():
    torch = bai
    a = torch.tensor([[0.9041, 0.0196], [-0.3108, -2.4423], [-0.4821, 1.059]])
    b = torch.tensor([[-2.1763, -0.4713], [-0.6986, 1.3702]])
    np.testing.assert_allclose(
        torch.cdist(a, b, p=2).numpy(),
        [[3.1193, 2.0959], [2.7138, 3.8322], [2.2830, 0.3791]],
        atol=1e-4,
    )


@pytest.mark.parametrize("p", [0, 1, 2, 3.5, inf, -inf])
def test_dist_matches_torch(p):
    # PyTorch's 0-norm has no gradient at all (autograd.grad refuses it), ours is 0
    check_op(
        lambda a, b: bai.dist(a, b, p),
        (4, 3),
        (3,),
        torch_fn=lambda a, b: torch.dist(a, b, p),
        grad=p != 0,
    )
    check_op(
        lambda a, b: a.dist(b, p),
        (2, 3),
        (2, 3),
        torch_fn=lambda a, b: a.dist(b, p),
        grad=p != 0,
    )


def test_dist_gradient_at_ties_and_zero_distance_matches_torch():
    for p in (2, inf, 0.5):
        check_op(
            lambda a, b, p=p: bai.dist(a, b, p),
            constant([[1.0, 2.0], [1.0, 0.0]], requires_grad=True),
            constant([[3.0, 4.0], [1.0, 0.0]], requires_grad=True),
            torch_fn=lambda a, b, p=p: torch.dist(a, b, p),
            gradcheck=False,
        )
    check_op(
        lambda a, b: bai.dist(a, b),
        constant([1.0, 2.0], requires_grad=True),
        constant([1.0, 2.0], requires_grad=True),
        torch_fn=torch.dist,
        gradcheck=False,
    )


def test_dist_documentation_example():
    torch = bai
    x = torch.tensor([-1.5393, -0.8675, 0.5916, 1.6321])
    y = torch.tensor([0.0967, -1.0511, 0.6295, 0.8360])
    assert torch.dist(x, y, 3.5).item() == pytest.approx(1.6727, abs=1e-3)
    assert torch.dist(x, y, 3).item() == pytest.approx(1.6973, abs=1e-3)
    assert torch.dist(x, y, 0).item() == 4.0
    assert torch.dist(x, y, 1).item() == pytest.approx(2.6537, abs=1e-3)


# ----- histc / bincount -----------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_histc_matches_torch(dtype):
    values = np.random.default_rng(4).standard_normal(1000).astype(dtype)
    for bins, low, high in ((7, 0, 0), (10, -1, 1), (3, 0.5, 0.5), (100, -3, 2)):
        assert_same(*both(lambda m, x, r=(bins, low, high): m.histc(x, *r), values), exact=True)
    assert_same(*both(lambda m, x: x.histc(4), np.array([2.0, 2.0])), exact=True)
    assert_same(*both(lambda m, x: m.histc(x, 4), np.zeros(0, dtype)), exact=True)
    assert_same(*both(lambda m, x: m.histc(x, 3, 1, 1), np.array([1.0, 2.0], dtype)), exact=True)
    assert_same(*both(lambda m, x: m.histc(x, 4, 0, 3), np.array([1.0, nan, 2.0], dtype)))


def test_histc_has_no_gradient_and_refuses_what_torch_refuses():
    x = bai.tensor([1.0, 2.0], requires_grad=True)
    assert not bai.histc(x, 3).requires_grad
    with pytest.raises(ArgumentError, match=r"^\[histc\] the range \[nan, nan\] is not finite"):
        bai.histc(bai.tensor([1.0, nan]), 4)
    with pytest.raises(ArgumentError, match=r"^\[histc\] max \(1.0\) must be larger than min"):
        bai.histc(x, 4, 3, 1)
    with pytest.raises(ArgumentError, match=r"^\[histc\] bins must be a positive int"):
        bai.histc(x, 0)
    with pytest.raises(DTypeError, match=r"^\[histc\] input must have a floating-point"):
        bai.histc(bai.tensor([1, 2]), 4)


def test_histc_documentation_example():
    torch = bai
    counts = torch.histc(torch.tensor([1.0, 2, 1]), bins=4, min=0, max=3)
    np.testing.assert_array_equal(counts.numpy(), [0.0, 2.0, 1.0, 0.0])


def test_bincount_matches_torch():
    values = np.random.default_rng(5).integers(0, 6, 20)
    weights = np.random.default_rng(6).standard_normal(20)
    assert_same(*both(lambda m, x: m.bincount(x), values))
    assert_same(*both(lambda m, x: m.bincount(x, minlength=9), values))
    assert_same(*both(lambda m, x, w: m.bincount(x, w), values, weights))
    assert_same(*both(lambda m, x, w: x.bincount(w), values, weights.astype(np.float32)))
    assert_same(*both(lambda m, x, w: m.bincount(x, w), values, np.arange(20)))  # -> float64
    assert_same(*both(lambda m, x: m.bincount(x), values.astype(np.int32)))
    assert_same(*both(lambda m, x: m.bincount(x), np.zeros(0, np.int64)))
    assert_same(*both(lambda m, x: m.bincount(x, minlength=3), np.zeros(0, np.int64)))


def test_bincount_is_differentiable_in_the_weights():
    # PyTorch has no derivative for bincount; the weighted counts are sums of the weights, so
    # each weight gets the gradient of its value's count
    weights = bai.tensor([1.0, 2.0, 3.0], requires_grad=True)
    counts = bai.bincount(bai.tensor([1, 3, 1]), weights)
    (counts * bai.tensor([10.0, 20.0, 30.0, 40.0])).sum().backward()
    np.testing.assert_array_equal(weights.grad.numpy(), [20.0, 40.0, 20.0])


def test_bincount_refuses_what_torch_refuses():
    with pytest.raises(ArgumentError, match=r"^\[bincount\] input must be non-negative"):
        bai.bincount(bai.tensor([1, -1]))
    with pytest.raises(DTypeError, match=r"^\[bincount\] input must be a 1-D tensor of integers"):
        bai.bincount(bai.tensor([[1]]))
    with pytest.raises(DTypeError, match=r"^\[bincount\] input must be a 1-D tensor of integers"):
        bai.bincount(bai.tensor([1.0]))
    with pytest.raises(ShapeError, match=r"^\[bincount\] weights shaped \(1,\) must match"):
        bai.bincount(bai.tensor([1, 2]), bai.tensor([1.0]))
    with pytest.raises(ArgumentError, match=r"^\[bincount\] minlength must be an int >= 0"):
        bai.bincount(bai.tensor([1, 2]), minlength=-1)


def test_bincount_documentation_example():
    torch = bai
    input = torch.tensor([4, 3, 6, 3, 4])  # noqa: A001 - the documentation's name
    weights = torch.linspace(0, 1, steps=5)
    np.testing.assert_array_equal(torch.bincount(input).numpy(), [0, 0, 0, 2, 2, 0, 1])
    np.testing.assert_allclose(input.bincount(weights).numpy(), [0.0, 0.0, 0.0, 1.0, 1.0, 0.0, 0.5])


# ----- frozen graphs --------------------------------------------------------------------------

LEVELS = np.array([0.2, 0.5, 0.85], dtype=np.float32)

FROZEN_CASES = {
    "median": lambda x: bai.median(x, 1),
    "median of all": lambda x: bai.median(x),
    "nanmedian": lambda x: bai.nanmedian(x, 0, True),
    "quantile": lambda x: bai.quantile(x, bai.tensor(LEVELS), 1, True),
    "nanquantile": lambda x: bai.nanquantile(x, 0.3, 0, interpolation="nearest"),
    "nansum": lambda x: bai.nansum(x, 1),
    "logcumsumexp": lambda x: bai.logcumsumexp(x, 1),
    "cummax": lambda x: bai.cummax(x, 1),
    "cummin": lambda x: bai.cummin(x, 0),
    "cdist": lambda x: bai.cdist(x, x[:3] * 2),
    "cdist inf": lambda x: bai.cdist(x, x[:3] * 2, inf),
}


@pytest.mark.parametrize("name", list(FROZEN_CASES))
def test_a_frozen_graph_gives_eager_results_on_a_new_input(name):
    function = FROZEN_CASES[name]
    frozen = freeze(function, [bai.TensorSpec((5, 7), "float32")])
    fresh = np.random.default_rng(7).standard_normal((5, 7)).astype(np.float32)
    fresh[1, 3] = np.nan
    expected = function(bai.tensor(fresh))
    got = frozen(fresh)
    for mine, reference in zip(
        got if isinstance(got, (tuple, list)) else (got,),
        expected if isinstance(expected, tuple) else (expected,),
    ):
        np.testing.assert_array_equal(mine.numpy(), reference.numpy())


def test_a_frozen_scan_needs_a_fixed_length():
    with pytest.raises(GraphError, match=r"\[logcumsumexp\] the number of scan steps"):
        freeze(lambda x: bai.logcumsumexp(x, 1), [bai.TensorSpec((4, None), "float32")])
    frozen = freeze(lambda x: bai.cummax(x, 1).values, [bai.TensorSpec((None, 6), "float32")])
    fresh = np.random.default_rng(8).standard_normal((9, 6)).astype(np.float32)
    np.testing.assert_array_equal(frozen(fresh).numpy(), np.maximum.accumulate(fresh, axis=1))


@pytest.mark.parametrize("name", ["histc", "bincount"])
def test_counts_computed_from_the_values_are_refused_when_frozen(name):
    counts = {
        "histc": lambda x: bai.histc(x, 4, -1, 1),
        "bincount": lambda x: bai.bincount((x > 0).long().reshape(-1)),
    }[name]
    with pytest.raises(GraphError, match="depend on the input values"):
        freeze(counts, [bai.TensorSpec((5, 7), "float32")])


def test_integer_inputs_keep_their_dtype():
    check_op(lambda x: bai.cummax(x, 0), integers(4, 3), torch_fn=lambda x: torch.cummax(x, 0))
    check_op(lambda x: bai.median(x, 1), integers(4, 3), torch_fn=lambda x: torch.median(x, 1))

"""cov, corrcoef, trapezoid, trapz, cumulative_trapezoid, vander, mode, msort, ger and
combinations against PyTorch: values, dtypes and shapes in float32, float64 and integers, the
edge cases (empty, 0-d, single observations, weights, NaN, ties), gradients in float64, the
errors PyTorch raises, the Tensor methods and frozen graphs."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import buildingai as bai
from buildingai.errors import ArgumentError, DTypeError, ShapeError
from buildingai.functions import numeric_tools
from buildingai.graph import freeze
from buildingai.graph.graph import GraphError

from ..helpers import check_op, constant, positive, torch

nan = math.nan
RNG = np.random.default_rng(0)


def assert_same(ours, theirs) -> None:
    """Values, shape and dtype equal to PyTorch's (of each tensor of a tuple); floats to the
    precision of their dtype."""
    if isinstance(theirs, tuple):
        assert isinstance(ours, tuple) and len(ours) == len(theirs)
        for mine, reference in zip(ours, theirs):
            assert_same(mine, reference)
        return
    expected = theirs.detach().numpy()
    got = ours.numpy()
    assert got.shape == expected.shape and got.dtype == expected.dtype, (got, expected)
    if expected.dtype.kind in "biu":
        np.testing.assert_array_equal(got, expected)
    else:
        tolerance = 1e-5 if expected.dtype == np.float32 else 1e-12
        np.testing.assert_allclose(got, expected, rtol=tolerance, atol=tolerance)


def both(function, *arrays):
    """``function(library, *tensors)`` for BuildingAI and for PyTorch, on the same arrays, with
    the warnings each gives."""
    results = []
    for library in (bai, torch):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            result = function(library, *(library.tensor(np.asarray(a)) for a in arrays))
        results.append((result, [w for w in caught if issubclass(w.category, UserWarning)]))
    (ours, our_warnings), (theirs, their_warnings) = results
    assert bool(our_warnings) == bool(their_warnings), (our_warnings, their_warnings)
    return ours, theirs


def same_as_torch(function, *arrays) -> None:
    assert_same(*both(function, *arrays))


def refused_like_torch(function, *arrays, error=ArgumentError, match: str) -> None:
    """PyTorch raises for these arguments, and BuildingAI raises ``error`` naming the op."""
    with pytest.raises((RuntimeError, TypeError, IndexError, ValueError)):
        function(torch, *(torch.tensor(np.asarray(a)) for a in arrays))
    with pytest.raises(error, match=match):
        function(bai, *(bai.tensor(np.asarray(a)) for a in arrays))


FLOATS = [np.float32, np.float64]
OBSERVATIONS = RNG.standard_normal((3, 6))
SAMPLES = RNG.standard_normal((2, 5))

# ----- cov ------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize(
    "shape", [(3, 6), (6,), (1, 6), (), (1, 1), (0, 3), (2, 0), (1, 0), (0,), (2, 1)]
)
@pytest.mark.parametrize("correction", [1, 0, 2, -1, 7])
def test_cov_matches_torch(dtype, shape, correction):
    values = RNG.standard_normal(shape).astype(dtype)
    # at or below 0 degrees of freedom both warn and divide by 0
    same_as_torch(lambda m, x: m.cov(x, correction=correction), values)


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.int8, np.uint8])
def test_cov_and_corrcoef_of_integers_give_the_default_float(dtype):
    values = RNG.integers(0, 9, size=(3, 7)).astype(dtype)
    same_as_torch(lambda m, x: m.cov(x), values)
    same_as_torch(lambda m, x: m.corrcoef(x), values)
    same_as_torch(lambda m, x, w: m.cov(x, fweights=w), values, np.arange(7))


FWEIGHTS = np.array([1, 2, 0, 3, 1, 4])
AWEIGHTS = np.array([0.5, 1.0, 2.0, 0.0, 1.5, 0.25])


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("correction", [1, 0, 3, 9, 11, 12])
@pytest.mark.parametrize("which", ["fweights", "aweights", "both"])
def test_cov_with_weights_matches_torch(dtype, correction, which):
    # 9 and 11 take the degrees of freedom of each weighting to 0 or below: inf and NaN
    def weighted(m, x, f, a):
        chosen = {"fweights": f, "aweights": a}
        keywords = chosen if which == "both" else {which: chosen[which]}
        return m.cov(x, correction=correction, **keywords)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # PyTorch warns where the weighted degrees are <= 0
        ours, theirs = (
            weighted(
                m,
                m.tensor(OBSERVATIONS.astype(dtype)),
                m.tensor(FWEIGHTS),
                m.tensor(AWEIGHTS.astype(dtype)),
            )
            for m in (bai, torch)
        )
    assert_same(ours, theirs)


def test_cov_weights_promote_the_input_and_a_single_weight_may_be_0d():
    inputs = (OBSERVATIONS.astype(np.float32), AWEIGHTS)  # float32 input, float64 weights
    same_as_torch(lambda m, x, a: m.cov(x, aweights=a), *inputs)
    same_as_torch(lambda m, x, a: m.cov(x, aweights=a), OBSERVATIONS, AWEIGHTS.astype(np.float32))
    same_as_torch(lambda m, x, a: m.cov(x, aweights=a), np.array([[1, 2, 4]]), AWEIGHTS[:3])
    ours = bai.cov(bai.tensor(OBSERVATIONS[:, :1]), fweights=bai.tensor(3))
    np.testing.assert_array_equal(ours.numpy(), np.zeros((3, 3)))


def test_cov_propagates_nan():
    values = OBSERVATIONS.copy()
    values[1, 2] = nan
    same_as_torch(lambda m, x: m.cov(x), values)


def test_cov_gradients_match_torch():
    check_op(lambda x: bai.cov(x), (3, 6), torch_fn=torch.cov, gradgrad=True)
    check_op(
        lambda x: bai.cov(x, correction=0), (6,), torch_fn=lambda x: torch.cov(x, correction=0)
    )
    check_op(
        lambda x, a: bai.cov(x, aweights=a, correction=2),
        (3, 6),
        positive(6),
        torch_fn=lambda x, a: torch.cov(x, aweights=a, correction=2),
        gradgrad=True,
    )
    check_op(
        lambda x, f, a: bai.cov(x, fweights=f, aweights=a),
        (2, 6),
        constant(FWEIGHTS),
        positive(6),
        torch_fn=lambda x, f, a: torch.cov(x, fweights=f, aweights=a),
    )


COV_ERRORS = {
    "3-D input": (lambda m, x: m.cov(x), np.zeros((2, 2, 2)), ShapeError, "at most 2 dim"),
    "bool input": (lambda m, x: m.cov(x), np.ones((2, 3), bool), DTypeError, "bool"),
    "float correction": (lambda m, x: m.cov(x, correction=0.5), OBSERVATIONS, TypeError, "int"),
    "bool correction": (lambda m, x: m.cov(x, correction=True), OBSERVATIONS, TypeError, "int"),
}


@pytest.mark.parametrize("case", sorted(COV_ERRORS))
def test_cov_refuses_the_inputs_torch_refuses(case):
    function, values, error, match = COV_ERRORS[case]
    refused_like_torch(function, values, error=error, match=r"^\[cov\] .*" + match)


# keyword, weights, the error and its message for the observations (3, 6)
WEIGHT_ERRORS = {
    "float fweights": ("fweights", AWEIGHTS, DTypeError, "integral"),
    "bool fweights": ("fweights", AWEIGHTS > 0, DTypeError, "integral"),
    "integer aweights": ("aweights", FWEIGHTS, DTypeError, "floating"),
    "2-D fweights": ("fweights", FWEIGHTS[None], ShapeError, "at most 1 dimension"),
    "short aweights": ("aweights", AWEIGHTS[:4], ShapeError, "4 elements"),
    "negative fweights": ("fweights", -FWEIGHTS, ArgumentError, "non-negative; got -1"),
    "negative aweights": ("aweights", -AWEIGHTS, ArgumentError, "non-negative; got -0.5"),
    "NaN aweights": ("aweights", AWEIGHTS * nan, ArgumentError, "non-negative; got nan"),
    "zero weights": ("aweights", 0 * AWEIGHTS, ArgumentError, "sum of the weights"),
}


@pytest.mark.parametrize("case", sorted(WEIGHT_ERRORS))
def test_cov_refuses_the_weights_torch_refuses(case):
    keyword, weights, error, match = WEIGHT_ERRORS[case]
    refused_like_torch(lambda m, x, w: m.cov(x, **{keyword: w}), OBSERVATIONS, weights,
                       error=error, match=r"^\[cov\] .*" + match)  # fmt: skip


def test_cov_refuses_weights_of_no_observations():
    refused_like_torch(lambda m, x, w: m.cov(x, fweights=w), np.zeros((2, 0)), np.zeros(0, int),
                       error=ArgumentError, match=r"^\[cov\] the sum of the weights")  # fmt: skip


# ----- corrcoef -------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape", [(3, 6), (6,), (1, 6), (), (0, 3), (2, 0), (2, 1)])
def test_corrcoef_matches_torch(dtype, shape):
    same_as_torch(lambda m, x: m.corrcoef(x), RNG.standard_normal(shape).astype(dtype))


def test_corrcoef_of_constant_and_perfectly_correlated_variables():
    same_as_torch(lambda m, x: m.corrcoef(x), np.array([[1.0, 1, 1], [1, 2, 3], [2, 4, 6]]))
    same_as_torch(lambda m, x: m.corrcoef(x), np.array([1.0, 1, 1]))  # 0 / 0
    same_as_torch(lambda m, x: m.corrcoef(x), np.array([[1.0, 2, 3], [2, 4, 6.000001]]))


def test_corrcoef_gradients_match_torch():
    check_op(lambda x: bai.corrcoef(x), (3, 6), torch_fn=torch.corrcoef, gradgrad=True)
    # a variable with itself: r = 1 exactly, where the clip still passes the gradient
    tied = np.array([[1.0, 2.0, 4.0, 3.0], [1.0, 2.0, 4.0, 3.0]])
    check_op(lambda x: bai.corrcoef(x), constant(tied, True), torch_fn=torch.corrcoef)


def test_corrcoef_refuses_three_dimensions():
    refused_like_torch(
        lambda m, x: m.corrcoef(x),
        np.zeros((2, 2, 2)),
        error=ShapeError,
        match=r"^\[corrcoef\] expects at most 2 dimensions",
    )


# ----- trapezoid, trapz, cumulative_trapezoid -------------------------------------------------

INTEGRALS = ["trapezoid", "trapz", "cumulative_trapezoid"]


@pytest.mark.parametrize("name", INTEGRALS)
@pytest.mark.parametrize("dtype", FLOATS + [np.int64, np.int8])
@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("spacing", [None, 2, 0.3, -1.5])
def test_integrals_with_a_constant_spacing_match_torch(name, dtype, dim, spacing):
    samples = (SAMPLES * 4).astype(dtype)
    keywords = {"dim": dim} if spacing is None else {"dim": dim, "dx": spacing}
    same_as_torch(lambda m, y: getattr(m, name)(y, **keywords), samples)


POSITIONS = {
    "1-D": np.array([0.0, 0.5, 2.0, 2.5, 4.0]),
    "like y": RNG.standard_normal((2, 5)),
    "broadcast rows": RNG.standard_normal((1, 5)),
    "one spacing per row": RNG.standard_normal((2, 2)),  # (2, 1) spacings broadcast
    "integers": np.array([0, 1, 3, 4, 8]),
}


@pytest.mark.parametrize("name", INTEGRALS)
@pytest.mark.parametrize("positions", sorted(POSITIONS))
@pytest.mark.parametrize("dtype", FLOATS + [np.int64])
def test_integrals_at_sample_positions_match_torch(name, positions, dtype):
    samples = (SAMPLES * 4).astype(dtype)
    same_as_torch(lambda m, y, x: getattr(m, name)(y, x), samples, POSITIONS[positions])
    same_as_torch(lambda m, y, x: getattr(m, name)(y, x=x), samples, POSITIONS[positions])


@pytest.mark.parametrize("name", INTEGRALS)
def test_integrals_along_the_first_dim_and_of_mixed_dtypes(name):
    positions = np.array([0.0, 3.0])
    same_as_torch(lambda m, y, x: getattr(m, name)(y, x, dim=0), SAMPLES, positions)
    samples32 = SAMPLES.astype(np.float32)
    same_as_torch(lambda m, y, x: getattr(m, name)(y, x), samples32, POSITIONS["1-D"])
    same_as_torch(lambda m, y, x: getattr(m, name)(y, x), SAMPLES, POSITIONS["1-D"].astype("f4"))
    # a 0-d tensor dx is a number
    ours = getattr(bai, name)(bai.tensor(SAMPLES), dx=bai.tensor(0.5))
    assert_same(ours, getattr(torch, name)(torch.tensor(SAMPLES), dx=torch.tensor(0.5)))


@pytest.mark.parametrize("name", INTEGRALS)
@pytest.mark.parametrize("shape", [(2, 0), (2, 1), (0, 3), (1,)])
@pytest.mark.parametrize("dtype", [np.float64, np.int64])
def test_integrals_of_no_or_one_sample(name, shape, dtype):
    samples = np.ones(shape, dtype)
    same_as_torch(lambda m, y: getattr(m, name)(y), samples)
    same_as_torch(lambda m, y, x: getattr(m, name)(y, x), samples, np.arange(shape[-1]))


@pytest.mark.parametrize("name", INTEGRALS)
def test_integrals_propagate_nan(name):
    samples = SAMPLES.copy()
    samples[0, 2] = nan
    same_as_torch(lambda m, y: getattr(m, name)(y), samples)
    same_as_torch(lambda m, y, x: getattr(m, name)(y, x), samples, POSITIONS["1-D"])


@pytest.mark.parametrize("name", INTEGRALS)
def test_integral_gradients_match_torch(name):
    ours, theirs = getattr(bai, name), getattr(torch, name)
    check_op(lambda y: ours(y, dim=0), (4, 3), torch_fn=lambda y: theirs(y, dim=0), gradgrad=True)
    check_op(lambda y: ours(y, dx=0.7), (3, 4), torch_fn=lambda y: theirs(y, dx=0.7))
    check_op(lambda y, x: ours(y, x), (3, 4), (4,), torch_fn=theirs, gradgrad=True)
    check_op(lambda y, x: ours(y, x), (3, 4), (3, 4), torch_fn=theirs)


def test_trapezoid_and_trapz_documentation_examples():
    torch_ = bai  # PyTorch's examples with only the import changed
    y = torch_.tensor([1, 5, 10])
    assert torch_.trapezoid(y).item() == 10.5
    assert torch_.trapezoid(y / 2).item() == 5.25
    assert torch_.trapezoid(y, dx=2).item() == 21.0
    x = torch_.tensor([1, 3, 6])
    assert torch_.trapezoid(y, x).item() == 28.5
    assert torch_.trapz(y, x).item() == 28.5
    np.testing.assert_array_equal(torch_.cumulative_trapezoid(y, x).numpy(), [6.0, 28.5])
    y = torch_.arange(9).reshape(3, 3)
    np.testing.assert_array_equal(torch_.trapezoid(y).numpy(), [2.0, 8.0, 14.0])
    np.testing.assert_array_equal(torch_.trapezoid(y, dim=0).numpy(), [6.0, 8.0, 10.0])
    np.testing.assert_array_equal(torch_.cumulative_trapezoid(y)[:, 1].numpy(), [2.0, 8.0, 14.0])


INTEGRAL_ERRORS = {
    "0-d samples": (lambda f, y, x: f(y.sum()), ShapeError, "at least 1 dimension"),
    "dim out of range": (lambda f, y, x: f(y, dim=2), ShapeError, "axis 2 is out of range"),
    "bool samples": (lambda f, y, x: f(y > 0), DTypeError, "bool"),
    "bool positions": (lambda f, y, x: f(y, x > 0), DTypeError, "bool"),
    "wrong count of positions": (lambda f, y, x: f(y, x[:3]), ShapeError, "3 sample positions"),
    "positions of more dimensions": (lambda f, y, x: f(y, x[None, None]), ShapeError, "broadcast"),
    "0-d positions": (lambda f, y, x: f(y, x[0]), ShapeError, "broadcast"),
    "x and dx": (lambda f, y, x: f(y, x, dx=2), TypeError, "not both"),
    "positions as a list": (lambda f, y, x: f(y, [0.0, 1, 2, 3, 4]), TypeError, "tensor"),
    "complex dx": (lambda f, y, x: f(y, dx=1j), TypeError, "real number"),
}


@pytest.mark.parametrize("name", INTEGRALS)
@pytest.mark.parametrize("case", sorted(INTEGRAL_ERRORS))
def test_integrals_refuse_what_torch_refuses(name, case):
    call, error, match = INTEGRAL_ERRORS[case]
    if name == "cumulative_trapezoid" and case == "0-d samples":
        match = "at least 1 dimension"
    refused_like_torch(
        lambda m, y, x: call(getattr(m, name), y, x),
        SAMPLES,
        POSITIONS["1-D"],
        error=error,
        match=rf"^\[{name}\] .*{match}",
    )


def test_a_bool_dx_is_refused_by_trapezoid_and_read_as_1_by_trapz():
    for name in ("trapezoid", "cumulative_trapezoid"):
        refused_like_torch(
            lambda m, y, n=name: getattr(m, n)(y, dx=True),
            SAMPLES,
            error=TypeError,
            match=rf"^\[{name}\] dx must be a real number",
        )
    same_as_torch(lambda m, y: m.trapz(y, dx=True), SAMPLES)


# ----- vander ---------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", FLOATS + [np.int64, np.int8, np.bool_])
@pytest.mark.parametrize("columns", [None, 0, 1, 2, 5])
@pytest.mark.parametrize("increasing", [False, True])
def test_vander_matches_torch(dtype, columns, increasing):
    values = np.array([1.5, -2.0, 0.0, 3.0]).astype(dtype)
    same_as_torch(lambda m, x: m.vander(x, columns, increasing), values)
    same_as_torch(lambda m, x: m.vander(x, N=columns, increasing=increasing), values[:0])


def test_vander_of_nan_and_large_integers():
    same_as_torch(lambda m, x: m.vander(x), np.array([1.0, nan, 0.0]))
    same_as_torch(lambda m, x: m.vander(x, 6), np.array([100000, 2, 3]))  # int64 wraps around


def test_vander_gradients_match_torch_linalg_vander():
    # torch.vander writes its powers in place and cannot be differentiated (its backward
    # raises); torch.linalg.vander computes the same powers, increasing, with running products
    def decreasing(x, columns=None):
        return torch.linalg.vander(x, N=columns).flip(-1)

    check_op(lambda x: bai.vander(x), (4,), torch_fn=decreasing, gradgrad=True)
    check_op(lambda x: bai.vander(x, 3, True), (5,), torch_fn=lambda x: torch.linalg.vander(x, N=3))
    with_zero = constant(np.array([0.0, 1.5, -2.0]), requires_grad=True)
    check_op(lambda x: bai.vander(x, 4), with_zero, torch_fn=lambda x: decreasing(x, 4))


@pytest.mark.parametrize(
    "call, error, match",
    [
        (lambda m, x: m.vander(x[None]), ShapeError, "1-D"),
        (lambda m, x: m.vander(x[0]), ShapeError, "1-D"),
        (lambda m, x: m.vander(x, -1), ArgumentError, "non-negative"),
        (lambda m, x: m.vander(x, 2.0), TypeError, "int"),
        (lambda m, x: m.vander(x, True), TypeError, "int"),
    ],
)
def test_vander_refuses_what_torch_refuses(call, error, match):
    refused_like_torch(call, np.array([1.0, 2.0]), error=error, match=rf"^\[vander\] .*{match}")


# ----- mode -----------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", FLOATS + [np.int64, np.int8])
@pytest.mark.parametrize("dim", [0, 1, -1, 2])
@pytest.mark.parametrize("keepdim", [False, True])
def test_mode_with_ties_matches_torch_values_and_indices(dtype, dim, keepdim):
    # few distinct values in rows of up to 16: ties between counts and within each value
    values = RNG.integers(-2, 3, size=(4, 9, 16)).astype(dtype)
    same_as_torch(lambda m, x: m.mode(x, dim, keepdim), values)


def test_mode_picks_the_smallest_most_frequent_value_at_its_last_occurrence():
    for row in ([3, 1, 3, 1, 2], [1, 2, 2, 1, 1, 2], [4, 3, 2, 1], [2, 1, 2, 1], [0.0, -0.0]):
        same_as_torch(lambda m, x: m.mode(x), np.array(row))
    ours = bai.mode(bai.tensor([3, 1, 3, 1, 2]))
    assert type(ours) is bai.functions.reduce.ValuesIndices
    assert (ours.values.item(), ours.indices.item()) == (1, 3)


def test_mode_of_bool_0d_and_empty_inputs():
    same_as_torch(lambda m, x: m.mode(x), np.array([True, False, True]))
    same_as_torch(lambda m, x: m.mode(x), np.array(2.5))
    same_as_torch(lambda m, x: m.mode(x, 0, True), np.array(2.5))
    same_as_torch(lambda m, x: m.mode(x, 0), np.zeros((2, 0)))
    same_as_torch(lambda m, x: m.mode(x, 1, True), np.zeros((0, 3)))


def test_mode_with_nan_where_torch_is_well_defined():
    # each NaN counts once: a value seen twice beats them, and an all-NaN row gives its first
    for row in ([nan, 1.0, 1.0, nan, nan], [nan, nan, 2.0, 2.0], [nan, nan, nan]):
        same_as_torch(lambda m, x: m.mode(x), np.array(row))


def test_mode_of_long_rows_gives_torch_value_at_the_last_occurrence():
    # PyTorch's CPU sort of rows over 16 elements is unstable: its index is some occurrence
    values = RNG.integers(0, 6, size=(20, 40)).astype(np.float64)
    ours, theirs = both(lambda m, x: m.mode(x, 1), values)
    np.testing.assert_array_equal(ours.values.numpy(), theirs.values.numpy())
    ours_index, their_index = ours.indices.numpy(), theirs.indices.numpy()
    rows = np.arange(20)
    np.testing.assert_array_equal(values[rows, their_index], values[rows, ours_index])
    for row, index in zip(values, ours_index):
        assert index == np.flatnonzero(row == row[index])[-1]


def test_mode_gradients_match_torch():
    ties = constant(RNG.integers(0, 3, size=(3, 8)).astype(np.float64), requires_grad=True)
    check_op(lambda x: bai.mode(x, 1), ties, torch_fn=lambda x: torch.mode(x, 1), gradcheck=False)
    check_op(
        lambda x: bai.mode(x, 0, True).values,
        (3, 4),
        gradgrad=True,
        torch_fn=lambda x: torch.mode(x, 0, True).values,
    )


def test_mode_refuses_what_torch_refuses():
    refused_like_torch(
        lambda m, x: m.mode(x, 0),
        np.zeros((0, 3)),
        error=ShapeError,
        match=r"^\[mode\] cannot reduce dimension 0 of size 0",
    )
    refused_like_torch(
        lambda m, x: m.mode(x, 2),
        np.zeros((2, 3)),
        error=ShapeError,
        match=r"^\[mode\] axis 2 is out of range",
    )
    refused_like_torch(
        lambda m, x: m.mode(x, 1),
        np.array(1.0),
        error=ShapeError,
        match=r"^\[mode\] axis 1 is out of range for a 0-d",
    )


# ----- msort, ger -----------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", FLOATS + [np.int64, np.bool_])
@pytest.mark.parametrize("shape", [(5, 3), (6,), (), (0, 2)])
def test_msort_matches_torch(dtype, shape):
    values = (RNG.standard_normal(shape) * 3).astype(dtype)
    same_as_torch(lambda m, x: m.msort(x), values)
    same_as_torch(lambda m, x: x.msort(), values)


def test_msort_puts_nan_last_and_passes_gradients_back():
    same_as_torch(lambda m, x: m.msort(x), np.array([[2.0, nan], [nan, 1.0], [0.5, 0.0]]))
    check_op(lambda x: bai.msort(x), (5, 3), torch_fn=torch.msort, gradgrad=True)


@pytest.mark.parametrize(
    "left, right",
    [
        (np.array([1.0, -2.0]), np.array([0.5, 1.0, 3.0])),
        (np.array([1, 2], np.float32), np.array([3.0, 4.0], np.float32)),
        (np.array([1, 2]), np.array([1.0, 2.0, 3.0], np.float32)),
        (np.array([1, 2], np.int8), np.array([3, 4], np.int16)),
        (np.array([True]), np.array([True, False])),
        (np.zeros(0), np.array([1.0, 2.0])),
    ],
)
def test_ger_matches_torch(left, right):
    same_as_torch(lambda m, a, b: m.ger(a, b), left, right)
    same_as_torch(lambda m, a, b: a.ger(b), left, right)


def test_ger_gradients_and_errors_match_torch():
    check_op(lambda a, b: bai.ger(a, b), (3,), (4,), torch_fn=torch.ger, gradgrad=True)
    for left, right in ((np.ones((1, 2)), np.ones(3)), (np.ones(2), np.array(1.0))):
        refused_like_torch(
            lambda m, a, b: m.ger(a, b),
            left,
            right,
            error=ShapeError,
            match=r"^\[ger\] (input|vec2) must be a 1-D tensor",
        )


# ----- combinations ---------------------------------------------------------------------------


@pytest.mark.parametrize("r", [0, 1, 2, 3, 4, 5])
@pytest.mark.parametrize("with_replacement", [False, True])
@pytest.mark.parametrize("dtype", FLOATS + [np.int64, np.bool_])
def test_combinations_match_torch(r, with_replacement, dtype):
    values = np.array([3.0, -1.0, 2.0, 0.0]).astype(dtype)
    same_as_torch(lambda m, x: m.combinations(x, r, with_replacement), values)
    same_as_torch(
        lambda m, x: m.combinations(x, r=r, with_replacement=with_replacement), values[:1]
    )
    same_as_torch(lambda m, x: m.combinations(x, r, with_replacement), values[:0])


def test_combinations_gradients_match_torch():
    check_op(lambda x: bai.combinations(x, 3), (5,), torch_fn=lambda x: torch.combinations(x, 3))
    check_op(
        lambda x: bai.combinations(x, 2, True),
        (4,),
        gradgrad=True,
        torch_fn=lambda x: torch.combinations(x, 2, True),
    )


@pytest.mark.parametrize(
    "call, error, match",
    [
        (lambda m, x: m.combinations(x[None]), ShapeError, "expects a 1-D tensor"),
        (lambda m, x: m.combinations(x[0]), ShapeError, "expects a 1-D tensor"),
        (lambda m, x: m.combinations(x, -1), ArgumentError, "non-negative"),
        (lambda m, x: m.combinations(x, 2.0), TypeError, "int"),
    ],
)
def test_combinations_refuse_what_torch_refuses(call, error, match):
    refused_like_torch(
        call, np.array([1.0, 2.0, 3.0]), error=error, match=rf"^\[combinations\] .*{match}"
    )


# ----- Tensor methods -------------------------------------------------------------------------


@pytest.mark.parametrize("name", numeric_tools.__all__)
def test_each_function_is_a_tensor_method_exactly_where_torch_has_one(name):
    assert callable(getattr(bai, name))
    assert hasattr(bai.Tensor, name) == hasattr(torch.Tensor, name), name


def test_methods_match_torch():
    same_as_torch(lambda m, x: x.cov(correction=0), OBSERVATIONS)
    same_as_torch(lambda m, x, w: x.cov(aweights=w), OBSERVATIONS, AWEIGHTS)
    same_as_torch(lambda m, x: x.corrcoef(), OBSERVATIONS)
    same_as_torch(lambda m, x: x.mode(0, True), np.array([[1, 2], [1, 3], [2, 3]]))
    same_as_torch(lambda m, x: x.mode(), np.array([[1, 2, 2], [1, 3, 3]]))


# ----- frozen graphs --------------------------------------------------------------------------


def test_compiled_cov_and_trapezoid_give_the_eager_result():
    runs = []

    def summary(samples, positions):
        runs.append(1)
        return (
            bai.cov(samples),
            bai.corrcoef(samples),
            bai.trapezoid(samples, positions),
            bai.trapezoid(samples, dx=0.5, dim=0),
            bai.cumulative_trapezoid(samples, positions),
        )

    calls = []
    for seed in range(3):
        values = np.random.default_rng(seed).standard_normal((3, 6)).astype(np.float32)
        calls.append((bai.tensor(values), bai.tensor(np.cumsum(values[0] ** 2))))
    expected = [summary(*call) for call in calls]
    runs.clear()
    with bai.no_grad():
        compiled = bai.compile(summary, fullgraph=True)
        for call, wanted in zip(calls, expected):
            for got, reference in zip(compiled(*call), wanted):
                np.testing.assert_array_equal(got.numpy(), reference.numpy())
    assert len(runs) == 1  # traced once; the graph served every call


def test_compiled_weighted_cov_checks_the_weights_of_every_call():
    def weighted(samples, counts, importances):
        return bai.cov(samples, fweights=counts, aweights=importances)

    samples = bai.tensor(OBSERVATIONS)
    good = (bai.tensor(FWEIGHTS), bai.tensor(AWEIGHTS))
    with bai.no_grad():
        compiled = bai.compile(weighted, fullgraph=True)
        np.testing.assert_array_equal(
            compiled(samples, *good).numpy(), weighted(samples, *good).numpy()
        )
        with pytest.raises(ArgumentError, match=r"\[cov\] fweights must be non-negative"):
            compiled(samples, bai.tensor(-FWEIGHTS), good[1])
        with pytest.raises(ArgumentError, match=r"\[cov\] the sum of the weights must be"):
            compiled(samples, good[0], bai.tensor(0 * AWEIGHTS))


FROZEN_CASES = {
    "mode": lambda x: bai.mode(x, 1),
    "msort": lambda x: bai.msort(x),
    "vander": lambda x: bai.vander(x[0], 4),
    "combinations": lambda x: bai.combinations(x[1], 3, True),
    "ger": lambda x: bai.ger(x[0], x[1]),
}


@pytest.mark.parametrize("name", sorted(FROZEN_CASES))
def test_a_frozen_graph_gives_eager_results_on_a_new_input(name):
    function = FROZEN_CASES[name]
    frozen = freeze(function, [bai.TensorSpec((4, 7), "float32")])
    fresh = np.random.default_rng(7).integers(0, 3, size=(4, 7)).astype(np.float32)
    expected = function(bai.tensor(fresh))
    for mine, reference in zip(
        frozen(fresh) if isinstance(expected, tuple) else (frozen(fresh),),
        expected if isinstance(expected, tuple) else (expected,),
    ):
        np.testing.assert_array_equal(mine.numpy(), reference.numpy())


def test_freezing_refuses_a_symbolic_length_where_the_work_depends_on_it():
    with pytest.raises(GraphError, match=r"\[combinations\] the number of combinations"):
        freeze(lambda x: bai.combinations(x, 2), [bai.TensorSpec((None,), "float32")])
    with pytest.raises(GraphError, match=r"\[mode\] counting equal values scans dim 1"):
        freeze(lambda x: bai.mode(x, 1), [bai.TensorSpec((3, None), "float32")])
    frozen = freeze(lambda x: bai.mode(x, 1), [bai.TensorSpec((None, 5), "float32")])
    fresh = np.random.default_rng(8).integers(0, 2, size=(9, 5)).astype(np.float32)
    np.testing.assert_array_equal(
        frozen(fresh)[1].numpy(), bai.mode(bai.tensor(fresh), 1).indices.numpy()
    )

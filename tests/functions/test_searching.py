"""unique, unique_consecutive, nonzero, argwhere, isin, searchsorted, bucketize, masked_select
and nan_to_num against PyTorch: values, int64 positions, inverse indices and counts, NaN, ties,
empty and 0-d inputs, gradients of the differentiable ones, errors, PyTorch's documentation
examples, and the refusal to freeze results that depend on the input values."""

from __future__ import annotations

import math

import numpy as np
import pytest

import buildingai as bai
from buildingai.errors import ArgumentError, DTypeError, IndexingError, ShapeError
from buildingai.graph import freeze
from buildingai.graph.graph import GraphError

from ..helpers import check_op, constant, mask, torch

nan, inf = math.nan, math.inf


def assert_same(ours, theirs) -> None:
    """Values (NaN in the same places), shape and dtype equal to PyTorch's, for a tensor or a
    tuple of them."""
    if isinstance(theirs, tuple):
        assert isinstance(ours, tuple) and len(ours) == len(theirs)
        for mine, reference in zip(ours, theirs):
            assert_same(mine, reference)
        return
    expected = theirs.detach().numpy()
    got = ours.numpy()
    assert got.shape == expected.shape and got.dtype == expected.dtype, (got, expected)
    np.testing.assert_array_equal(got, expected)


def both(function, *values):
    """``function(library, *tensors)`` for BuildingAI and PyTorch; numbers pass unchanged."""

    def convert(make, value):
        return value if isinstance(value, (int, float)) else make(np.asarray(value))

    ours = function(bai, *(convert(bai.tensor, v) for v in values))
    theirs = function(torch, *(convert(torch.tensor, v) for v in values))
    return ours, theirs


WITH_NAN = [3.0, 1.0, nan, 2.0, 1.0, nan, 3.0, -0.0, 0.0]

# ----- unique / unique_consecutive ------------------------------------------------------------


@pytest.mark.parametrize("name", ["unique", "unique_consecutive"])
@pytest.mark.parametrize("return_inverse", [False, True])
@pytest.mark.parametrize("return_counts", [False, True])
def test_unique_matches_torch(name, return_inverse, return_counts):
    flags = {"return_inverse": return_inverse, "return_counts": return_counts}
    values = np.random.default_rng(0).integers(0, 3, size=(6, 4))
    assert_same(*both(lambda m, x: getattr(m, name)(x, **flags), WITH_NAN))
    assert_same(*both(lambda m, x: getattr(m, name)(x, **flags), values))
    for dim in (0, 1, -1):
        assert_same(*both(lambda m, x, d=dim: getattr(m, name)(x, dim=d, **flags), values))
    assert_same(*both(lambda m, x: getattr(x, name)(**flags), values.astype(np.float64)))


@pytest.mark.parametrize("name", ["unique", "unique_consecutive"])
def test_unique_of_edge_cases_matches_torch(name):
    flags = {"return_inverse": True, "return_counts": True}
    assert_same(*both(lambda m, x: getattr(m, name)(x, **flags), np.array(3.0)))
    assert_same(*both(lambda m, x: getattr(m, name)(x, **flags), np.zeros((0, 3))))
    assert_same(*both(lambda m, x: getattr(m, name)(x, dim=0, **flags), np.zeros((0, 3))))
    assert_same(*both(lambda m, x: getattr(m, name)(x), [True, False, True, True]))
    # each NaN row stays apart, as NaN never equals itself
    assert_same(*both(lambda m, x: getattr(m, name)(x, dim=0), [[nan, 1.0], [nan, 1.0]]))
    with pytest.raises(ShapeError, match=rf"^\[{name}\] the slices along dim 0 .* are empty"):
        getattr(bai, name)(bai.zeros(2, 0), dim=0)


def test_unique_is_sorted_whatever_sorted_says_as_torch():
    values = [3, 1, 2, 1, 5, 3]
    assert_same(*both(lambda m, x: m.unique(x, sorted=False, return_inverse=True), values))


def test_unique_has_no_gradient():
    x = bai.tensor([1.0, 2.0, 1.0], requires_grad=True)
    assert not bai.unique(x).requires_grad


def test_unique_documentation_examples():
    torch = bai
    output = torch.unique(torch.tensor([1, 3, 2, 3], dtype=torch.long))
    np.testing.assert_array_equal(output.numpy(), [1, 2, 3])
    output, inverse_indices = torch.unique(
        torch.tensor([1, 3, 2, 3], dtype=torch.long), sorted=True, return_inverse=True
    )
    np.testing.assert_array_equal(output.numpy(), [1, 2, 3])
    np.testing.assert_array_equal(inverse_indices.numpy(), [0, 2, 1, 2])
    output, inverse_indices = torch.unique(
        torch.tensor([[1, 3], [2, 3]], dtype=torch.long), sorted=True, return_inverse=True
    )
    np.testing.assert_array_equal(output.numpy(), [1, 2, 3])
    np.testing.assert_array_equal(inverse_indices.numpy(), [[0, 2], [1, 2]])
    x = torch.tensor([[1, 3, 2, 3], [1, 2, 1, 2]], dtype=torch.long)
    np.testing.assert_array_equal(torch.unique(x, dim=0).numpy(), [[1, 2, 1, 2], [1, 3, 2, 3]])
    np.testing.assert_array_equal(torch.unique(x, dim=1).numpy(), [[1, 2, 3], [1, 1, 2]])
    np.testing.assert_array_equal(torch.unique(x).numpy(), [1, 2, 3])
    a = torch.tensor([
        [[1, 1, 0, 0], [1, 1, 0, 0], [0, 0, 1, 1]],
        [[0, 0, 1, 1], [0, 0, 1, 1], [1, 1, 1, 1]],
        [[1, 1, 0, 0], [1, 1, 0, 0], [0, 0, 1, 1]],
    ])  # fmt: skip
    a_unique_dim0 = torch.unique(a, dim=0)
    np.testing.assert_array_equal(a_unique_dim0.numpy(), a.numpy()[[1, 0]])
    assert (a_unique_dim0[0, :, :] == a[1, :, :]).all()
    assert (a_unique_dim0[1, :, :] == a[0, :, :]).all()
    np.testing.assert_array_equal(
        torch.unique(a, dim=1).numpy(),
        [[[0, 0, 1, 1], [1, 1, 0, 0]], [[1, 1, 1, 1], [0, 0, 1, 1]], [[0, 0, 1, 1], [1, 1, 0, 0]]],
    )
    np.testing.assert_array_equal(
        torch.unique(a, dim=2).numpy(),
        [[[0, 1], [0, 1], [1, 0]], [[1, 0], [1, 0], [1, 1]], [[0, 1], [0, 1], [1, 0]]],
    )


def test_unique_consecutive_documentation_examples():
    torch = bai
    x = torch.tensor([1, 1, 2, 2, 3, 1, 1, 2])
    output = torch.unique_consecutive(x)
    np.testing.assert_array_equal(output.numpy(), [1, 2, 3, 1, 2])
    output, inverse_indices = torch.unique_consecutive(x, return_inverse=True)
    np.testing.assert_array_equal(inverse_indices.numpy(), [0, 0, 1, 1, 2, 3, 3, 4])
    output, counts = torch.unique_consecutive(x, return_counts=True)
    np.testing.assert_array_equal(counts.numpy(), [2, 2, 1, 2, 1])


# ----- nonzero / argwhere ---------------------------------------------------------------------

NONZERO_CASES = [
    np.array(5),
    np.array(0),
    np.zeros((2, 0, 3)),
    np.array([0.0, nan, -0.0, 1.0]),
    np.random.default_rng(1).integers(0, 2, size=(3, 4, 2)),
    np.array([[True, False], [False, True]]),
]


@pytest.mark.parametrize("case", range(len(NONZERO_CASES)))
def test_nonzero_and_argwhere_match_torch(case):
    values = NONZERO_CASES[case]
    assert_same(*both(lambda m, x: m.nonzero(x), values))
    assert_same(*both(lambda m, x: m.nonzero(x, as_tuple=True), values))
    assert_same(*both(lambda m, x: x.argwhere(), values))


def test_nonzero_and_argwhere_documentation_examples():
    torch = bai
    np.testing.assert_array_equal(
        torch.nonzero(torch.tensor([1, 1, 1, 0, 1])).numpy(), [[0], [1], [2], [4]]
    )
    diagonal = torch.tensor([[0.6, 0.0, 0.0, 0.0],
                             [0.0, 0.4, 0.0, 0.0],
                             [0.0, 0.0, 1.2, 0.0],
                             [0.0, 0.0, 0.0, -0.4]])  # fmt: skip
    np.testing.assert_array_equal(torch.nonzero(diagonal).numpy(), [[0, 0], [1, 1], [2, 2], [3, 3]])
    (positions,) = torch.nonzero(torch.tensor([1, 1, 1, 0, 1]), as_tuple=True)
    np.testing.assert_array_equal(positions.numpy(), [0, 1, 2, 4])
    rows, columns = torch.nonzero(diagonal, as_tuple=True)
    np.testing.assert_array_equal(rows.numpy(), [0, 1, 2, 3])
    np.testing.assert_array_equal(columns.numpy(), [0, 1, 2, 3])
    (positions,) = torch.nonzero(torch.tensor(5), as_tuple=True)
    np.testing.assert_array_equal(positions.numpy(), [0])
    t = torch.tensor([1, 0, 1])
    np.testing.assert_array_equal(torch.argwhere(t).numpy(), [[0], [2]])
    t = torch.tensor([[1, 0, 1], [0, 1, 1]])
    np.testing.assert_array_equal(torch.argwhere(t).numpy(), [[0, 0], [0, 2], [1, 1], [1, 2]])


# ----- isin -----------------------------------------------------------------------------------


def test_isin_matches_torch():
    values = np.random.default_rng(2).integers(0, 10, size=(4, 5))
    for invert in (False, True):
        assert_same(*both(lambda m, a, b, i=invert: m.isin(a, b, invert=i), values, [2, 3, 9]))
    assert_same(*both(lambda m, a, b: m.isin(a, b), [1.0, nan, 2.0], [nan, 1.0]))  # NaN: no match
    assert_same(*both(lambda m, b: m.isin(3, b), [1, 3]))
    assert_same(*both(lambda m, a: m.isin(a, 3), [1, 3]))
    assert_same(*both(lambda m, a, b: m.isin(a, b), [1, 2], [1.5, 2.0]))  # a common dtype
    assert_same(*both(lambda m, a, b: m.isin(a, b, assume_unique=True), [4, 1, 2], [2, 5]))
    assert_same(*both(lambda m, a, b: m.isin(a, b), np.zeros((0, 2)), [1.0]))


def test_isin_refuses_two_numbers_and_bool():
    with pytest.raises(ArgumentError, match=r"^\[isin\] elements and test_elements may not"):
        bai.isin(3, 3)
    with pytest.raises(DTypeError, match=r"^\[isin\] does not take bool tensors"):
        bai.isin(bai.tensor([True, False]), bai.tensor([1]))


def test_isin_documentation_example():
    torch = bai
    found = torch.isin(torch.tensor([[1, 2], [3, 4]]), torch.tensor([2, 3]))
    np.testing.assert_array_equal(found.numpy(), [[False, True], [True, False]])


# ----- searchsorted / bucketize ---------------------------------------------------------------


@pytest.mark.parametrize("side", [{}, {"right": True}, {"side": "right"}, {"side": "left"}])
def test_searchsorted_matches_torch_on_random_sorted_rows(side):
    rng = np.random.default_rng(3)
    for length in (1, 2, 5, 16, 33):
        sequence = np.sort(rng.integers(0, 10, size=(3, length)), axis=1).astype(np.float64)
        values = rng.integers(-1, 11, size=(3, 7)).astype(np.float64)
        assert_same(*both(lambda m, s, v: m.searchsorted(s, v, **side), sequence, values))
        assert_same(*both(lambda m, s, v: m.searchsorted(s, v, **side), sequence[0], values))


def test_searchsorted_follows_torch_with_nan_numbers_sorters_and_dtypes():
    sequence = [1.0, 3.0, 5.0, 7.0, 9.0]
    values = [[3.0, 6.0, 9.0], [3.0, 6.0, nan]]
    assert_same(*both(lambda m, s, v: m.searchsorted(s, v), sequence, values))
    assert_same(*both(lambda m, s, v: m.searchsorted(s, v, right=True), sequence, values))
    # a NaN in the sequence (sorted last) and NaN values land where PyTorch's search puts them
    assert_same(*both(lambda m, s, v: m.searchsorted(s, v), [1.0, 2.0, nan], [nan, 1.5, 3.0]))
    assert_same(*both(lambda m, s: m.searchsorted(s, 4.0), sequence))
    assert_same(*both(lambda m, s: m.searchsorted(s, 4, out_int32=True), sequence))
    assert_same(*both(lambda m, s, v: m.searchsorted(s, v), [1, 2, 3], [1.5, 2.5]))
    assert_same(*both(lambda m, s, v: m.searchsorted(s, v), np.zeros(0), [1.5, 2.5]))
    assert_same(*both(lambda m, s, v: m.searchsorted(s, v), [1.0, 2.0], np.zeros(0)))
    assert_same(
        *both(lambda m, s, v, o: m.searchsorted(s, v, sorter=o), [5, 1, 3], [2, 4], [1, 2, 0])
    )
    unsorted = np.array([[5.0, 1.0, 3.0], [2.0, 9.0, 4.0]])
    order = np.argsort(unsorted, axis=1)
    assert_same(
        *both(
            lambda m, s, v, o: m.searchsorted(s, v, side="right", sorter=o),
            unsorted,
            [[3.0, 0.0], [4.0, 10.0]],
            order,
        )
    )


def test_searchsorted_refuses_what_torch_refuses():
    sequence = bai.tensor([[1, 3, 5, 7, 9], [2, 4, 6, 8, 10]])
    with pytest.raises(ArgumentError, match=r"^\[searchsorted\] side='left' and right=True"):
        bai.searchsorted(sequence, bai.tensor([[3], [3]]), right=True, side="left")
    with pytest.raises(ArgumentError, match=r"^\[searchsorted\] side must be 'left' or 'right'"):
        bai.searchsorted(sequence, bai.tensor([[3], [3]]), side="middle")
    with pytest.raises(ShapeError, match=r"^\[searchsorted\] a sorted_sequence shaped \(2, 5\)"):
        bai.searchsorted(sequence, bai.tensor([3, 6, 9]))
    with pytest.raises(ShapeError, match=r"^\[searchsorted\] sorter shaped \(3,\)"):
        bai.searchsorted(sequence, bai.tensor([[3], [3]]), sorter=bai.tensor([0, 1, 2]))
    with pytest.raises(IndexingError, match=r"^\[searchsorted\] sorter holds positions"):
        bai.searchsorted(bai.tensor([1, 2]), bai.tensor([1]), sorter=bai.tensor([0, 2]))
    with pytest.raises(ShapeError, match=r"^\[bucketize\] boundaries must be 1-D"):
        bai.bucketize(bai.tensor([1]), sequence)


def test_searchsorted_documentation_examples():
    torch = bai
    sorted_sequence = torch.tensor([[1, 3, 5, 7, 9], [2, 4, 6, 8, 10]])
    values = torch.tensor([[3, 6, 9], [3, 6, 9]])
    np.testing.assert_array_equal(
        torch.searchsorted(sorted_sequence, values).numpy(), [[1, 3, 4], [1, 2, 4]]
    )
    np.testing.assert_array_equal(
        torch.searchsorted(sorted_sequence, values, side="right").numpy(), [[2, 3, 5], [1, 3, 4]]
    )
    sorted_sequence_1d = torch.tensor([1, 3, 5, 7, 9])
    np.testing.assert_array_equal(
        torch.searchsorted(sorted_sequence_1d, values).numpy(), [[1, 3, 4], [1, 3, 4]]
    )


def test_bucketize_matches_torch_and_its_documentation_example():
    boundaries = [1.0, 3.0, 5.0, 7.0, 9.0]
    values = np.random.default_rng(4).integers(0, 11, size=(4, 6)).astype(np.float64)
    for right in (False, True):
        assert_same(*both(lambda m, v, b, r=right: m.bucketize(v, b, right=r), values, boundaries))
    assert_same(*both(lambda m, b: m.bucketize(3, b), [1, 3, 5]))
    assert_same(*both(lambda m, v, b: m.bucketize(v, b, out_int32=True), values, boundaries))
    torch = bai
    boundaries = torch.tensor([1, 3, 5, 7, 9])
    v = torch.tensor([[3, 6, 9], [3, 6, 9]])
    np.testing.assert_array_equal(torch.bucketize(v, boundaries).numpy(), [[1, 3, 4], [1, 3, 4]])
    np.testing.assert_array_equal(
        torch.bucketize(v, boundaries, right=True).numpy(), [[2, 3, 5], [2, 3, 5]]
    )


# ----- masked_select --------------------------------------------------------------------------


def test_masked_select_matches_torch_with_gradients():
    check_op(lambda x, m: bai.masked_select(x, m), (3, 4), mask(3, 4), torch_fn=torch.masked_select)
    check_op(lambda x, m: x.masked_select(m), (2, 3), mask(4, 1, 3), torch_fn=None)
    check_op(
        lambda x, m: x.masked_select(m),
        (4, 1, 3),
        mask(
            3,
        ),
        torch_fn=None,
    )
    check_op(
        lambda x, m: bai.masked_select(x, m),
        constant(3.0, requires_grad=True),
        constant(True),
        torch_fn=torch.masked_select,
    )


def test_masked_select_refuses_what_torch_refuses():
    x = bai.tensor(np.arange(6.0).reshape(2, 3))
    with pytest.raises(DTypeError, match=r"^\[masked_select\] the mask must be boolean"):
        bai.masked_select(x, bai.tensor([1, 0, 1]))
    with pytest.raises(ShapeError, match=r"^\[masked_select\] mask of shape \(2,\)"):
        bai.masked_select(x, bai.tensor([True, False]))


def test_masked_select_documentation_example():
    torch = bai
    x = torch.tensor([[0.3552, -2.3825, -0.8297, 0.3477],
                      [-1.2035, 1.2252, 0.5002, 0.6248],
                      [0.1307, -2.0608, 0.1244, 2.0139]])  # fmt: skip
    mask = x.ge(0.5)
    np.testing.assert_array_equal(
        mask.numpy(),
        [[False, False, False, False], [False, True, True, True], [False, False, False, True]],
    )
    np.testing.assert_allclose(
        torch.masked_select(x, mask).numpy(), [1.2252, 0.5002, 0.6248, 2.0139], rtol=1e-6
    )


# ----- nan_to_num -----------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_nan_to_num_matches_torch(dtype):
    values = np.array([nan, inf, -inf, 3.14, -2.0], dtype=dtype)
    assert_same(*both(lambda m, x: m.nan_to_num(x), values))
    assert_same(*both(lambda m, x: x.nan_to_num(nan=2.0, posinf=1.0), values))
    assert_same(*both(lambda m, x: m.nan_to_num(x, 1.0, 1e40, -1e40), values))  # beyond: inf


def test_nan_to_num_gradient_is_zero_at_replaced_elements_as_torch():
    check_op(
        lambda x: bai.nan_to_num(x, 1.5, 2.5, -2.5),
        constant([nan, inf, -inf, 0.75, -0.5], requires_grad=True),
        torch_fn=lambda x: torch.nan_to_num(x, 1.5, 2.5, -2.5),
        gradcheck=False,
    )
    check_op(lambda x: x.nan_to_num(), (3, 4), torch_fn=lambda x: x.nan_to_num())


def test_nan_to_num_copies_integers_and_bools():
    assert_same(*both(lambda m, x: m.nan_to_num(x, nan=3.5), [1, 2]))
    assert_same(*both(lambda m, x: m.nan_to_num(x), [True, False]))


def test_nan_to_num_documentation_example():
    torch = bai
    x = torch.tensor([float("nan"), float("inf"), -float("inf"), 3.14])
    big = np.finfo(np.float32).max
    np.testing.assert_array_equal(torch.nan_to_num(x).numpy(), np.float32([0.0, big, -big, 3.14]))
    np.testing.assert_array_equal(
        torch.nan_to_num(x, nan=2.0).numpy(), np.float32([2.0, big, -big, 3.14])
    )
    np.testing.assert_array_equal(
        torch.nan_to_num(x, nan=2.0, posinf=1.0).numpy(), np.float32([2.0, 1.0, -big, 3.14])
    )


# ----- frozen graphs --------------------------------------------------------------------------

VALUE_DEPENDENT = {
    "unique": lambda x: bai.unique(x),
    "unique_consecutive": lambda x: bai.unique_consecutive(x, return_counts=True),
    "nonzero": lambda x: bai.nonzero(x > 0),
    "nonzero as tuple": lambda x: bai.nonzero(x > 0, as_tuple=True),
    "argwhere": lambda x: bai.argwhere(x > 0),
    "masked_select": lambda x: bai.masked_select(x, x > 0),
    "isin": lambda x: bai.isin(x, bai.tensor(np.float32([0.0, 1.0]))),
    "searchsorted": lambda x: bai.searchsorted(bai.tensor(np.float32([-1, 0, 1])), x),
    "bucketize": lambda x: bai.bucketize(x, bai.tensor(np.float32([-1, 0, 1]))),
}


@pytest.mark.parametrize("name", list(VALUE_DEPENDENT))
def test_results_computed_from_the_values_are_refused_when_frozen(name):
    with pytest.raises(GraphError, match="depend on the input values|computed from the input"):
        freeze(VALUE_DEPENDENT[name], [bai.TensorSpec((4, 5), "float32")])


def test_a_frozen_nan_to_num_and_a_constant_mask_give_eager_results_on_a_new_input():
    keep = bai.tensor(np.random.default_rng(5).random((4, 5)) < 0.5)

    def function(x):
        return bai.nan_to_num(x.log(), posinf=7.0), bai.masked_select(x, keep)

    frozen = freeze(function, [bai.TensorSpec((4, 5), "float32")])
    fresh = np.random.default_rng(6).standard_normal((4, 5)).astype(np.float32)
    fresh[0, :2] = [0.0, inf]
    with np.errstate(divide="ignore", invalid="ignore"):
        expected = function(bai.tensor(fresh))
        got = frozen(fresh)
    for mine, reference in zip(got, expected):
        np.testing.assert_array_equal(mine.numpy(), reference.numpy())

"""Row sums through einsum against float64 sums, and the shapes that keep NumPy's sum."""

import numpy as np
import pytest

from buildingai.accel.kernels.row_reduce import LONGEST_ROW, column_sum, row_dot, row_sum, sum_axes


@pytest.mark.parametrize("shape", [(7, 1), (300, 64), (33, 128), (4, LONGEST_ROW)], ids=str)
def test_row_sums_round_like_float32_sums(shape):
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((2, *shape)).astype(np.float32)
    exact_sum = a.astype(np.float64).sum(axis=1, keepdims=True)
    exact_dot = (a.astype(np.float64) * b).sum(axis=1, keepdims=True)
    tolerance = 4 * np.finfo(np.float32).eps * np.abs(a).sum(axis=1, keepdims=True)
    got_sum, got_dot = row_sum(np, a), row_dot(np, a, b)
    assert got_sum.shape == got_dot.shape == (shape[0], 1)
    assert got_sum.dtype == got_dot.dtype == np.float32
    assert np.all(np.abs(got_sum - exact_sum) <= tolerance)
    assert np.all(np.abs(got_dot - exact_dot) <= 4 * tolerance)


def test_other_shapes_keep_numpys_sum():
    a = np.random.default_rng(1).standard_normal((3, LONGEST_ROW + 1)).astype(np.float32)
    np.testing.assert_array_equal(row_sum(np, a), a.sum(axis=-1, keepdims=True))
    cube = a[:, :12].reshape(3, 3, 4)
    np.testing.assert_array_equal(row_dot(np, cube, cube), (cube * cube).sum(-1, keepdims=True))


@pytest.mark.parametrize(
    "shape, axes",
    [
        ((4, 3, 5, 6), (0, 2, 3)),  # a convolution's bias gradient
        ((4, 3, 5, 6), (2, 3)),
        ((4, 3, 5), (0, 1, 2)),
        ((4, 3, 5), (0,)),  # leading axes (a linear layer's bias gradient): column sums
        ((4, 3, 5), (0, 1)),
        ((0, 3, 5), (0, 1)),
        ((4, 0, 5), (0,)),
        ((2, 3, 70, 70), (2, 3)),  # rows longer than LONGEST_ROW: plain sum
    ],
    ids=str,
)
def test_sum_axes_matches_numpy(shape, axes):
    x = np.random.default_rng(2).standard_normal(shape).astype(np.float32)
    got = sum_axes(np, x, axes)
    expected = x.astype(np.float64).sum(axis=axes, keepdims=True)
    assert got.shape == expected.shape and got.dtype == np.float32
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)
    strided = x[..., ::-1]  # not C-contiguous: plain sum
    np.testing.assert_array_equal(
        sum_axes(np, strided, axes), strided.sum(axis=axes, keepdims=True)
    )


@pytest.mark.parametrize("dtype", [np.bool_, np.int32, np.float16], ids=str)
def test_sum_axes_leaves_other_dtypes_to_numpy(dtype):
    """einsum would add booleans with ``or`` and narrow types in their own dtype."""
    x = (np.random.default_rng(3).standard_normal((4, 3, 5)) > 0).astype(dtype)
    for axes in ((1, 2), (0,), (0, 1)):
        np.testing.assert_array_equal(sum_axes(np, x, axes), x.sum(axis=axes, keepdims=True))
        assert sum_axes(np, x, axes).dtype == x.sum(axis=axes).dtype


def test_column_sums_are_at_least_as_accurate_as_numpys():
    x = np.random.default_rng(4).standard_normal((4096, 96)).astype(np.float32) + 3
    exact = x.astype(np.float64).sum(axis=0)
    got = column_sum(np, x)
    assert got.dtype == np.float32 and got.shape == (96,)
    assert np.abs(got - exact).max() <= np.abs(x.sum(axis=0) - exact).max()
    np.testing.assert_array_equal(column_sum(np, x[:0]), np.zeros(96, np.float32))

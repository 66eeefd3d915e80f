"""Row sums through einsum against float64 sums, and the shapes that keep NumPy's sum."""

import numpy as np
import pytest

from buildingai.ops.row_reduce import LONGEST_ROW, row_dot, row_sum


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

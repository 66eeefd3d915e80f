"""maximum/minimum against a scalar through rows of the scalar: the plain ufunc's result."""

import numpy as np
import pytest

from buildingai.accel.kernels.scalar_loops import ROW, extremum_with_scalar


@pytest.mark.parametrize("ufunc", [np.maximum, np.minimum], ids=lambda u: u.__name__)
@pytest.mark.parametrize("size", [5, 2 * ROW, 3 * ROW + 17], ids=str)
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=str)
def test_same_values_as_the_plain_call(ufunc, size, dtype):
    x = np.random.default_rng(0).standard_normal(size).astype(dtype)
    x[:3] = [np.nan, np.inf, -np.inf]
    got = extremum_with_scalar(np, ufunc, x.reshape(1, -1), 0.25)
    expected = ufunc(x.reshape(1, -1), 0.25)
    assert got.dtype == expected.dtype and got.shape == expected.shape
    np.testing.assert_array_equal(got, expected)  # NaN in the same places


def test_other_arrays_take_the_plain_call():
    integers = np.arange(3 * ROW).reshape(3, ROW) - ROW
    np.testing.assert_array_equal(
        extremum_with_scalar(np, np.maximum, integers, 0), integers.clip(0)
    )
    strided = np.random.default_rng(1).standard_normal((4 * ROW, 2))[:, 0]
    np.testing.assert_array_equal(
        extremum_with_scalar(np, np.maximum, strided, 0.0), np.maximum(strided, 0.0)
    )

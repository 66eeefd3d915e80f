"""One-input element-wise functions take Python numbers as their module says: a number becomes a
0-d tensor of the default dtype for its kind, exactly as ``buildingai.tensor`` makes it."""

import numpy as np
import pytest

import buildingai as bai

FLOAT_FUNCTIONS = [
    "exp", "expm1", "log", "log1p", "sqrt", "rsqrt", "reciprocal", "square", "abs", "neg", "sin",
    "cos", "tanh", "erf", "sigmoid", "relu", "silu", "gelu", "softplus", "sign", "floor", "ceil",
    "round", "isnan", "isinf", "isfinite",
]  # fmt: skip


@pytest.mark.parametrize("name", FLOAT_FUNCTIONS)
def test_a_python_float_is_a_float32_scalar_tensor(name):
    function = getattr(bai, name)
    got = function(0.75)
    expected = function(bai.tensor(0.75))
    assert got.shape == () and got.dtype == expected.dtype
    np.testing.assert_array_equal(got.numpy(), expected.numpy())


def test_python_ints_and_bools_keep_their_kind():
    assert bai.relu(-3).dtype == bai.tensor(-3).dtype == np.int64
    assert bai.abs(-3).item() == 3
    assert bai.logical_not(True).item() is False
    assert bai.bitwise_not(5).item() == ~5


def test_a_numpy_scalar_keeps_its_dtype():
    assert bai.exp(np.float64(1.0)).dtype == np.float64

"""ONNX mappings of element-wise ops on dtypes other than float32: float-only functions of
integers (computed in the default float dtype), mixed-dtype concatenation and bitwise logic,
and 0-d operands that do not widen; eager == frozen == onnxruntime."""

from __future__ import annotations

import numpy as np
import pytest

import buildingai as bai

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from buildingai.export import check_onnx, export_onnx, run_onnxruntime  # noqa: E402
from buildingai.graph import TensorSpec, freeze  # noqa: E402

HALF = bai.tensor(np.float64(0.5))  # 0-d float64 constants
TENTH = bai.tensor(np.float64(0.1))

CASES = {
    "sigmoid_int": (lambda x: x.sigmoid(), ["int64"]),
    "erf_int": (lambda x: x.erf(), ["int32"]),
    "silu_int": (lambda x: x.silu(), ["int64"]),
    "softplus_int": (lambda x: x.softplus(beta=2.0, threshold=3.0), ["int64"]),
    "gelu_int": (lambda x: x.gelu(), ["int64"]),
    "gelu_tanh_int": (lambda x: x.gelu(approximate="tanh"), ["int64"]),
    "leaky_relu_int": (lambda x: x.leaky_relu(0.25), ["int64"]),
    "exp_bool": (lambda x: (x > 2).exp(), ["int64"]),
    "concatenate_int_float": (lambda x, y: bai.concatenate([x, y], axis=1), ["int32", "float32"]),
    "bitwise_mixed": (lambda x, y: (x & y) | (x ^ 3), ["int32", "int64"]),
    "zero_dim_float64": (lambda x: x * HALF + HALF, ["float32"]),
    "compare_zero_dim": (lambda x: x > HALF, ["float32"]),
    # float32(0.1) equals a 0-d float64 0.1 compared in float32 (PyTorch), not in float64
    "compare_zero_dim_first": (lambda x: bai.eq(TENTH, x * 0 + 0.1), ["float32"]),
    "mean_int": (lambda x: x.mean(axis=1), ["int64"]),
    "floor_divide_int": (lambda x: x.floor_divide(3) + x.floor_divide(-2), ["int64"]),
    "floor_divide_int_by_float": (lambda x: x.floor_divide(0.75), ["int32"]),
    "floor_divide_mixed": (lambda x, y: x.floor_divide(y.abs() + 1), ["float32", "float64"]),
    "clamp_bool_tensor_bound": (lambda x: (x > 0).clamp(bai.tensor(np.int64(0)), 1), ["int32"]),
    "clamp_int_float_bounds": (lambda x, y: x.clamp(y, 2.5), ["int32", "float32"]),
    # operators ONNX defines for fewer dtypes than the op accepts
    "neg_uint8": (lambda x: -x, ["uint8"]),
    "abs_bool": (lambda x: x.abs(), ["bool"]),
    "square_bool": (lambda x: x.square(), ["bool"]),
    "relu_bool": (lambda x: x.relu(), ["bool"]),
    "relu_uint8": (lambda x: x.relu(), ["uint8"]),
    "isnan_int": (lambda x: x.isnan() | x.isinf(), ["int32"]),
    "isfinite_float16": (lambda x: (x / 0).isfinite(), ["float16"]),
    "var_std_int": (lambda x: x.var(axis=1) + x.std(axis=1), ["int64"]),
    "logsumexp_int": (lambda x: x.logsumexp(axis=1), ["int32"]),
    "amax_bool": (lambda x: x.amax(axis=1), ["bool"]),
    "argmax_bool": (lambda x: x.argmax(axis=1) + x.argmin(), ["bool"]),
    "sum_uint8": (lambda x: x.astype("uint8").sum(axis=1), ["int64"]),
}


def _inputs(dtypes, batch, rng):
    arrays = []
    for dtype in dtypes:
        values = rng.integers(-3, 4, size=(batch, 4))
        arrays.append(
            values.astype(dtype)
            if dtype != "float32"
            else rng.uniform(-2, 2, (batch, 4)).astype(dtype)
        )
    return arrays


@pytest.mark.parametrize("name", sorted(CASES))
def test_eager_frozen_onnxruntime_agree(name):
    function, dtypes = CASES[name]
    static = freeze(function, [TensorSpec((None, 4), dtype) for dtype in dtypes])
    assert not check_onnx(static)
    model = export_onnx(static, opset=18 if name.startswith("bitwise") else 17)
    for batch in (2, 5):
        arrays = _inputs(dtypes, batch, np.random.default_rng(batch))
        with np.errstate(divide="ignore", invalid="ignore"):  # isfinite_float16 divides by 0
            eager = function(*[bai.tensor(a) for a in arrays]).numpy()
            np.testing.assert_array_equal(static(*arrays).numpy(), eager)
        exported = run_onnxruntime(model, *arrays)[0]
        assert exported.dtype == eager.dtype and exported.shape == eager.shape
        np.testing.assert_allclose(exported, eager, rtol=1e-5, atol=1e-6)


def test_bitwise_on_integers_needs_opset_18():
    static = freeze(lambda x: x & 6, [TensorSpec((None, 4), "int64")])
    with pytest.raises(bai.DTypeError, match=r"\[bitwise_and\] .* opset 18"):
        export_onnx(static, opset=17)


@pytest.mark.parametrize(
    "index",
    [
        (np.array([0, 2, 0]),),  # repeated rows accumulate
        (slice(None), np.array([[1, 1], [3, 0]])),
        (slice(1, None), 2),
        (np.array([1, 0, 1]), np.array([3, 3, 3])),
    ],
    ids=str,
)
def test_zeros_index_add_exports(index):
    target = (3, 4)
    selected = np.zeros(target)[index].shape

    def function(x):
        values = x.reshape(-1)[: int(np.prod(selected))].reshape(selected) if selected else x.sum()
        return bai.functions.zeros_index_add(values, target, index)

    static = freeze(function, [TensorSpec((12,), "float32")])
    assert not check_onnx(static)
    model = export_onnx(static)
    x = np.random.default_rng(0).standard_normal(12).astype("float32")
    eager = function(bai.tensor(x)).numpy()
    np.testing.assert_allclose(run_onnxruntime(model, x)[0], eager, rtol=1e-6, atol=1e-6)

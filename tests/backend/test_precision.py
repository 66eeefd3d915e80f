"""Math precision: the compute dtype of matmul, linear and conv, scoped per thread."""

from __future__ import annotations

import threading
import warnings

import numpy as np
import pytest

import buildingai as bai
from buildingai.backend import precision
from buildingai.nn import functional as F

ml_dtypes = pytest.importorskip("ml_dtypes")


def _rounded(array, dtype):
    return array.astype(dtype).astype(np.float32)


@pytest.fixture
def operands():
    rng = np.random.default_rng(0)
    return (
        rng.standard_normal((6, 20)).astype(np.float32),
        rng.standard_normal((20, 5)).astype(np.float32),
    )


@pytest.mark.parametrize("name, dtype", [("bf16", ml_dtypes.bfloat16), ("fp16", np.float16)])
def test_low_precision_rounds_the_inputs_and_accumulates_in_float32(operands, name, dtype):
    a, b = operands
    with bai.math_precision(name):
        assert bai.get_math_precision() == name
        product = bai.Tensor(a) @ bai.Tensor(b)
        batched = bai.Tensor(a[None]) @ bai.Tensor(b[None])
        linear = F.linear(bai.Tensor(a), bai.Tensor(b.T.copy()), bai.Tensor(np.ones(5, "f4")))
    expected = _rounded(a, dtype) @ _rounded(b, dtype)
    assert product.dtype == np.float32
    np.testing.assert_allclose(product.numpy(), expected, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(batched.numpy()[0], expected, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(linear.numpy(), expected + 1, rtol=1e-6, atol=1e-6)
    assert not np.allclose(product.numpy(), a @ b, rtol=1e-6, atol=1e-6)  # it did round
    assert bai.get_math_precision() == "fp32"


def test_conv_follows_the_precision():
    rng = np.random.default_rng(2)
    image = rng.standard_normal((1, 2, 5, 5)).astype(np.float32)
    kernel = rng.standard_normal((3, 2, 3, 3)).astype(np.float32)
    with bai.math_precision("bf16"):
        rounded = F.conv2d(bai.Tensor(image), bai.Tensor(kernel)).numpy()
    expected = F.conv2d(
        bai.Tensor(_rounded(image, ml_dtypes.bfloat16)),
        bai.Tensor(_rounded(kernel, ml_dtypes.bfloat16)),
    ).numpy()
    np.testing.assert_allclose(rounded, expected, rtol=1e-6, atol=1e-6)


def test_tf32_on_the_cpu_computes_in_float32_and_says_so_once(operands, monkeypatch):
    a, b = operands
    monkeypatch.setattr(precision, "_warned_tf32_on_cpu", False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with bai.math_precision("tf32"):
            first = (bai.Tensor(a) @ bai.Tensor(b)).numpy()
            (bai.Tensor(a) @ bai.Tensor(b)).numpy()
    said = [w for w in caught if "no TF32 kernel" in str(w.message)]
    assert len(said) == 1
    np.testing.assert_array_equal(first, (bai.Tensor(a) @ bai.Tensor(b)).numpy())


def test_setter_is_process_wide_and_scope_is_per_thread(operands):
    seen = {}

    def other_thread():
        seen["precision"] = bai.get_math_precision()

    try:
        bai.set_math_precision("fp16")
        with bai.math_precision("bf16"):
            worker = threading.Thread(target=other_thread)
            worker.start()
            worker.join(timeout=10)
            assert bai.get_math_precision() == "bf16"
        assert seen["precision"] == "fp16"  # the default, not this thread's scope
        assert bai.get_math_precision() == "fp16"
    finally:
        bai.set_math_precision("fp32")
    with pytest.raises(ValueError, match="choose one of fp32, tf32, bf16, fp16"):
        bai.set_math_precision("fp8")


def test_half_operands_multiply_with_float32_accumulation(operands):
    a, b = (_rounded(x, np.float16).astype(np.float16) for x in operands)
    product = bai.Tensor(a) @ bai.Tensor(b)
    assert product.dtype == np.float16
    expected = (a.astype(np.float32) @ b.astype(np.float32)).astype(np.float16)
    np.testing.assert_array_equal(product.numpy(), expected)


def test_info_shows_the_setting():
    from buildingai.cli import info

    assert info()["math_precision"].startswith("fp32 (")
    with bai.math_precision("bf16"):
        assert "bfloat16" in info()["math_precision"]


@pytest.mark.skipif(not bai.cuda_is_available(), reason="needs a CUDA device and CuPy")
def test_tf32_on_cuda_switches_cublas_compute_type(operands):  # pragma: no cover - GPU only
    from cupy._core import _routines_linalg as linalg

    a, b = operands
    x, y = bai.Tensor(a).to("cuda"), bai.Tensor(b).to("cuda")
    with bai.math_precision("tf32"):
        assert linalg.get_compute_type(np.float32) == linalg.COMPUTE_TYPE_TF32
        tf32 = (x @ y).numpy()
    assert linalg.get_compute_type(np.float32) != linalg.COMPUTE_TYPE_TF32
    np.testing.assert_allclose(tf32, a @ b, rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("name", ["bf16", "fp16"])
def test_only_float32_products_are_rounded(name):
    # float64 and integer operands multiply as stored at every precision, 2-D and batched
    rng = np.random.default_rng(3)
    for dtype in (np.float64, np.int64):
        a = (rng.standard_normal((4, 7)) * 1000).astype(dtype)
        b = (rng.standard_normal((7, 3)) * 1000).astype(dtype)
        with bai.math_precision(name):
            product = (bai.Tensor(a) @ bai.Tensor(b)).numpy()
            batched = (bai.Tensor(a[None]) @ bai.Tensor(b[None])).numpy()
        assert product.dtype == dtype
        np.testing.assert_array_equal(product, a @ b)
        np.testing.assert_array_equal(batched[0], a @ b)

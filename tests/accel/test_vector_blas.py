"""axpby through NumPy's OpenBLAS and through its array fallback give alpha * x + beta * y; with
acceleration off the binding is not used."""

import numpy as np
import pytest

import buildingai as bai
from buildingai.accel import vector_blas

LARGE = vector_blas.MIN_SIZE * 2 + 3  # large enough for BLAS, odd so no kernel tail is skipped


@pytest.fixture(params=[True, False], ids=["blas", "arrays"])
def enabled(request, accel_on):
    previous = vector_blas.set_enabled(request.param)
    yield request.param
    vector_blas.set_enabled(previous)


def _vectors(dtype, size, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(size).astype(dtype), rng.standard_normal(size).astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("size", [7, LARGE])
@pytest.mark.parametrize("beta", [0.9, 1.0, 0.0])
def test_axpby_matches_the_formula(enabled, dtype, size, beta):
    x, y = _vectors(dtype, size)
    expected = 0.25 * x.astype(np.float64) + beta * y.astype(np.float64)
    x_before = x.copy()
    vector_blas.axpby(np, 0.25, x, beta, y)
    tolerance = 1e-6 if dtype == np.float32 else 1e-14
    np.testing.assert_allclose(y, expected, rtol=tolerance, atol=tolerance)
    np.testing.assert_array_equal(x, x_before)  # x is read only (no scratch was given)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_beta_zero_overwrites_nan_and_inf(enabled, dtype):
    x, y = _vectors(dtype, LARGE)
    y[:3] = [np.nan, np.inf, -np.inf]
    vector_blas.axpby(np, 2.0, x, 0.0, y)
    np.testing.assert_allclose(y, 2.0 * x, rtol=1e-6)


def test_blas_and_arrays_agree_to_rounding(accel_on):
    x, y = _vectors(np.float32, LARGE)
    through_blas, through_arrays = y.copy(), y.copy()
    vector_blas.set_enabled(True)
    vector_blas.axpby(np, -1e-3, x, 0.999, through_blas)
    previous = vector_blas.set_enabled(False)
    try:
        vector_blas.axpby(np, -1e-3, x, 0.999, through_arrays)
    finally:
        vector_blas.set_enabled(previous)
    np.testing.assert_allclose(through_blas, through_arrays, rtol=2e-7, atol=1e-7)


def test_shaped_operands_and_a_scratch_array(enabled):
    x, y = (v.reshape(3, -1) for v in _vectors(np.float32, 3 * LARGE))
    expected = 2.0 * x + 0.5 * y
    scratch = np.empty_like(y)
    vector_blas.axpby(np, 2.0, x, 0.5, y, scratch)
    np.testing.assert_allclose(y, expected, rtol=1e-6, atol=1e-6)


def test_x_may_serve_as_its_own_scratch(enabled):
    x, y = _vectors(np.float32, LARGE)
    expected = 3.0 * x + y
    vector_blas.axpby(np, 3.0, x, 1.0, y, x)
    np.testing.assert_allclose(y, expected, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize(
    "case",
    ["strided x", "strided y", "mixed dtypes", "float16"],
)
def test_operands_blas_cannot_take_use_the_fallback(case):
    x, y = _vectors(np.float32, 2 * LARGE)
    if case == "strided x":
        x, y = x[::2], y[:LARGE]
    elif case == "strided y":
        x, y = x[:LARGE], y[::2]
    elif case == "mixed dtypes":
        x = x.astype(np.float64)
    else:
        x, y = x.astype(np.float16), y.astype(np.float16)
    expected = (0.5 * x.astype(np.float64) + 2.0 * y.astype(np.float64)).astype(y.dtype)
    vector_blas.axpby(np, 0.5, x, 2.0, y)
    tolerance = 2e-3 if y.dtype == np.float16 else 1e-6
    np.testing.assert_allclose(y, expected, rtol=tolerance, atol=tolerance)


def test_the_kernels_numpy_links_are_found_in_a_numpy_wheel(accel_on):
    if "openblas" not in str(np.__config__.CONFIG["Build Dependencies"]["blas"]["name"]):
        pytest.skip("this NumPy does not link OpenBLAS")
    assert vector_blas.available()


def test_with_acceleration_off_the_sums_are_array_operations(accel_off, monkeypatch):
    monkeypatch.setattr(vector_blas, "_load", lambda: pytest.fail("looked up a library"))
    x, y = _vectors(np.float32, LARGE)
    expected = 0.5 * x + 2.0 * y
    vector_blas.axpby(np, 0.5, x, 2.0, y)
    np.testing.assert_allclose(y, expected, rtol=1e-6, atol=1e-6)
    assert not vector_blas.available()
    assert vector_blas.status()["detail"].startswith("acceleration off")
    assert not bai.accel.is_enabled()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_add_scaled_is_one_axpy_pass(enabled, dtype):
    x, y = _vectors(dtype, LARGE)
    expected = y.astype(np.float64) - 0.37 * x.astype(np.float64)
    took = vector_blas.add_scaled(np, -0.37, x, y)
    assert took == (enabled and vector_blas.available())
    if took:  # (where BLAS declined, nothing was written)
        tolerance = 1e-6 if dtype == np.float32 else 1e-14
        np.testing.assert_allclose(y, expected, rtol=tolerance, atol=tolerance)


@pytest.mark.parametrize("case", ["small", "strided", "mixed dtypes", "overlapping", "read-only"])
def test_add_scaled_declines_what_blas_cannot_take_and_writes_nothing(accel_on, case):
    x, y = _vectors(np.float32, 2 * LARGE)
    if case == "small":
        x, y = x[:7], y[:7]
    elif case == "strided":
        x, y = x[::2], y[:LARGE]
    elif case == "mixed dtypes":
        x = x.astype(np.float64)
    elif case == "overlapping":
        x, y = y[: LARGE + 1], y[1 : LARGE + 2]
    else:
        y.flags.writeable = False
    before = y.copy()
    assert not vector_blas.add_scaled(np, 0.5, x, y)
    np.testing.assert_array_equal(y, before)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sum_of_squares_is_one_dot_pass(enabled, dtype):
    x, _ = _vectors(dtype, 40 * LARGE)
    exact = float(np.dot(x.astype(np.float64), x.astype(np.float64)))
    total = vector_blas.sum_of_squares(np, x)
    if not (enabled and vector_blas.available()):
        assert total is None
        return
    # BLAS sums in the array's dtype: float32 within a few 1e-6 at this length
    assert abs(total - exact) <= (2e-5 if dtype == np.float32 else 1e-13) * exact
    assert vector_blas.sum_of_squares(np, x[:7]) is None  # small: array operations
    assert vector_blas.sum_of_squares(np, x[::2]) is None  # strided


def test_with_acceleration_off_nothing_is_taken(accel_off):
    x, y = _vectors(np.float32, LARGE)
    assert not vector_blas.add_scaled(np, 0.5, x, y)
    assert vector_blas.sum_of_squares(np, x) is None


def test_two_threads_add_and_sum_at_once(accel_on):
    """Each thread's calls see only its own arrays (the own copy is held at one thread and
    called from both)."""
    from concurrent.futures import ThreadPoolExecutor

    def work(seed):
        x, y = _vectors(np.float32, LARGE, seed)
        expected = y.astype(np.float64) + 0.5 * x.astype(np.float64)
        for _ in range(20):
            squares = vector_blas.sum_of_squares(np, x)
        took = vector_blas.add_scaled(np, 0.5, x, y)
        exact = float(np.dot(x.astype(np.float64), x.astype(np.float64)))
        return took, y, expected, squares, exact

    with ThreadPoolExecutor(2) as pool:
        results = list(pool.map(work, [1, 2]))
    for took, y, expected, squares, exact in results:
        if took:
            np.testing.assert_allclose(y, expected, rtol=1e-6, atol=1e-6)
            assert abs(squares - exact) <= 1e-5 * exact

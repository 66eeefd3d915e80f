"""The product kernels of ``accel/products.py`` against the records of ``ops/linalg.py``: each
registered kernel, with acceleration on and off, in float32 and float64, over operand layouts
and stacks; products cut on the Python pool where numba is not used; and, in fresh processes,
that acceleration off loads nothing and acceleration on runs the registered kernel."""

from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import buildingai as bai
from buildingai.accel import products, registry
from buildingai.accel.kernels import compiled
from buildingai.backend import threads
from buildingai.ops.linalg import EINSUM, LINEAR, MATMUL
from tests.ops.products import assert_linear_and_its_gradients

TOLERANCE = {np.float32: 2e-5, np.float64: 1e-12}


def _layouts(matrix):
    """The matrix as a product may receive it: row-major, the transpose of a row-major array,
    and a window of a wider array."""
    wide = np.zeros((*matrix.shape[:-1], matrix.shape[-1] + 3), matrix.dtype)
    wide[..., 1 : 1 + matrix.shape[-1]] = matrix
    return {
        "row-major": matrix,
        "transposed": np.ascontiguousarray(matrix.swapaxes(-1, -2)).swapaxes(-1, -2),
        "window": wide[..., 1 : 1 + matrix.shape[-1]],
    }


def _both_ways(op, arrays, **attrs):
    """``op`` on ``arrays`` with acceleration off (the record) and on (its kernels)."""
    tensors = [bai.tensor(array) for array in arrays]
    with bai.accel.enabled(False):
        reference = op(*tensors, **attrs).numpy()
    with bai.accel.enabled(True):
        accelerated = op(*tensors, **attrs).numpy()
    return reference, accelerated


def _assert_close(reference, accelerated, dtype, scale=1.0):
    assert accelerated.dtype == reference.dtype and accelerated.shape == reference.shape
    tolerance = TOLERANCE[dtype] * scale
    np.testing.assert_allclose(accelerated, reference, rtol=tolerance, atol=tolerance)


@pytest.fixture(params=["default", "one pool, every product cut"])
def arrangement(request, monkeypatch):
    """The arrangement acceleration sets up, and one pool of two threads cutting every product
    (numba's threads where it runs, else the Python pool)."""
    if request.param != "default":
        monkeypatch.setattr(products, "SPLIT_MULTIPLY_ADDS", 0)
        monkeypatch.setattr(products, "PYTHON_SPLIT_MULTIPLY_ADDS", 0)
        monkeypatch.setattr(threads, "MIN_PARALLEL_WORK", 0)
        monkeypatch.setattr(threads, "BLAS_SPIN_SECONDS", 0.0)
        monkeypatch.setattr(compiled, "MIN_PARALLEL_WORK", 0)
        pytest.importorskip("threadpoolctl")
        bai.set_num_threads(2, gemm=True)
    yield request.param
    bai.set_num_threads(None)


SHAPES = [
    ((40, 33), (33, 24)),  # two matrices, a the larger
    ((64, 96), (96, 80)),  # large enough for NumPy's threads: the own BLAS, uncut
    ((1, 1024), (1024, 1024)),  # a row against a large matrix: a GEMV on the own BLAS
    ((6, 33), (33, 50)),  # b the larger: cut by columns
    ((1, 300), (300, 70)),  # a row against a matrix: a GEMV
    ((70, 300), (300, 1)),  # a matrix against a column
    ((3, 9, 33), (33, 24)),  # a batch against one matrix: its rows folded
    ((5, 8, 20), (5, 20, 12)),  # a stack
    ((2, 1, 8, 20), (3, 20, 12)),  # batch dimensions broadcast
    ((0, 5), (5, 4)),  # empty
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("a_layout", ["row-major", "transposed", "window"])
@pytest.mark.parametrize("b_layout", ["row-major", "transposed", "window"])
@pytest.mark.parametrize("shapes", SHAPES, ids=str)
def test_matmul_kernel_equals_the_record(arrangement, dtype, a_layout, b_layout, shapes):
    rng = np.random.default_rng(0)
    a = _layouts(rng.standard_normal(shapes[0]).astype(dtype))[a_layout]
    b = _layouts(rng.standard_normal(shapes[1]).astype(dtype))[b_layout]
    reference, accelerated = _both_ways(MATMUL, (a, b))
    _assert_close(reference, accelerated, dtype, scale=np.sqrt(a.shape[-1]))
    np.testing.assert_allclose(reference, np.matmul(a, b), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("transpose_a", [False, True])
@pytest.mark.parametrize("transpose_b", [False, True])
@pytest.mark.parametrize("b_batch", [(), (4,)], ids=["matrix", "stack"])
def test_matmul_kernel_takes_the_transposed_forms(arrangement, transpose_a, transpose_b, b_batch):
    rng = np.random.default_rng(1)
    a = rng.standard_normal((4, 30, 20) if transpose_a else (4, 20, 30)).astype(np.float32)
    b = rng.standard_normal(b_batch + ((40, 30) if transpose_b else (30, 40))).astype(np.float32)
    attrs = {"transpose_a": transpose_a, "transpose_b": transpose_b}
    reference, accelerated = _both_ways(MATMUL, (a, b), **attrs)
    _assert_close(reference, accelerated, np.float32, scale=6)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("x_shape", [(12, 20), (3, 7, 20), (20,), (1, 20)], ids=str)
@pytest.mark.parametrize("with_bias", [True, False])
def test_linear_kernel_equals_the_record(arrangement, dtype, x_shape, with_bias):
    rng = np.random.default_rng(2)
    x = rng.standard_normal(x_shape).astype(dtype)
    weight = rng.standard_normal((9, 20)).astype(dtype)
    arrays = (x, weight, rng.standard_normal(9).astype(dtype)) if with_bias else (x, weight)
    reference, accelerated = _both_ways(LINEAR, arrays)
    _assert_close(reference, accelerated, dtype, scale=5)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("x_shape", [(600, 128), (4, 50, 128)], ids=str)
def test_a_layer_on_the_own_blas_starts_its_product_from_the_bias(
    arrangement, dtype, x_shape, monkeypatch
):
    """Where a layer's product runs on the own BLAS (whole, or cut on numba's threads), its
    output starts as the bias rows, filled in the BLAS call's own task, and the BLAS adds the
    product (beta 1), as addmm: the record's values."""
    accumulated = []
    from_bias = products._dot_from_bias

    def spy(a, b, out, bias):
        result = from_bias(a, b, out, bias)
        accumulated.append(result is not None)
        return result

    monkeypatch.setattr(products, "_dot_from_bias", spy)
    rng = np.random.default_rng(7)
    x = rng.standard_normal(x_shape).astype(dtype)
    weight = rng.standard_normal((96, 128)).astype(dtype)
    bias = (rng.standard_normal(96) * 10).astype(dtype)  # large: a lost bias would show
    reference, accelerated = _both_ways(LINEAR, (x, weight, bias))
    _assert_close(reference, accelerated, dtype, scale=5)
    with bai.accel.enabled(True):
        if threads.own_blas():
            assert accumulated == [True]


@pytest.mark.parametrize(
    "a_shape, b_shape",
    [
        ((600, 128), (128, 96)),
        ((8, 128), (128, 3000)),
        ((1, 300), (300, 70)),
        ((70, 300), (300, 1)),
    ],
    ids=str,
)
@pytest.mark.parametrize("accelerated", [True, False])
def test_a_product_added_into_out_equals_out_plus_the_product(arrangement, a_shape, b_shape,
                                                              accelerated):  # fmt: skip
    """``_dot(..., accumulate=True)`` on each of its paths (NumPy's BLAS, the own BLAS whole
    or cut by rows or columns, a GEMV): out + a @ b."""
    rng = np.random.default_rng(8)
    a = rng.standard_normal(a_shape).astype(np.float32)
    b = rng.standard_normal(b_shape).astype(np.float32)
    start = rng.standard_normal((a_shape[0], b_shape[1])).astype(np.float32)
    out = start.copy()
    with bai.accel.enabled(accelerated):
        assert products._dot(a, b, out, accumulate=True) is out
    np.testing.assert_allclose(out, start + a @ b, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("precision", ["bf16", "fp16"])
def test_linear_and_matmul_kernels_keep_the_math_precision(precision):
    if precision == "bf16":
        pytest.importorskip("ml_dtypes")
    rng = np.random.default_rng(3)
    x = rng.standard_normal((16, 20)).astype(np.float32)
    weight = rng.standard_normal((9, 20)).astype(np.float32)
    bias = rng.standard_normal(9).astype(np.float32)
    with bai.math_precision(precision):
        for op, arrays in ((LINEAR, (x, weight, bias)), (MATMUL, (x, weight.T.copy()))):
            reference, accelerated = _both_ways(op, arrays)
            np.testing.assert_array_equal(accelerated, reference)


def test_half_precision_operands_keep_their_dtype():
    rng = np.random.default_rng(4)
    a = rng.standard_normal((16, 20)).astype(np.float16)
    b = rng.standard_normal((20, 8)).astype(np.float16)
    reference, accelerated = _both_ways(MATMUL, (a, b))
    assert accelerated.dtype == np.float16
    np.testing.assert_array_equal(accelerated, reference)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(
    "equation, shapes",
    [
        ("ij,jk->ik", [(40, 60), (60, 30)]),  # large enough for a planned contraction
        ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
        ("ij,jk,kl->il", [(5, 6), (6, 7), (7, 3)]),
        ("ii->i", [(5, 5)]),
    ],
)
def test_einsum_kernel_equals_the_record(dtype, equation, shapes):
    rng = np.random.default_rng(5)
    arrays = [rng.standard_normal(shape).astype(dtype) for shape in shapes]
    tensors = [bai.tensor(array) for array in arrays]
    with bai.accel.enabled(False):
        reference = EINSUM(*tensors, equation=equation).numpy()
    with bai.accel.enabled(True):
        accelerated = EINSUM(*tensors, equation=equation).numpy()
    _assert_close(reference, accelerated, dtype, scale=10)


def test_the_kernels_are_registered_and_off_with_acceleration():
    names = {entry["name"]: entry for entry in bai.accel.status()["kernels"]}
    for name, op in [("matmul.routed", "matmul"), ("linear.routed", "linear")]:
        assert names[name]["op"] == op
    assert {"blas.own_copy", "threads.one_pool", "einsum.noted"} <= set(names)
    with bai.accel.enabled(False):
        assert MATMUL.accelerated == () and LINEAR.accelerated == () and EINSUM.accelerated == ()
        assert not threads.one_pool() and bai.get_num_threads() == 1


def test_enable_sets_up_one_pool_on_its_own_blas_and_disable_takes_it_back():
    pytest.importorskip("numba")
    pytest.importorskip("scipy_openblas64")
    with bai.accel.enabled(True):
        assert threads.own_blas() and bai.get_num_threads() == threads.available_cores()
        previous = bai.accel.set_enabled("threads.one_pool", False)
        try:
            bai.accel.enable(quiet=True)  # a switch takes effect at the next enable()
            assert threads.own_blas() is False and bai.get_num_threads() == 1
        finally:
            bai.accel.set_enabled("threads.one_pool", previous)
            bai.accel.enable(quiet=True)
    with bai.accel.enabled(False):
        assert not threads.one_pool() and bai.get_num_threads() == 1


def test_small_products_go_to_numpys_blas_while_it_has_one_thread(monkeypatch):
    threadpoolctl = pytest.importorskip("threadpoolctl")
    from buildingai.accel import own_blas

    if own_blas.numpy_blas_threads() is None:
        pytest.skip("NumPy calls a BLAS other than OpenBLAS")
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((2, 32, 128)).astype(np.float32)
    b = b.T[:, :96]  # (128, 96): more than 2^18 multiply-adds, a transposed operand
    calls = []
    monkeypatch.setattr(compiled, "split_product", lambda *args, **kw: calls.append(args))
    with bai.accel.enabled(True), threadpoolctl.threadpool_limits(1, user_api="blas"):
        assert own_blas.numpy_blas_threads() == 1
        bai.set_num_threads(1)
        try:
            np.testing.assert_allclose(products._dot(a, b), a @ b, rtol=1e-6)
        finally:
            bai.set_num_threads(None)
    assert not calls  # NumPy's a.dot, not the own copy's call
    with threadpoolctl.threadpool_limits(2, user_api="blas"):
        assert own_blas.numpy_blas_threads() == 2


# ----- products cut on the Python pool (numba's twins switched off) ----------------------------


@pytest.fixture
def python_pool(monkeypatch):
    """GEMMs on three of BuildingAI's Python threads, whatever their size, as where numba is
    missing (the twins switched off before acceleration is enabled: no own BLAS either); yields
    the ranges run."""
    pytest.importorskip("threadpoolctl")
    monkeypatch.setattr(compiled.TWINS, "switched_on", False)
    monkeypatch.setattr(products, "SPLIT_MULTIPLY_ADDS", 0)
    monkeypatch.setattr(products, "BLAS_THREADED_MULTIPLY_ADDS", 0)  # small products routed too
    for name in ("matmul.routed", "linear.routed"):  # (read when acceleration is enabled below)
        monkeypatch.setattr(registry.kernel(name), "min_size", 0)
    monkeypatch.setattr(products, "PYTHON_SPLIT_MULTIPLY_ADDS", 0)
    monkeypatch.setattr(threads, "MIN_PARALLEL_WORK", 0)
    calls = []
    parallel_for = threads.parallel_for

    def spy(kernel, length, work=None):
        calls.append((kernel.__name__, length))
        return parallel_for(kernel, length, work)

    monkeypatch.setattr(products, "parallel_for", spy)
    with bai.accel.enabled(True):
        bai.set_num_threads(3, gemm=True)
        assert threads.one_pool() and not threads.own_blas()
        yield calls
        bai.set_num_threads(None)


@pytest.mark.parametrize(
    "a_shape, b_shape, cut",
    [
        ((30, 7), (7, 5), "row_range"),  # a is the larger operand: each thread its rows
        ((6, 7), (7, 40), "column_range"),  # b is larger: each thread reads its columns only
        ((8, 9, 7), (8, 7, 5), "entries"),  # a stack: whole matrices per thread
        ((1, 30, 7), (1, 7, 5), "row_range"),  # fewer matrices than threads: rows of each
    ],
)
def test_products_cut_across_python_threads_equal_one_call(python_pool, a_shape, b_shape, cut):
    rng = np.random.default_rng(0)
    a = rng.standard_normal(a_shape).astype(np.float32)
    b = rng.standard_normal(b_shape).astype(np.float32)
    got = (bai.tensor(a) @ bai.tensor(b)).numpy()
    np.testing.assert_allclose(got, np.matmul(a, b), rtol=1e-5, atol=1e-5)
    assert cut in [name for name, _ in python_pool]


@pytest.mark.parametrize("a_shape, b_shape", [((30, 7), (7, 5)), ((6, 7), (7, 40))], ids=str)
def test_a_product_added_into_out_on_python_threads(python_pool, a_shape, b_shape):
    """Each thread adds its range of rows or columns of the product into out."""
    rng = np.random.default_rng(9)
    a = rng.standard_normal(a_shape).astype(np.float32)
    b = rng.standard_normal(b_shape).astype(np.float32)
    start = rng.standard_normal((a_shape[0], b_shape[1])).astype(np.float32)
    out = start.copy()
    assert products._dot(a, b, out, accumulate=True) is out
    np.testing.assert_allclose(out, start + a @ b, rtol=1e-5, atol=1e-5)
    assert {"row_range", "column_range"} & {name for name, _ in python_pool}


def test_linear_and_its_gradients_on_python_threads(python_pool):
    assert_linear_and_its_gradients(seed=1)
    assert python_pool  # the products were cut


def test_integer_and_float64_products_on_python_threads(python_pool):
    a = np.arange(12).reshape(4, 3)
    assert np.array_equal((bai.tensor(a) @ bai.tensor(a.T)).numpy(), a @ a.T)  # not cut
    assert python_pool == []
    d = np.random.default_rng(2).standard_normal((8, 8))
    np.testing.assert_allclose((bai.tensor(d) @ bai.tensor(d)).numpy(), d @ d, rtol=1e-12)


def test_two_threads_multiply_at_once_on_python_threads(python_pool):
    rng = np.random.default_rng(3)
    a = rng.standard_normal((64, 48)).astype(np.float32)
    b = rng.standard_normal((48, 40)).astype(np.float32)
    expected = (bai.tensor(a) @ bai.tensor(b)).numpy()
    with ThreadPoolExecutor(2) as pool:
        results = list(pool.map(lambda _: (bai.tensor(a) @ bai.tensor(b)).numpy(), range(8)))
    for result in results:
        np.testing.assert_allclose(result, expected, rtol=1e-6, atol=1e-6)


def test_other_ops_products_run_routed(monkeypatch):
    """``products.matmul_array`` and ``einsum_array``, the routed twins of the records'
    helpers, give the records' results."""
    from buildingai.ops import linalg

    rng = np.random.default_rng(6)
    a = rng.standard_normal((4, 6, 30)).astype(np.float32)
    b = rng.standard_normal((4, 30, 5)).astype(np.float32)
    with bai.accel.enabled(True):
        np.testing.assert_allclose(
            products.matmul_array(np, a, b), linalg.matmul_array(np, a, b), rtol=1e-5, atol=1e-5
        )
        np.testing.assert_array_equal(
            products.einsum_array(np, "bij,bjk->bik", a, b, optimize=True),
            linalg.einsum_array(np, "bij,bjk->bik", a, b, optimize=True),
        )
    with pytest.raises(ValueError, match="rank >= 2"):
        products.matmul_array(np, a[0, 0], b)


# ----- what a fresh process loads ----------------------------------------------------------------

_PRODUCT = """
import os, sys
import numpy as np
import buildingai as bai
from buildingai.ops.linalg import MATMUL
a = bai.tensor(np.ones((512, 512), np.float32))
ran = []
for entry in MATMUL.accelerated:
    run = entry.run
    entry.run = lambda *args, run=run, name=entry.name, **kwargs: ran.append(name) or run(*args, **kwargs)
assert float((a @ a).numpy()[0, 0]) == 512.0
print("numba" in sys.modules, "GOMP_SPINCOUNT" in os.environ, bai.get_num_threads(), ran)
"""


def _fresh_process(accel: str) -> str:
    environment = {**os.environ, "BUILDINGAI_ACCEL": accel}
    environment.pop("GOMP_SPINCOUNT", None)
    result = subprocess.run(
        [sys.executable, "-c", _PRODUCT],
        capture_output=True,
        text=True,
        env=environment,
        cwd=os.path.dirname(os.path.dirname(os.path.dirname(__file__))),
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.split()


def test_acceleration_off_a_product_loads_nothing():
    numba_loaded, spin_set, count, ran = _fresh_process("0")
    assert numba_loaded == "False" and spin_set == "False"
    assert count == "1" and ran == "[]"


def test_acceleration_on_a_product_runs_the_registered_kernel():
    pytest.importorskip("numba")
    pytest.importorskip("scipy_openblas64")
    numba_loaded, spin_set, count, *ran = _fresh_process("1")
    assert numba_loaded == "True" and spin_set == "False"  # the spin count is set only while
    assert int(count) == threads.available_cores()  # numba's threads start
    assert "matmul.routed" in " ".join(ran)


def test_a_stack_of_small_products_by_a_transposed_operand_matches_numpy():
    """Attention's ``q @ k^T`` and its gradients: the transposed operand is read as it is."""
    rng = np.random.default_rng(3)
    a = rng.standard_normal((16, 4, 64, 32)).astype(np.float32)
    b = rng.standard_normal((16, 64, 4, 32)).astype(np.float32).transpose(0, 2, 1, 3)
    with bai.accel.enabled(True):
        got = products.routed_matmul(None, np, a, b, transpose_b=True)
        left = products.routed_matmul(None, np, b, a, transpose_a=True)
    np.testing.assert_allclose(got, np.matmul(a, b.swapaxes(-1, -2)), rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(left, np.matmul(b.swapaxes(-1, -2), a), rtol=1e-5, atol=1e-4)


def test_in_one_pool_heads_are_multiplied_where_they_lie(monkeypatch):
    """(batch, heads, rows, columns) views of a projection go to the compiled product as they
    are, two batch axes and all: folding those axes into one would copy each operand."""
    pytest.importorskip("numba")
    pytest.importorskip("scipy_openblas64")
    rng = np.random.default_rng(5)
    q = rng.standard_normal((8, 64, 4, 32)).astype(np.float32).transpose(0, 2, 1, 3)
    k = rng.standard_normal((8, 64, 4, 32)).astype(np.float32).transpose(0, 2, 1, 3)
    seen = []
    split_product = compiled.split_product

    def spy(a, b, out, *args, **kwargs):
        seen.append((a, b))
        return split_product(a, b, out, *args, **kwargs)

    monkeypatch.setattr(compiled, "split_product", spy)
    with bai.accel.enabled(True):
        bai.set_num_threads(2)
        try:
            got = products.routed_matmul(None, np, q, k, transpose_b=True)
        finally:
            bai.set_num_threads(None)
    np.testing.assert_allclose(got, np.matmul(q, k.swapaxes(-1, -2)), rtol=1e-5, atol=1e-4)
    assert seen and all(np.shares_memory(a, q) and np.shares_memory(b, k) for a, b in seen)


def test_in_one_pool_clipping_and_small_stacked_products_leave_numpys_blas_asleep(monkeypatch):
    """On the own BLAS, NumPy's BLAS threads are woken only by products it really threads: a
    gradient norm for clipping, or a stack of products small per entry, noted as a BLAS call
    would keep every element-wise kernel on one thread for the next 0.1 s (and the next step)."""
    pytest.importorskip("numba")
    pytest.importorskip("scipy_openblas64")
    with bai.accel.enabled(True):
        bai.set_num_threads(2)
        try:
            assert threads.own_blas()
            monkeypatch.setitem(threads._blas, "last", 0.0)  # nothing noted yet
            weights = bai.nn.Parameter(bai.randn(512, 512))
            (weights * weights).sum().backward()
            bai.nn.utils.clip_grad_norm_([weights], 1.0)
            q, k = bai.randn(64, 64, 32), bai.randn(64, 32, 64)  # attention's scores, per head
            # the fallback where the pool cannot take the cut (numba's threads busy)
            monkeypatch.setattr(compiled, "split_product", lambda *args, **kwargs: False)
            q @ k
            assert not threads.blas_spinning()
        finally:
            bai.set_num_threads(None)

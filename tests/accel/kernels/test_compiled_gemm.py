"""Products cut across numba's threads (``compiled/gemm.py``) against their NumPy reference,
``a @ b``: every operand layout BLAS takes (row-major and transposed, with leading dimensions
wider than the matrix), float32 and float64, rows and columns cut into more parts than there
are rows, stacks, and the layouts that must be refused. Then the same through ``matmul`` and a
linear layer's gradients in one pool, and from two threads at once."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import buildingai as bai
from buildingai.accel.kernels import compiled
from tests.ops.products import assert_linear_and_its_gradients

pytest.importorskip("numba")
pytest.importorskip("threadpoolctl")
gemm = pytest.importorskip("buildingai.accel.kernels.compiled.gemm")
if not gemm.ADDRESSES:
    pytest.skip("NumPy's BLAS has no 64-bit-integer CBLAS gemm", allow_module_level=True)

TOLERANCE = {np.float32: 2e-5, np.float64: 1e-12}


def _layouts(matrix):
    """The matrix as BLAS may see it: row-major, the transpose of a row-major array, and a
    window of a wider array (a leading dimension larger than its width)."""
    wide = np.zeros((matrix.shape[0], matrix.shape[1] + 3), matrix.dtype)
    wide[:, 1 : 1 + matrix.shape[1]] = matrix
    return {
        "row-major": matrix,
        "transposed": np.ascontiguousarray(matrix.T).T,
        "window": wide[:, 1 : 1 + matrix.shape[1]],
    }


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("by_columns", [False, True])
@pytest.mark.parametrize("parts", [1, 2, 7])
@pytest.mark.parametrize("a_layout", ["row-major", "transposed", "window"])
@pytest.mark.parametrize("b_layout", ["row-major", "transposed", "window"])
def test_product_equals_one_blas_call(dtype, by_columns, parts, a_layout, b_layout):
    rng = np.random.default_rng(0)
    a = _layouts(rng.standard_normal((5, 33)).astype(dtype))[a_layout]
    b = _layouts(rng.standard_normal((33, 6)).astype(dtype))[b_layout]
    out = np.full((1, 5, 6), np.nan, dtype)
    assert gemm.product(a[None], b[None], out, parts, by_columns)
    scale = TOLERANCE[dtype] * np.abs(a).sum(1).max() * np.abs(b).max()
    np.testing.assert_allclose(out[0], a @ b, rtol=0, atol=scale)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("accumulate", [False, True])
@pytest.mark.parametrize("parts", [0, 2])
@pytest.mark.parametrize("a_layout", ["row-major", "transposed", "window"])
@pytest.mark.parametrize("b_layout", ["row-major", "transposed", "window"])
@pytest.mark.parametrize("slice_depth", [gemm.DEPTH_SLICE, 0])
def test_deep_products_in_slices_equal_the_product(
    dtype, accumulate, parts, a_layout, b_layout, slice_depth
):
    """Deeper than DEEP, one BLAS call per DEPTH_SLICE of the inner dimension (the last one
    shorter), each adding into the output, or one call (slice depth 0, as on MKL): cut and
    uncut, into a fresh output and added to one, and through the whole-product call."""
    depth = gemm.DEEP + gemm.DEPTH_SLICE + gemm.DEPTH_SLICE // 3  # three slices, one short
    rng = np.random.default_rng(2)
    a = _layouts(rng.standard_normal((5, depth)).astype(dtype))[a_layout]
    b = _layouts(rng.standard_normal((depth, 6)).astype(dtype))[b_layout]
    start = rng.standard_normal((5, 6)).astype(dtype) if accumulate else np.zeros((5, 6), dtype)
    exact = start.astype(np.float64) + a.astype(np.float64) @ b.astype(np.float64)
    scale = TOLERANCE[dtype] * np.abs(a).sum(1).max() * np.abs(b).max()
    out = start[None].copy() if accumulate else np.full((1, 5, 6), np.nan, dtype)
    assert gemm.product(
        a[None], b[None], out, parts, False, accumulate=accumulate, slice_depth=slice_depth
    )
    np.testing.assert_allclose(out[0], exact, rtol=0, atol=scale)
    whole = start.copy() if accumulate else np.full((5, 6), np.nan, dtype)
    one, beta = dtype(1), dtype(1 if accumulate else 0)
    address = gemm.ADDRESSES[np.dtype(dtype)]
    assert gemm.whole_product(address, a, b, whole, one, beta, slice_depth)
    np.testing.assert_allclose(whole, exact, rtol=0, atol=scale)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("parts, by_columns", [(0, False), (1, False), (3, False), (3, True)])
@pytest.mark.parametrize("deep", [False, True])
def test_products_that_start_from_a_bias_row_equal_the_product_plus_the_bias(
    dtype, parts, by_columns, deep
):
    """A linear layer's product: each block's rows filled with the bias, then the product added
    (cut by rows or columns, in turn, whole; shallow and deeper than DEEP). Whatever ``out``
    held before is overwritten."""
    rng = np.random.default_rng(9)
    depth = gemm.DEEP + 7 if deep else 20
    a = rng.standard_normal((7, depth)).astype(dtype)
    weight = rng.standard_normal((11, depth)).astype(dtype)
    bias = rng.standard_normal(11).astype(dtype)
    exact = a.astype(np.float64) @ weight.T.astype(np.float64) + bias
    scale = TOLERANCE[dtype] * np.abs(a).sum(1).max() * np.abs(weight).max()
    out = np.full((1, 7, 11), np.nan, dtype)
    assert gemm.product(a[None], weight.T[None], out, parts, by_columns, bias=bias)
    np.testing.assert_allclose(out[0], exact, rtol=0, atol=scale)
    whole = np.full((7, 11), np.nan, dtype)
    one, zero = dtype(1), dtype(0)
    address, depth = gemm.ADDRESSES[np.dtype(dtype)], gemm.SLICE_DEPTH
    assert gemm.whole_product(address, a, weight.T, whole, one, zero, depth, bias)
    np.testing.assert_allclose(whole, exact, rtol=0, atol=scale)
    assert not gemm.product(a[None], weight.T[None], out, parts, by_columns, bias=bias[:5])


@pytest.mark.parametrize("entries, parts", [(6, 1), (2, 3)])
def test_stacks_by_entries_and_by_rows_of_each(entries, parts):
    rng = np.random.default_rng(1)
    a = rng.standard_normal((entries, 9, 11)).astype(np.float32)
    b = np.ascontiguousarray(rng.standard_normal((entries, 4, 11)).astype(np.float32))
    b = b.transpose(0, 2, 1)  # each entry the transpose of a row-major matrix
    out = np.empty((entries, 9, 4), np.float32)
    assert gemm.product(a, b, out, parts, False)
    np.testing.assert_allclose(out, np.matmul(a, b), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("parts", [0, 1, 2])
def test_stacks_of_two_batch_axes_are_read_through_their_strides(parts):
    """Attention's heads: (batch, heads, rows, columns) views of a (batch, rows, heads, columns)
    projection, whose two batch axes fold into one only as a copy, multiplied as they lie: in
    turn, one task per entry and entries cut in two, the right operand also transposed."""
    rng = np.random.default_rng(4)
    q = rng.standard_normal((3, 7, 2, 5)).astype(np.float32).transpose(0, 2, 1, 3)
    k = rng.standard_normal((3, 6, 2, 5)).astype(np.float32).transpose(0, 2, 1, 3)
    scores = np.full((3, 2, 7, 6), np.nan, np.float32)
    assert gemm.product(q, k.swapaxes(-1, -2), scores, parts, False)
    np.testing.assert_allclose(scores, np.matmul(q, k.swapaxes(-1, -2)), rtol=1e-5, atol=1e-5)
    out = np.full((3, 2, 7, 5), np.nan, np.float32)
    assert gemm.product(scores, k, out, parts, True)
    np.testing.assert_allclose(out, np.matmul(scores, k), rtol=1e-5, atol=1e-5)


def test_layouts_blas_cannot_take_are_refused():
    a = np.ones((4, 6), np.float32)
    out = np.zeros((1, 4, 3), np.float32)
    strided = np.ones((6, 6), np.float32)[:, ::2]  # no unit step along either axis
    assert not gemm.product(a[None], strided[None], out, 2, False)
    assert not gemm.product(a[None], np.ones((6, 3), np.float16)[None], out, 2, False)
    assert not gemm.product(a[None].astype(np.int64), np.ones((1, 6, 3), np.int64), out, 2, False)
    transposed_out = np.zeros((3, 4), np.float32).T[None]
    assert not gemm.product(a[None], np.ones((1, 6, 3), np.float32), transposed_out, 2, False)
    assert not gemm.product(a[None, :0], np.ones((1, 6, 3), np.float32), out[:, :0], 2, False)
    assert np.all(out == 0)


@pytest.mark.parametrize("parts", [0, 2])
def test_entries_not_aligned_to_their_dtype_are_refused(parts):
    """The layouts are read in the compiled loops: an operand whose matrices start off the
    dtype's alignment (a byte offset into a buffer) reaches no BLAS call, whole or cut."""
    raw = np.zeros(4 * 4 * 6 + 1, np.uint8)[1:].view(np.float32).reshape(1, 4, 6)
    assert not raw.flags.aligned
    out = np.zeros((1, 4, 3), np.float32)
    assert not gemm.product(raw, np.ones((1, 6, 3), np.float32), out, parts, False)
    wide = np.zeros((1, 3, 6), np.float32)
    assert not gemm.product(np.ones((1, 3, 4), np.float32), raw, wide, parts, False)
    assert np.all(out == 0) and np.all(wide == 0)


@pytest.mark.parametrize("parts", [0, 1])
def test_a_bias_row_starts_every_entry_of_a_stack(parts):
    rng = np.random.default_rng(4)
    a = rng.standard_normal((3, 5, 8)).astype(np.float32)
    b = rng.standard_normal((3, 8, 6)).astype(np.float32)
    bias = rng.standard_normal(6).astype(np.float32)
    out = np.full((3, 5, 6), np.nan, np.float32)
    assert gemm.product(a, b, out, parts, False, bias=bias)
    np.testing.assert_allclose(out, np.matmul(a, b) + bias, rtol=1e-5, atol=1e-5)


@pytest.fixture
def one_pool(monkeypatch, small_products_routed):
    """Two threads in one pool, every product cut; yields the calls that reached numba."""
    from buildingai.accel import products

    monkeypatch.setattr(products, "SPLIT_MULTIPLY_ADDS", 0)
    monkeypatch.setattr(compiled, "MIN_PARALLEL_WORK", 0)
    calls = []
    product = gemm.product

    def spy(a, b, out, parts, by_columns, accumulate=False, bias=None):
        calls.append((a.shape, parts, by_columns))
        return product(a, b, out, parts, by_columns, accumulate, bias)

    monkeypatch.setattr(gemm, "product", spy)
    monkeypatch.setitem(compiled._twins, "gemm.product", spy)
    bai.set_num_threads(2, gemm=True)
    yield calls
    bai.set_num_threads(None)


def test_matmul_and_linear_gradients_run_on_numba_threads(one_pool):
    assert_linear_and_its_gradients(seed=2)
    rng = np.random.default_rng(2)
    assert len(one_pool) >= 3  # forward and both gradients
    stack = rng.standard_normal((5, 8, 20)).astype(np.float32)
    got = (bai.tensor(stack) @ bai.tensor(stack.transpose(0, 2, 1).copy())).numpy()
    np.testing.assert_allclose(got, stack @ stack.transpose(0, 2, 1), rtol=1e-5, atol=1e-4)
    assert one_pool[-1] == ((5, 8, 20), 1, False)  # whole matrices per thread


def test_two_threads_multiply_at_once_on_numba_threads(one_pool):
    rng = np.random.default_rng(3)
    a = rng.standard_normal((64, 48)).astype(np.float32)
    b = rng.standard_normal((48, 40)).astype(np.float32)
    expected = a @ b
    with ThreadPoolExecutor(2) as pool:
        results = list(pool.map(lambda _: (bai.tensor(a) @ bai.tensor(b)).numpy(), range(16)))
    for result in results:
        np.testing.assert_allclose(result, expected, rtol=1e-5, atol=1e-5)
    assert one_pool  # at least the calls from outside numba's threads were cut


@pytest.fixture(params=["openblas", "mkl"])
def own_blas_pool(request, accel_on):
    """One pool on acceleration's own BLAS, each library in turn (the ``blas.mkl`` switch picks
    MKL or the copy of OpenBLAS); skipped where that one is not installed."""
    from buildingai.accel import own_blas
    from buildingai.backend import threads

    previous = bai.accel.set_enabled("blas.mkl", request.param == "mkl")
    bai.accel.enable(quiet=True)  # the switch takes effect here
    try:
        library = own_blas.library()
        if not compiled.own_blas_ready() or library is None or library.name != request.param:
            pytest.skip(f"no {request.param} of BuildingAI's own: pip install 'buildingai[mkl]'")
        bai.set_num_threads(2, gemm=True)
        assert threads.own_blas()
        yield threads
    finally:
        bai.set_num_threads(None)
        bai.accel.set_enabled("blas.mkl", previous)
        bai.accel.enable(quiet=True)


def test_deep_products_are_sliced_on_openblas_and_whole_on_mkl(own_blas_pool):
    """OpenBLAS's own blocking sums longer chains than PyTorch's BLAS: there a deep product is
    cut into DEPTH_SLICE-deep calls. MKL is PyTorch's BLAS: there it is one call, whose float32
    result is the single call's, bit for bit, at every depth."""
    from buildingai.accel import own_blas

    library = own_blas.library()
    sliced = library.name != "mkl"
    in_use = gemm.SLICE_DEPTH  # set when the library was loaded
    assert in_use == (gemm.DEPTH_SLICE if sliced else 0)
    rng = np.random.default_rng(6)
    a = rng.standard_normal((48, 3 * gemm.DEPTH_SLICE + 16)).astype(np.float32)
    b = rng.standard_normal((a.shape[1], 40)).astype(np.float32)
    address, one, zero = gemm.ADDRESSES[a.dtype], np.float32(1), np.float32(0)
    whole, routed = np.empty((48, 40), np.float32), np.empty((1, 48, 40), np.float32)
    assert gemm.whole_product(address, a, b, whole, one, zero, 0)
    assert gemm.product(a[None], b[None], routed, 0, False)
    assert np.array_equal(routed[0], whole) != sliced  # sliced sums round differently


def test_uncut_products_numpy_would_thread_run_on_its_own_blas(own_blas_pool, monkeypatch):
    from buildingai.accel import products

    calls = []
    product = gemm.product

    def spy(a, b, out, parts, by_columns, accumulate=False, bias=None):
        calls.append(parts)
        return product(a, b, out, parts, by_columns, accumulate, bias)

    def whole(address, a, b, out, alpha, beta, slice_depth, bias):  # products.py's uncut call
        calls.append(0)
        return gemm.whole_product(address, a, b, out, alpha, beta, slice_depth, bias)

    monkeypatch.setitem(compiled._twins, "gemm.product", spy)
    monkeypatch.setitem(products._whole, "call", whole)
    monkeypatch.setattr(own_blas_pool, "_blas", {"last": -np.inf})
    rng = np.random.default_rng(4)
    a = rng.standard_normal((64, 96)).astype(np.float32)  # 64 * 96 * 80 multiply-adds: above
    b = rng.standard_normal((96, 80)).astype(np.float32)  # NumPy's threading, below the cut
    assert products.BLAS_THREADED_MULTIPLY_ADDS < a.size * 80 < products.SPLIT_MULTIPLY_ADDS
    np.testing.assert_allclose((bai.tensor(a) @ bai.tensor(b)).numpy(), a @ b, rtol=1e-5, atol=1e-4)
    assert calls == [0]  # one call on the calling thread
    small = np.ones((8, 8), np.float32)
    (bai.tensor(small) @ bai.tensor(small)).numpy()
    assert calls == [0]  # NumPy runs small products on one thread: they stay NumPy's
    assert not own_blas_pool.blas_spinning()  # NumPy's threads were never woken
    row = rng.standard_normal((1, 4096)).astype(np.float32)  # a matrix of OWN_GEMV_ELEMENTS
    weights = rng.standard_normal((4096, 256)).astype(np.float32)
    assert weights.size >= products.OWN_GEMV_ELEMENTS
    got = (bai.tensor(row) @ bai.tensor(weights)).numpy()
    np.testing.assert_allclose(got, row @ weights, rtol=1e-4, atol=1e-3)
    assert calls == [0]  # a matrix-vector product: one GEMV, faster than a one-row GEMM,
    assert not own_blas_pool.blas_spinning()  # ...on its own BLAS too


def test_beside_numpys_blas_at_one_thread_mkl_takes_the_products_too_small_to_cut(
    own_blas_pool, monkeypatch
):
    """With NumPy's BLAS at one thread, a product too small to cut stays NumPy's where the own
    BLAS is a copy of OpenBLAS (no faster, and its call costs more), and goes to MKL, which
    runs such products faster, where MKL is the own BLAS."""
    from threadpoolctl import threadpool_limits

    from buildingai.accel import own_blas, products

    calls = []

    def whole(address, a, b, out, alpha, beta, slice_depth, bias):
        calls.append(a.shape)
        return gemm.whole_product(address, a, b, out, alpha, beta, slice_depth, bias)

    monkeypatch.setitem(products._whole, "call", whole)
    rng = np.random.default_rng(5)
    a = rng.standard_normal((32, 64)).astype(np.float32)  # an LSTMCell(64, 128)'s input gates
    b = rng.standard_normal((64, 512)).astype(np.float32)
    assert products.BLAS_THREADED_MULTIPLY_ADDS < a.size * 512 < products.SPLIT_MULTIPLY_ADDS
    with threadpool_limits(1, user_api="blas"):
        got = (bai.tensor(a) @ bai.tensor(b)).numpy()
    np.testing.assert_allclose(got, a @ b, rtol=1e-5, atol=1e-4)
    assert calls == ([(32, 64)] if own_blas.library().name == "mkl" else [])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(
    "layout", ["plain", "a transposed", "b transposed", "b sliced", "a misaligned"]
)
def test_a_whole_product_on_its_own_blas_equals_numpy(own_blas_pool, dtype, layout):
    """products.py's own uncut call, its operands row-major, transposed or strided, into a new
    array and into ``out``; an operand BLAS cannot read falls back to the general path."""
    from buildingai.accel import products

    rng = np.random.default_rng(7)
    a = rng.standard_normal((64, 96)).astype(dtype)
    b = rng.standard_normal((96, 80)).astype(dtype)
    if layout == "a transposed":
        a = np.ascontiguousarray(a.T).T
    elif layout == "b transposed":
        b = np.ascontiguousarray(b.T).T
    elif layout == "b sliced":
        b = rng.standard_normal((96, 160)).astype(dtype)[:, ::2]
    elif layout == "a misaligned":  # the elements start one byte into a buffer
        buffer = np.empty(a.nbytes + 1, np.uint8)
        a = np.frombuffer(buffer[1:].data, dtype).reshape(a.shape)
        a[...] = rng.standard_normal(a.shape)
        assert not a.flags.aligned
    tolerance = {"rtol": 1e-5, "atol": 1e-4} if dtype == np.float32 else {"rtol": 1e-12}
    got = products._whole_on_own_blas(a, b, None)
    if layout in ("b sliced", "a misaligned"):
        assert got is None  # a column step of two elements, or an odd address: no BLAS call
        got = products._dot(a, b)
    np.testing.assert_allclose(got, a @ b, **tolerance)
    out = np.full((64, 80), np.nan, dtype)
    assert products._dot(a, b, out=out) is out
    np.testing.assert_allclose(out, a @ b, **tolerance)


def test_a_batch_one_linear_layer_is_cut_by_the_weights_rows(own_blas_pool, monkeypatch):
    """A linear layer on one sample with a weight of OWN_GEMV_ELEMENTS: one GEMV per block of
    the weight's rows, on as many of numba's threads as are free."""
    from buildingai.accel import products

    parts = []
    matrix_vector = gemm.matrix_vector

    def spy(a, b, out, count=1):
        parts.append(count)
        return matrix_vector(a, b, out, count)

    monkeypatch.setitem(compiled._twins, "gemm.matrix_vector", spy)
    monkeypatch.setattr(own_blas_pool, "_blas", {"last": -np.inf})
    rng = np.random.default_rng(6)
    x = rng.standard_normal((1, 4096)).astype(np.float32)
    weight = rng.standard_normal((256, 4096)).astype(np.float32)
    bias = rng.standard_normal(256).astype(np.float32)
    assert weight.size >= products.OWN_GEMV_ELEMENTS
    with bai.no_grad():
        got = bai.nn.functional.linear(bai.tensor(x), bai.tensor(weight), bai.tensor(bias))
    np.testing.assert_allclose(got.numpy(), x @ weight.T + bias, rtol=1e-4, atol=1e-3)
    assert parts == [compiled.thread_count(x.size + weight.size)]


@pytest.mark.parametrize("parts", [1, 2, 3])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("a_shape, b_shape", [((1, 300), (300, 70)), ((70, 300), (300, 1)),
                                              ((1, 1), (1, 5)), ((5, 1), (1, 1)),
                                              ((2, 300), (300, 1))])  # fmt: skip
def test_matrix_vector_products_equal_numpy(own_blas_pool, dtype, a_shape, b_shape, parts):
    """One GEMV, or one per block of the matrix's rows (fewer rows than parts included)."""
    assert gemm.GEMV_ADDRESSES
    rng = np.random.default_rng(5)
    a = rng.standard_normal(a_shape).astype(dtype)
    b = rng.standard_normal(b_shape).astype(dtype)
    for left in (a, np.asfortranarray(a), _layouts(a)["window"]):
        for right in (b, np.asfortranarray(b), _layouts(b)["window"]):
            out = np.full((a_shape[0], b_shape[1]), np.nan, dtype)
            assert gemm.matrix_vector(left, right, out, parts)
            np.testing.assert_allclose(out, a @ b, rtol=1e-5, atol=1e-4)
    assert not gemm.matrix_vector(a[:, :0], b[:0], np.empty((a_shape[0], b_shape[1]), dtype))


def test_optimizer_sums_run_on_its_own_blas(own_blas_pool, monkeypatch):
    from buildingai.accel import vector_blas

    if not vector_blas.available():
        pytest.skip("NumPy's BLAS has no axpby")
    monkeypatch.setattr(own_blas_pool, "_blas", {"last": -np.inf})
    x = np.full(1 << 16, 2.0, np.float32)
    y = np.full(1 << 16, 1.0, np.float32)
    vector_blas.axpby(np, 0.5, x, 3.0, y)
    np.testing.assert_array_equal(y, np.full(1 << 16, 4.0, np.float32))
    assert vector_blas._own()  # bound from the copy held at one thread
    assert not own_blas_pool.blas_spinning()


def test_the_whole_product_refuses_what_blas_cannot_write():
    """``gemm.whole_product`` writes only a row-major ``out`` (a transposed one would need
    CBLAS's column-major call) and multiplies nothing empty: it says False and leaves out as
    it was."""
    address = gemm.ADDRESSES[np.dtype(np.float32)]
    one, zero, depth = np.float32(1.0), np.float32(0.0), gemm.SLICE_DEPTH
    a, b = np.ones((4, 3), np.float32), np.ones((3, 5), np.float32)
    out = np.full((5, 4), np.nan, np.float32).T  # (4, 5), column steps of 16 bytes
    assert not gemm.whole_product(address, a, b, out, one, zero, depth)
    assert np.isnan(out).all()
    empty, nothing = np.ones((4, 0), np.float32), np.ones((0, 5), np.float32)
    assert not gemm.whole_product(address, empty, nothing, out.T.T, one, zero, depth)
    done = np.full((4, 5), np.nan, np.float32)
    assert gemm.whole_product(address, a, b, done, one, zero, depth)
    np.testing.assert_array_equal(done, np.full((4, 5), 3.0, np.float32))

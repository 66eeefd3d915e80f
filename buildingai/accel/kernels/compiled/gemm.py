"""Matrix products on BuildingAI's threads: one single-threaded BLAS call per block of rows,
columns or stacked matrices, all launched in one parallel loop on numba's threads.

In one pool (``set_num_threads(n, gemm=True)``, or the default while acceleration is on)
BuildingAI's threads run the products (``accel/products.py`` routes them here). Handing parts to
Python threads costs a round trip of tens of microseconds through the interpreter; here numba's
threads, the pool the compiled kernels already run on, each call a CBLAS ``gemm``, so a product
costs one parallel-loop launch more than a single call.

Which BLAS: acceleration's own (``accel/own_blas.py``: MKL or a copy of OpenBLAS) held at one
thread, so that NumPy's BLAS keeps its threads for the program's own products (``OWN_BLAS``),
once :func:`use` is given it; else the one NumPy calls (found in NumPy's extension module),
which one pool then holds at one thread through threadpoolctl. All are 64-bit-integer CBLAS
(``scipy_cblas_sgemm64_``, ``cblas_sgemm_64``); where none is found, ``ADDRESSES`` is empty and
the products stay on the Python threads. This module is imported only while acceleration is
enabled.

The NumPy reference is ``a @ b``: each part is the same BLAS routine on a block of the output,
on OpenBLAS a product deeper than ``DEEP`` one call per slice of its inner dimension (more
accurate than its own blocking: see ``DEPTH_SLICE``); on MKL, PyTorch's BLAS, one call.
"""

from __future__ import annotations

import ctypes
import functools

import numpy as np
from llvmlite import ir
from numba import njit, prange, types
from numba.extending import intrinsic

from ... import own_blas
from ...own_blas import NO_TRANSPOSE, ROW_MAJOR, TRANSPOSE

_NAMES = ("scipy_cblas_{}64_", "cblas_{}64_")  # NumPy's wheels' 64-bit integer CBLAS
_ONE = {np.dtype(np.float32): np.float32(1.0), np.dtype(np.float64): np.float64(1.0)}
_ZERO = {np.dtype(np.float32): np.float32(0.0), np.dtype(np.float64): np.float64(0.0)}


@functools.cache
def _numpy_library():
    """NumPy's extension module, through which its BLAS's symbols resolve."""
    try:
        from numpy._core import _multiarray_umath as umath
    except ImportError:  # NumPy 1.x
        from numpy.core import _multiarray_umath as umath
    return ctypes.CDLL(umath.__file__)


def _addresses(find, routine: str = "gemm") -> dict:
    """{dtype: address of ``cblas_?<routine>``} for float32 and float64, where ``find`` (a
    routine's name -> function or None) finds it."""
    found = {}
    for dtype, letter in ((np.dtype(np.float32), "s"), (np.dtype(np.float64), "d")):
        function = find(letter + routine)
        if function is not None:
            found[dtype] = ctypes.cast(function, ctypes.c_void_p).value
    return found


def _numpy_routine(name: str):
    """NumPy's BLAS's CBLAS routine ``name``, or None."""
    library = _numpy_library()
    for naming in _NAMES:
        function = getattr(library, naming.format(name), None)
        if function is not None:
            return function
    return None


# The BLAS the products call: ``use`` sets these (the own BLAS, or NumPy's where it is None)
OWN_BLAS = False
ADDRESSES = _addresses(_numpy_routine)
GEMV_ADDRESSES: dict = {}  # only on a BLAS held at one thread


def use(library) -> bool:
    """Have the products call ``library`` (an ``own_blas.Library``, held at one thread), or
    NumPy's BLAS where it is None or lacks a routine; returns whether the own one is used."""
    global OWN_BLAS, ADDRESSES, GEMV_ADDRESSES, SLICE_DEPTH
    own = library is not None and len(_addresses(library.routine)) == 2
    OWN_BLAS = own
    SLICE_DEPTH = 0 if own and library.name == "mkl" else DEPTH_SLICE
    ADDRESSES = _addresses(library.routine if own else _numpy_routine)
    GEMV_ADDRESSES = _addresses(library.routine, "gemv") if own else {}
    return own


@intrinsic
def _call_gemm(typing_context, address, transpose_a, transpose_b, m, n, k, alpha, a, lda, b,
               ldb, beta, c, ldc):  # fmt: skip
    """``cblas_?gemm(RowMajor, transpose_a, transpose_b, m, n, k, alpha, a, lda, b, ldb, beta,
    c, ldc)`` through the function at ``address``; a, b, c are addresses; alpha's type (float32
    or float64, beta's the same) picks sgemm's or dgemm's signature."""
    signature = types.void(address, transpose_a, transpose_b, m, n, k, alpha, a, lda, b, ldb,
                           beta, c, ldc)  # fmt: skip

    def codegen(context, builder, signature, arguments):
        address, transpose_a, transpose_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc = arguments
        real = context.get_value_type(signature.args[6])
        pointer = real.as_pointer()
        i32, i64 = ir.IntType(32), ir.IntType(64)
        function_type = ir.FunctionType(
            ir.VoidType(),
            [i32, i32, i32, i64, i64, i64, real, pointer, i64, pointer, i64, real, pointer, i64],
        )
        function = builder.inttoptr(address, function_type.as_pointer())
        builder.call(
            function,
            [
                ir.Constant(i32, ROW_MAJOR),
                builder.trunc(transpose_a, i32),
                builder.trunc(transpose_b, i32),
                m, n, k, alpha,
                builder.inttoptr(a, pointer), lda,
                builder.inttoptr(b, pointer), ldb,
                beta,
                builder.inttoptr(c, pointer), ldc,
            ],
        )  # fmt: skip
        return context.get_dummy_value()

    return signature, codegen


# Products deeper than ``DEEP``: one BLAS call per ``DEPTH_SLICE``-deep slice, each added into
# the output, so every entry sums chains at most that long (nearer float64 than OpenBLAS's own
# deeper blocking; figures in docs/design_notes/performance.md). MKL is PyTorch's own BLAS: one
# MKL call has PyTorch's float32 error, so on MKL a product is one call at any depth.
DEPTH_SLICE = 256
DEEP = 512
# The slices the products use, set by ``use``: DEPTH_SLICE, or 0 for one call at any depth (MKL)
SLICE_DEPTH = DEPTH_SLICE


@njit(nogil=True, cache=True)
def _gemm(address, transpose_a, transpose_b, m, n, k, one, a, lda, b, ldb, beta, c, ldc, size,
          slice_depth):  # fmt: skip
    """``_call_gemm`` with alpha ``one`` (1 of the product's dtype), a product deeper than
    ``DEEP`` in ``slice_depth``-deep slices (0: one call); ``size`` is the bytes of one entry."""
    if k <= DEEP or slice_depth == 0:
        _call_gemm(address, transpose_a, transpose_b, m, n, k, one, a, lda, b, ldb, beta, c, ldc)
        return
    for start in range(0, k, slice_depth):
        depth = min(slice_depth, k - start)
        # slice ``start`` of op(a)'s columns and op(b)'s rows, in their storage
        a_at = a + (start * lda if transpose_a == TRANSPOSE else start) * size
        b_at = b + (start if transpose_b == TRANSPOSE else start * ldb) * size
        _call_gemm(address, transpose_a, transpose_b, m, n, depth, one, a_at, lda, b_at, ldb,
                   beta if start == 0 else one, c, ldc)  # fmt: skip


@intrinsic
def _call_gemv(typing_context, address, transpose, m, n, alpha, a, lda, x, incx, y, incy):
    """``cblas_?gemv(RowMajor, transpose, m, n, alpha, a, lda, x, incx, 0, y, incy)`` through
    the function at ``address``; a, x, y are addresses; alpha's type picks s or d."""
    signature = types.void(address, transpose, m, n, alpha, a, lda, x, incx, y, incy)

    def codegen(context, builder, signature, arguments):
        address, transpose, m, n, alpha, a, lda, x, incx, y, incy = arguments
        real = context.get_value_type(signature.args[4])
        pointer = real.as_pointer()
        i32, i64 = ir.IntType(32), ir.IntType(64)
        function_type = ir.FunctionType(
            ir.VoidType(),
            [i32, i32, i64, i64, real, pointer, i64, pointer, i64, real, pointer, i64],
        )
        function = builder.inttoptr(address, function_type.as_pointer())
        builder.call(
            function,
            [
                ir.Constant(i32, ROW_MAJOR), builder.trunc(transpose, i32), m, n, alpha,
                builder.inttoptr(a, pointer), lda, builder.inttoptr(x, pointer), incx,
                ir.Constant(real, 0.0), builder.inttoptr(y, pointer), incy,
            ],
        )  # fmt: skip
        return context.get_dummy_value()

    return signature, codegen


@njit(nogil=True, cache=True)
def _gemv_call(address, matrix, vector, out, plan, alpha):
    """One gemv: plan is (transpose, rows, columns, leading dimension, vector step, out step)."""
    transpose, rows, columns, leading, vector_step, out_step = plan
    _call_gemv(address, transpose, rows, columns, alpha, matrix.ctypes.data, leading,
               vector.ctypes.data, vector_step, out.ctypes.data, out_step)  # fmt: skip


@njit(parallel=True, nogil=True, cache=True)
def _gemv_tasks(address, matrix, vector, out, plan, alpha, parts):
    """``_gemv_call`` of an untransposed plan cut into ``parts`` blocks of the matrix's rows
    (and of out's entries), one task each on numba's threads."""
    transpose, rows, columns, leading, vector_step, out_step = plan
    size = matrix.itemsize
    for part in prange(parts):
        start = rows * part // parts
        stop = rows * (part + 1) // parts
        if stop > start:
            _call_gemv(address, transpose, stop - start, columns, alpha,
                       matrix.ctypes.data + start * leading * size, leading, vector.ctypes.data,
                       vector_step, out.ctypes.data + start * out_step * size, out_step)  # fmt: skip


def matrix_vector(a, b, out, parts: int = 1) -> bool:
    """out (m, n) = a (m, k) @ b (k, n) where m or n is 1, as one ``gemv`` of BuildingAI's own
    BLAS on the calling thread (a one-row GEMM is several times slower), or with ``parts`` > 1
    and the matrix stored row by row (a linear layer's weight), one per block of its rows on
    numba's threads: each thread reads only its rows. False, having done nothing, where the
    library, the dtypes or the layout do not fit."""
    address = GEMV_ADDRESSES.get(a.dtype)
    (m, k), n = a.shape, b.shape[1]
    if address is None or b.dtype != a.dtype or out.dtype != a.dtype or 0 in (m, n, k):
        return False
    size = a.itemsize
    if m == 1:  # out[0] = b^T a[0]: b is the matrix, a's row the vector
        matrix, rows, columns, vector, step, flip = b, k, n, a, a.strides[1], True
        out_step = out.strides[1]
    elif n == 1:  # out[:, 0] = a b[:, 0]
        matrix, rows, columns, vector, step, flip = a, m, k, b, b.strides[0], False
        out_step = out.strides[0]
    else:
        return False
    found = own_blas.layout(matrix, rows, columns)
    if found is None or step % size or out_step % size or step <= 0 or out_step <= 0:
        return False
    transpose, leading = found
    if transpose == TRANSPOSE:  # stored as (columns, rows) row-major: multiply by its transpose
        rows, columns, flip = columns, rows, not flip
    own_blas.hold_at_one_thread()
    plan = (TRANSPOSE if flip else NO_TRANSPOSE, rows, columns, leading, step // size,
            out_step // size)  # fmt: skip
    if parts > 1 and plan[0] == NO_TRANSPOSE:
        _gemv_tasks(address, matrix, vector, out, plan, _ONE[a.dtype], parts)
    else:
        _gemv_call(address, matrix, vector, out, plan, _ONE[a.dtype])
    return True


@njit(inline="always")
def _entry_offsets(matrices, entry):
    """The byte offset of entry ``entry`` of (groups, entries, rows, columns) ``matrices``,
    counting entries across groups."""
    group, index = divmod(entry, matrices.shape[1])
    return group * matrices.strides[0] + index * matrices.strides[1]


@njit(inline="always")
def _fill(out, row_start, row_stop, column_start, column_stop, bias):
    """out[rows, columns] = bias[columns] for a 2-D ``out``: a block's rows made the bias."""
    for row in range(row_start, row_stop):
        for column in range(column_start, column_stop):
            out[row, column] = bias[column]


@njit(inline="always")
def _steps_layout(row_step, column_step, size, rows, columns):
    """(CBLAS transpose flag, leading dimension) of a matrix whose rows lie ``row_step`` bytes
    apart and columns ``column_step`` (elements ``size`` bytes): row-major or the transpose of
    a row-major one; (0, 0) where neither (no unit step along either axis)."""
    if column_step == size and row_step % size == 0 and row_step // size >= max(columns, 1):
        return NO_TRANSPOSE, row_step // size
    if row_step == size and column_step % size == 0 and column_step // size >= max(rows, 1):
        return TRANSPOSE, column_step // size
    return 0, 0


@njit(inline="always")
def _layout_of(matrix, rows, columns):
    """``own_blas.layout`` of a 2-D ``matrix`` in compiled code, with its alignment checked:
    (CBLAS transpose flag, leading dimension), or (0, 0) where it does not fit a BLAS call."""
    size = matrix.itemsize
    if matrix.ctypes.data % size:
        return 0, 0
    return _steps_layout(matrix.strides[0], matrix.strides[1], size, rows, columns)


@njit(inline="always")
def _stack_layout(stack, rows, columns):
    """``_layout_of`` for every matrix of a (groups, entries, rows, columns) ``stack``: each
    entry aligned to its dtype as well."""
    size = stack.itemsize
    if stack.ctypes.data % size or stack.strides[0] % size or stack.strides[1] % size:
        return 0, 0
    return _steps_layout(stack.strides[2], stack.strides[3], size, rows, columns)


@njit(inline="always")
def _stack_layouts(a, b, out):
    """(transpose a, lda, transpose b, ldb, ldc) of ``a @ b`` into ``out``, (groups, entries,
    ...) stacks, with ``ldc`` 0 where some layout does not fit a BLAS call (``out`` must be
    row-major) or the product is empty."""
    m, k = a.shape[2], a.shape[3]
    n = b.shape[3]
    transpose_a, lda = _stack_layout(a, m, k)
    transpose_b, ldb = _stack_layout(b, k, n)
    transpose_out, ldc = _stack_layout(out, m, n)
    if lda == 0 or ldb == 0 or transpose_out != NO_TRANSPOSE or m * n * k == 0:
        ldc = 0
    return transpose_a, lda, transpose_b, ldb, ldc


@njit(parallel=True, nogil=True, cache=True)
def _product_tasks(address, a, b, out, one, beta, parts, by_columns, slice_depth, bias=None):
    """out[g, e] = op(a[g, e]) @ op(b[g, e]) + beta out[g, e] for each entry of (groups,
    entries, ...) stacks, each cut into ``parts`` blocks of rows (of columns, ``by_columns``);
    one task per (entry, block) on numba's threads; ``one`` is 1 of the dtype. The layouts
    (``_stack_layouts``) are read off the strides here: False, having done nothing, where
    they do not fit. With a ``bias`` (n,), each task first fills its block's rows with it and
    adds the product to them (beta 1): the block is still in cache when the product adds into
    it."""
    transpose_a, lda, transpose_b, ldb, ldc = _stack_layouts(a, b, out)
    if ldc == 0:
        return False
    m, k = a.shape[2], a.shape[3]
    n = b.shape[3]
    size = a.itemsize
    for task in prange(a.shape[0] * a.shape[1] * parts):
        entry = task // parts
        part = task - entry * parts
        a_at = a.ctypes.data + _entry_offsets(a, entry)
        b_at = b.ctypes.data + _entry_offsets(b, entry)
        out_at = out.ctypes.data + _entry_offsets(out, entry)
        extent = n if by_columns else m
        start = extent * part // parts
        stop = extent * (part + 1) // parts
        if stop == start:
            continue
        block_beta = beta
        if bias is not None:
            group, index = divmod(entry, out.shape[1])
            if by_columns:
                _fill(out[group, index], 0, m, start, stop, bias)
            else:
                _fill(out[group, index], start, stop, 0, n, bias)
            block_beta = one
        if by_columns:  # columns of op(b) are its storage's rows when b is transposed
            b_at += (start * ldb if transpose_b == TRANSPOSE else start) * size
            _gemm(address, transpose_a, transpose_b, m, stop - start, k, one, a_at, lda,
                  b_at, ldb, block_beta, out_at + start * size, ldc, size, slice_depth)  # fmt: skip
        else:
            a_at += (start if transpose_a == TRANSPOSE else start * lda) * size
            _gemm(address, transpose_a, transpose_b, stop - start, n, k, one, a_at, lda, b_at,
                  ldb, block_beta, out_at + start * ldc * size, ldc, size, slice_depth)  # fmt: skip
    return True


@njit(nogil=True, cache=True)
def _products_in_turn(address, a, b, out, one, beta, slice_depth, bias=None):
    """out[g, e] = op(a[g, e]) @ op(b[g, e]) + beta out[g, e] (+ ``bias``), one BLAS call per
    entry of (groups, entries, ...) stacks (a deep product: one per slice) on the calling
    thread; False, having done nothing, where the layouts do not fit (``_stack_layouts``)."""
    transpose_a, lda, transpose_b, ldb, ldc = _stack_layouts(a, b, out)
    if ldc == 0:
        return False
    m, k = a.shape[2], a.shape[3]
    n = b.shape[3]
    for entry in range(a.shape[0] * a.shape[1]):
        out_at = out.ctypes.data + _entry_offsets(out, entry)
        entry_beta = beta
        if bias is not None:
            group, index = divmod(entry, out.shape[1])
            _fill(out[group, index], 0, m, 0, n, bias)
            entry_beta = one
        _gemm(address, transpose_a, transpose_b, m, n, k, one,
              a.ctypes.data + _entry_offsets(a, entry), lda,
              b.ctypes.data + _entry_offsets(b, entry), ldb, entry_beta,
              out_at, ldc, a.itemsize, slice_depth)  # fmt: skip
    return True


@njit(nogil=True, cache=True)
def whole_product(address, a, b, out, one, beta, slice_depth, bias=None):
    """out = a @ b + beta out for 2-D arrays of one float dtype in one BLAS call (a deep product:
    one per ``slice_depth``-deep slice, ``_gemm``) on the calling thread, the layouts read off
    the strides here (a product's own checks in Python cost a third of one of 2^19
    multiply-adds); ``one`` is 1 of the dtype. With a ``bias`` (n,), out = a @ b + bias, each row filled with it first. False,
    having done nothing, where a layout does not fit."""
    m, k = a.shape
    n = b.shape[1]
    transpose_a, lda = _layout_of(a, m, k)
    transpose_b, ldb = _layout_of(b, k, n)
    transpose_out, ldc = _layout_of(out, m, n)
    if lda == 0 or ldb == 0 or transpose_out != NO_TRANSPOSE or m * n * k == 0:
        return False
    if bias is not None:
        _fill(out, 0, m, 0, n, bias)
        beta = one
    _gemm(address, transpose_a, transpose_b, m, n, k, one, a.ctypes.data, lda,
          b.ctypes.data, ldb, beta, out.ctypes.data, ldc, a.itemsize, slice_depth)  # fmt: skip
    return True


def product(
    a, b, out, parts: int, by_columns: bool, accumulate: bool = False, bias=None, slice_depth=None
) -> bool:
    """out = a @ b for (entries, m, k) and (entries, k, n) NumPy arrays of one float dtype, out
    (entries, m, n) with unit column steps, or for stacks of two batch axes, (groups, entries,
    m, k) and so on, read through their strides (a model's heads: (batch, heads, ...) views
    that no reshape to one batch axis takes without a copy): cut into ``parts`` blocks per
    entry (of rows, or of columns with ``by_columns``; a block per entry is enough when there
    are many entries) on numba's threads, or with ``parts`` 0 one call per entry on the calling
    thread; with ``accumulate``, out += a @ b, the sum in the BLAS call (its beta); with a
    ``bias`` (n,) of the dtype, out = a @ b + bias, each block's rows filled with the bias by
    the thread that then adds its product into them; a product deeper than ``DEEP`` in
    ``slice_depth``-deep slices (0: one call; None: ``SLICE_DEPTH``, the BLAS's). Returns False,
    having done nothing, when the layout or dtype does not fit a BLAS call (the layouts are
    read in the compiled loops, where checking them costs no Python steps)."""
    if a.ndim == 3:  # one batch axis: a single group
        a, b, out = a[None], b[None], out[None]
    dtype = a.dtype
    address = ADDRESSES.get(dtype)
    if address is None or b.dtype != dtype or out.dtype != dtype:
        return False
    if bias is not None and (bias.shape != b.shape[3:] or bias.dtype != dtype):
        return False
    if OWN_BLAS:
        own_blas.hold_at_one_thread()
    one = _ONE[dtype]
    beta = one if accumulate else _ZERO[dtype]
    if slice_depth is None:
        slice_depth = SLICE_DEPTH
    if parts == 0:
        return _products_in_turn(address, a, b, out, one, beta, slice_depth, bias)
    return _product_tasks(address, a, b, out, one, beta, parts, by_columns, slice_depth, bias)

"""Matrix products cut across numba's threads: one single-threaded BLAS call per part, all
launched in one parallel loop.

In one pool (``set_num_threads(n, gemm=True)``) BLAS runs on one thread and BuildingAI's threads
cut each large product between them. Handing the parts to Python threads costs a round trip of
tens of microseconds through the interpreter; here numba's threads, the pool the compiled
kernels already run on, call the CBLAS function NumPy itself calls (found in NumPy's own BLAS
library), so a product costs one parallel-loop launch more than a single call.

The NumPy reference is ``a @ b``: each part is the same BLAS routine on a block of rows, of
columns, or of the matrices of a stack. NumPy's wheels bring OpenBLAS with 64-bit integers
(``scipy_cblas_sgemm64_``); where NumPy's BLAS has no such function, ``ADDRESSES`` is empty and
the products stay on the Python threads (``ops/linalg.py``).
"""

from __future__ import annotations

import ctypes

import numpy as np
from llvmlite import ir
from numba import njit, prange, types
from numba.extending import intrinsic

ROW_MAJOR, NO_TRANSPOSE, TRANSPOSE = 101, 111, 112  # CBLAS's enumerations
_NAMES = ("scipy_cblas_{}gemm64_", "cblas_{}gemm64_")  # 64-bit integer CBLAS, as NumPy's wheels


def _gemm_addresses() -> dict:
    """{dtype: address of NumPy's ``cblas_?gemm``} for float32 and float64, where found."""
    try:
        from numpy._core import _multiarray_umath as umath
    except ImportError:  # NumPy 1.x
        from numpy.core import _multiarray_umath as umath
    library = ctypes.CDLL(umath.__file__)  # its symbols and those of the BLAS it links
    found = {}
    for dtype, letter in ((np.dtype(np.float32), "s"), (np.dtype(np.float64), "d")):
        for name in _NAMES:
            function = getattr(library, name.format(letter), None)
            if function is not None:
                found[dtype] = ctypes.cast(function, ctypes.c_void_p).value
                break
    return found


ADDRESSES = _gemm_addresses()


@intrinsic
def _call_gemm(typing_context, address, transpose_a, transpose_b, m, n, k, alpha, a, lda, b,
               ldb, c, ldc):  # fmt: skip
    """``cblas_?gemm(RowMajor, transpose_a, transpose_b, m, n, k, alpha, a, lda, b, ldb, 0, c,
    ldc)`` through the function at ``address``; a, b, c are addresses; alpha's type (float32 or
    float64) picks sgemm's or dgemm's signature."""
    signature = types.void(address, transpose_a, transpose_b, m, n, k, alpha, a, lda, b, ldb,
                           c, ldc)  # fmt: skip

    def codegen(context, builder, signature, arguments):
        address, transpose_a, transpose_b, m, n, k, alpha, a, lda, b, ldb, c, ldc = arguments
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
                ir.Constant(real, 0.0),
                builder.inttoptr(c, pointer), ldc,
            ],
        )  # fmt: skip
        return context.get_dummy_value()

    return signature, codegen


@njit(parallel=True, nogil=True, cache=True)
def _product_loop(address, transposes, sizes, alpha, a, b, c, strides, entries, parts, by_columns):
    """``entries`` products c[e] = op(a[e]) @ op(b[e]), each cut into ``parts`` blocks of rows
    (or of columns, ``by_columns``); one task per (entry, block) on numba's threads.

    transposes: (transpose a, transpose b) as CBLAS enumerations; sizes: (m, n, k, lda, ldb,
    ldc, itemsize); strides: the element steps between entries of a, b and c; a, b, c: the
    addresses of the first entries."""
    m, n, k, lda, ldb, ldc, itemsize = sizes
    transpose_a, transpose_b = transposes
    for task in prange(entries * parts):
        entry = task // parts
        part = task - entry * parts
        a_at = a + entry * strides[0] * itemsize
        b_at = b + entry * strides[1] * itemsize
        c_at = c + entry * strides[2] * itemsize
        extent = n if by_columns else m
        start = extent * part // parts
        stop = extent * (part + 1) // parts
        if stop == start:
            continue
        if by_columns:  # columns of op(b) are its storage's rows when b is transposed
            b_at += (start * ldb if transpose_b == TRANSPOSE else start) * itemsize
            _call_gemm(address, transpose_a, transpose_b, m, stop - start, k, alpha, a_at, lda,
                       b_at, ldb, c_at + start * itemsize, ldc)  # fmt: skip
        else:
            a_at += (start if transpose_a == TRANSPOSE else start * lda) * itemsize
            _call_gemm(address, transpose_a, transpose_b, stop - start, n, k, alpha, a_at, lda,
                       b_at, ldb, c_at + start * ldc * itemsize, ldc)  # fmt: skip


def _layout(matrices, rows: int, columns: int):
    """(CBLAS transpose flag, leading dimension) of the last two axes of ``matrices``, a
    (..., rows, columns) array, as a row-major matrix or the transpose of one; None when its
    elements are not laid out so (a stride other than one element along both axes)."""
    size = matrices.itemsize
    row_step, column_step = matrices.strides[-2], matrices.strides[-1]
    if column_step == size and row_step % size == 0 and row_step // size >= max(columns, 1):
        return NO_TRANSPOSE, row_step // size
    if row_step == size and column_step % size == 0 and column_step // size >= max(rows, 1):
        return TRANSPOSE, column_step // size
    return None


def product(a, b, out, parts: int, by_columns: bool) -> bool:
    """out = a @ b for (entries, m, k) and (entries, k, n) NumPy arrays of one float dtype, out
    (entries, m, n) with unit column steps, cut into ``parts`` blocks per entry (of rows, or of
    columns with ``by_columns``; a block per entry is enough when there are many entries).
    Returns False, having done nothing, when the layout or dtype does not fit a BLAS call."""
    address = ADDRESSES.get(a.dtype)
    entries, m, k = a.shape
    n = b.shape[2]
    if address is None or b.dtype != a.dtype or out.dtype != a.dtype or 0 in (m, n, k):
        return False
    layouts = _layout(a, m, k), _layout(b, k, n), _layout(out, m, n)
    if None in layouts or layouts[2][0] != NO_TRANSPOSE:
        return False
    if not (a.flags.aligned and b.flags.aligned and out.flags.aligned):
        return False
    size = a.itemsize
    strides = np.array([array.strides[0] // size for array in (a, b, out)], np.int64)
    if any(array.strides[0] % size for array in (a, b, out)):
        return False
    (transpose_a, lda), (transpose_b, ldb), (_, ldc) = layouts
    alpha = a.dtype.type(1.0)
    _product_loop(
        address,
        np.array([transpose_a, transpose_b], np.int64),
        np.array([m, n, k, lda, ldb, ldc, size], np.int64),
        alpha,
        a.ctypes.data,
        b.ctypes.data,
        out.ctypes.data,
        strides,
        entries,
        parts,
        by_columns,
    )
    return True

"""A copy of OpenBLAS of BuildingAI's own, held at one thread: the library the products of one
pool (``set_num_threads(n, gemm=True)``) call from BuildingAI's threads.

One pool cuts each large product into single-threaded BLAS calls, one per thread. Holding
NumPy's OpenBLAS at one thread for that would hold the program's own NumPy products on one core
as well, process-wide. The ``scipy-openblas64`` wheel (``pip install buildingai[fast]``) ships
the same OpenBLAS NumPy's wheels bundle, as a library of its own: loaded here, it is a second
copy with a thread count of its own, set to one, and NumPy's BLAS keeps its threads.

:func:`library` returns the loaded ``ctypes.CDLL`` or None where the wheel is not installed;
its symbols are 64-bit-integer CBLAS with a ``scipy_`` prefix (``scipy_cblas_sgemm64_``).
"""

from __future__ import annotations

import ctypes
import functools
import glob
import os

import numpy as np

ROW_MAJOR, NO_TRANSPOSE, TRANSPOSE = 101, 111, 112  # CBLAS's enumerations


@functools.cache
def library():
    """scipy-openblas64's OpenBLAS, loaded and held at one thread; None where not installed."""
    try:
        import scipy_openblas64
    except ImportError:
        return None
    name = f"lib{scipy_openblas64.get_library()}.*"
    found = sorted(glob.glob(os.path.join(scipy_openblas64.get_lib_dir(), name)))
    if not found:
        return None
    try:
        loaded = ctypes.CDLL(found[0])
        loaded.scipy_openblas_set_num_threads64_(ctypes.c_int(1))
        loaded.scipy_openblas_get_num_threads64_.restype = ctypes.c_int
    except (OSError, AttributeError):  # another platform's file, or another naming
        return None
    return loaded


def hold_at_one_thread(loaded) -> None:
    """Set ``loaded`` (:func:`library`'s) back to one thread: threadpoolctl's limits, which
    reach every OpenBLAS in the process, may have raised it."""
    loaded.scipy_openblas_set_num_threads64_(_ONE)


_ONE = ctypes.c_int(1)


def layout(matrices, rows: int, columns: int):
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


@functools.cache
def _gemv(dtype):
    """The library's ``cblas_?gemv`` for float32 or float64, with its argument types."""
    loaded = library()
    letter, real = {np.dtype(np.float32): ("s", ctypes.c_float),
                    np.dtype(np.float64): ("d", ctypes.c_double)}[dtype]  # fmt: skip
    function = getattr(loaded, f"scipy_cblas_{letter}gemv64_")
    integer, pointer, enum = ctypes.c_int64, ctypes.c_void_p, ctypes.c_int
    function.argtypes = (enum, enum, integer, integer, real, pointer, integer, pointer, integer,
                         real, pointer, integer)  # fmt: skip
    function.restype = None
    return function


def matrix_vector(a, b, out) -> bool:
    """out (m, n) = a (m, k) @ b (k, n) where m or n is 1, as one ``gemv`` on the calling
    thread (a one-row GEMM is several times slower). Float32/float64 NumPy arrays of one dtype;
    False, having done nothing, where the library or the layout does not fit."""
    loaded = library()
    (m, k), n = a.shape, b.shape[1]
    if loaded is None or a.dtype not in (np.float32, np.float64) or 0 in (m, n, k):
        return False
    if b.dtype != a.dtype or out.dtype != a.dtype or not (m == 1 or n == 1):
        return False
    size = a.itemsize
    if m == 1:  # out[0] = b^T a[0]: b is the matrix, a's row the vector
        matrix, (rows, columns), vector = b, (k, n), (a, a.strides[1])
        flip = True
        result_step = out.strides[1]
    else:  # out[:, 0] = a b[:, 0]
        matrix, (rows, columns), vector = a, (m, k), (b, b.strides[0])
        flip = False
        result_step = out.strides[0]
    found = layout(matrix, rows, columns)
    if found is None or vector[1] % size or result_step % size or vector[1] <= 0:
        return False
    transpose, leading = found
    if transpose == TRANSPOSE:  # stored as (columns, rows) row-major: multiply by its transpose
        rows, columns, flip = columns, rows, not flip
    hold_at_one_thread(loaded)
    _gemv(a.dtype)(ROW_MAJOR, TRANSPOSE if flip else NO_TRANSPOSE, rows, columns, 1.0,
                   matrix.ctypes.data, leading, vector[0].ctypes.data, vector[1] // size, 0.0,
                   out.ctypes.data, result_step // size)  # fmt: skip
    return True

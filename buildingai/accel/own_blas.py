"""A copy of OpenBLAS of BuildingAI's own, held at one thread: the library the products of one
pool (``set_num_threads(n, gemm=True)``) call from BuildingAI's threads.

One pool cuts each large product into single-threaded BLAS calls, one per thread. Holding
NumPy's OpenBLAS at one thread for that would hold the program's own NumPy products on one core
as well, process-wide. The ``scipy-openblas64`` wheel (``pip install buildingai[fast]``) ships
the same OpenBLAS NumPy's wheels bundle, as a library of its own: loaded here, it is a second
copy with a thread count of its own, set to one, and NumPy's BLAS keeps its threads.

:func:`library` returns the loaded ``ctypes.CDLL`` or None where the wheel is not installed;
its symbols are 64-bit-integer CBLAS with a ``scipy_`` prefix (``scipy_cblas_sgemm64_``). It is
loaded only when acceleration is enabled with the ``blas.own_copy`` switch on
(``products.py``), never on import.
"""

from __future__ import annotations

import ctypes
import functools
import glob
import os

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


def numpy_blas_threads() -> int | None:
    """How many threads NumPy's OpenBLAS has now (threadpoolctl's limits change it), or None
    where NumPy calls another BLAS."""
    function = _numpy_thread_count()
    return None if function is None else function()


@functools.cache
def _numpy_thread_count():
    """NumPy's OpenBLAS's ``get_num_threads``, found through NumPy's extension module; None
    where it has none."""
    try:
        from numpy._core import _multiarray_umath as umath
    except ImportError:  # NumPy 1.x
        from numpy.core import _multiarray_umath as umath
    try:
        loaded = ctypes.CDLL(umath.__file__)
    except OSError:
        return None
    for name in ("scipy_openblas_get_num_threads64_", "openblas_get_num_threads64_"):
        function = getattr(loaded, name, None)
        if function is not None:
            function.restype = ctypes.c_int
            return function
    return None


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

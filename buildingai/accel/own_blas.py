"""A BLAS of BuildingAI's own, held at one thread: the library the products of one pool
(``set_num_threads(n, gemm=True)``) call from BuildingAI's threads.

One pool cuts each large product into single-threaded BLAS calls, one per thread. Holding
NumPy's OpenBLAS at one thread for that would hold the program's own NumPy products on one core
as well, process-wide. So the products go to a second library, with a thread count of its own:

- ``openblas``: the ``scipy-openblas64`` wheel (``pip install buildingai[fast]``), the OpenBLAS
  NumPy's wheels bundle, as a library of its own, set to one thread;
- ``mkl``: Intel's MKL from the ``mkl`` wheel (``pip install buildingai[mkl]``), its
  sequential threading layer (it starts no threads at all). Where it is installed and the
  ``blas.mkl`` switch is on (the default), it is the one used: its float32 products are the
  faster on CPUs with AVX-512 (``python -m benchmarks.products`` compares the two).

Both are CBLAS with 64-bit integers; :class:`Library` names each one's symbols
(``scipy_cblas_sgemm64_``, ``cblas_sgemm_64``). :func:`choose` loads the library when
acceleration is enabled with the ``blas.own_copy`` switch on (``products.py``), never on
import; :func:`library` returns the one chosen, or None.
"""

from __future__ import annotations

import ctypes
import functools
import glob
import importlib.metadata
import os
from typing import NamedTuple

ROW_MAJOR, NO_TRANSPOSE, TRANSPOSE = 101, 111, 112  # CBLAS's enumerations
_MKL_SEQUENTIAL = 1  # MKL_Set_Threading_Layer's MKL_THREADING_SEQUENTIAL


class Library(NamedTuple):
    """A loaded BLAS of BuildingAI's own: its name (``"openblas"`` or ``"mkl"``), the
    ``ctypes.CDLL``, and how its 64-bit-integer CBLAS symbols are spelt (``prefix`` + routine
    + ``suffix``)."""

    name: str
    handle: ctypes.CDLL
    prefix: str
    suffix: str

    def routine(self, name: str):
        """The CBLAS routine ``name`` (``"sgemm"``, ``"daxpby"``...), or None where missing."""
        return getattr(self.handle, f"{self.prefix}{name}{self.suffix}", None)


# The library chosen, and its set_num_threads where it has threads to hold at one
_chosen: dict = {"library": None, "hold": None}


def choose(prefer_mkl: bool) -> Library | None:
    """Load the own BLAS (MKL where ``prefer_mkl`` and it is installed, else OpenBLAS) and make
    it the one :func:`library` returns; None, and no own BLAS, where neither is installed."""
    found = (prefer_mkl and mkl()) or openblas()
    hold = (
        found.handle.scipy_openblas_set_num_threads64_
        if found and found.name == "openblas"
        else None
    )
    _chosen.update(library=found, hold=hold)
    return found


def choose_none() -> None:
    """No own BLAS: :func:`library` returns None (the libraries stay loaded for later)."""
    _chosen.update(library=None, hold=None)


def library() -> Library | None:
    """The own BLAS :func:`choose` loaded last, or None."""
    return _chosen["library"]


@functools.cache
def openblas() -> Library | None:
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
    return Library("openblas", loaded, "scipy_cblas_", "64_")


@functools.cache
def mkl() -> Library | None:
    """The ``mkl`` wheel's single-library MKL (``libmkl_rt``) on its sequential threading
    layer, chosen before any other MKL call; None where the wheel is not installed."""
    path = mkl_path()
    if path is None:
        return None
    try:
        loaded = ctypes.CDLL(path)
        loaded.MKL_Set_Threading_Layer(ctypes.c_int(_MKL_SEQUENTIAL))
    except (OSError, AttributeError):
        return None
    found = Library("mkl", loaded, "cblas_", "_64")
    return found if found.routine("sgemm") is not None else None


def mkl_path() -> str | None:
    """Where the ``mkl`` wheel put ``libmkl_rt`` (under the environment's ``lib``), or None
    where the wheel is not installed."""
    try:
        files = importlib.metadata.distribution("mkl").files or []
    except importlib.metadata.PackageNotFoundError:
        return None
    for file in files:
        if file.name.startswith("libmkl_rt."):
            path = str(file.locate())
            if os.path.exists(path):
                return path
    return None


def hold_at_one_thread() -> None:
    """Set the own OpenBLAS back to one thread: threadpoolctl's limits, which reach every
    OpenBLAS in the process, may have raised it (MKL's sequential layer has no threads)."""
    hold = _chosen["hold"]
    if hold is not None:
        hold(_ONE)


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

"""OpenBLAS's parallel jobs on numba's threads: one thread pool for the matrix products and the
compiled twins, as PyTorch has one intra-op pool.

OpenBLAS splits a large product into jobs, one per thread, that wait for each other's packed
panels. Run on its own threads, those threads then spin on their cores for about 0.1 s after
every product, and a compiled twin that needs both cores (the direct convolutions) waits for
them (``docs/design_notes/performance.md``). OpenBLAS (0.3.27 and later, pthreads builds) lets
a program run the jobs instead: ``openblas_set_threads_callback_function`` takes a C function
that receives them. Here that function is a numba ``cfunc`` that runs every job of a call at
once in one parallel loop on numba's threads, whose idle spin is short (``compiled``'s
``SPIN_COUNT``). The products keep OpenBLAS's own partitioning and speed.

Every job of a call must run at the same time (they wait on each other), so the loop runs on as
many threads as there are jobs; ``install`` holds OpenBLAS's thread count at or below numba's.
"""

from __future__ import annotations

import ctypes
import os

import numba
import numpy as np
from llvmlite import ir
from numba import cfunc, njit, prange, types
from numba.extending import intrinsic

_NAMES = [  # the setter, as NumPy's scipy-openblas builds and plain OpenBLAS builds export it
    f"{prefix}openblas_set_threads_callback_function{suffix}"
    for prefix in ("scipy_", "")
    for suffix in ("64_", "", "_64")
]
MAX_THREADS = numba.config.NUMBA_NUM_THREADS


@intrinsic
def _run_job(typing_context, job, thread, data, extra):
    """Call OpenBLAS's ``void job(int thread, void *data, int extra)``."""
    signature = types.void(types.voidptr, types.int32, types.voidptr, types.int32)

    def codegen(context, builder, signature, arguments):
        job_type = ir.FunctionType(
            ir.VoidType(), [ir.IntType(32), ir.IntType(8).as_pointer(), ir.IntType(32)]
        )
        function = builder.bitcast(arguments[0], job_type.as_pointer())
        builder.call(function, arguments[1:])
        return context.get_dummy_value()

    return signature, codegen


@intrinsic
def _advance(typing_context, pointer, offset):
    """``(char *) pointer + offset``."""
    signature = types.voidptr(types.voidptr, types.intp)

    def codegen(context, builder, signature, arguments):
        return builder.gep(arguments[0], [arguments[1]])

    return signature, codegen


@njit(parallel=True, nogil=True)
def _run_jobs(job, count, size, data, extra):
    for index in prange(count):
        _run_job(job, np.int32(index), _advance(data, index * size), extra)


@cfunc(types.void(types.int32, types.voidptr, types.int32, types.uintp, types.voidptr,
                  types.int32), nogil=True)  # fmt: skip
def _callback(sync, job, count, size, data, extra):
    """OpenBLAS's threads callback: run ``count`` jobs, each ``size`` bytes of ``data``."""
    previous = numba.get_num_threads()
    numba.set_num_threads(min(count, MAX_THREADS))  # all at once: they wait for each other
    _run_jobs(job, count, np.intp(size), data, extra)
    numba.set_num_threads(previous)


def _setter():
    """(the callback setter of NumPy's OpenBLAS, None) or (None, why not)."""
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return None, "threadpoolctl is not installed (pip install threadpoolctl)"
    libraries = [pool for pool in threadpool_info() if pool["internal_api"] == "openblas"]
    if not libraries:
        return None, "NumPy's BLAS is not OpenBLAS"
    library = libraries[0]
    if library.get("threading_layer") != "pthreads":
        return None, f"OpenBLAS uses {library.get('threading_layer')} threads, not pthreads"
    loaded = ctypes.CDLL(library["filepath"])
    for name in _NAMES:
        setter = getattr(loaded, name, None)
        if setter is not None:
            setter.argtypes, setter.restype = [ctypes.c_void_p], None
            return setter, None
    return None, f"OpenBLAS {library.get('version')} has no threads callback (0.3.27 or later)"


_installed = {"setter": None}


def install():
    """Hand OpenBLAS's jobs to numba's threads; returns None, or why it could not."""
    from . import _numba

    if _numba() is None:  # starts numba's threads with the short spin
        return "numba is not importable (pip install numba)"
    if numba.threading_layer() not in ("omp", "tbb"):
        return f"numba's {numba.threading_layer()} threading layer cannot run two loops at once"
    setter, reason = _setter()
    if setter is None:
        return reason
    setter(ctypes.c_void_p(_callback.address))
    _installed["setter"] = setter
    return None


def uninstall() -> None:
    """OpenBLAS runs its jobs on its own threads again."""
    setter = _installed["setter"]
    if setter is not None:
        setter(None)
        _installed["setter"] = None


if hasattr(os, "register_at_fork"):  # a forked child has no OpenMP threads to run jobs on
    os.register_at_fork(after_in_child=uninstall)

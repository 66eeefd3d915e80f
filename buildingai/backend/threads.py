"""Intra-op threads for large element-wise work on the CPU.

A NumPy ufunc runs on one core. NumPy releases the GIL inside its loops, though, so one large
element-wise op cut into contiguous ranges and run on a few threads uses every core, as PyTorch's
intra-op threads do. ``parallel_for`` is that cut; ops call it for arrays large enough that the
hand-off (waking a pool thread and collecting its result) is worth it. BLAS calls are not
affected: they have their own threads (threadpoolctl sets how many).

The thread count is process-wide, like ``torch.set_num_threads``, and it is 1 unless set: after
each BLAS call OpenBLAS's idle threads spin on their cores for a while before they sleep, so in
a GEMM-heavy training step extra element-wise threads find no free core (measurements:
docs/design_notes/performance.md). Raise it where BLAS runs single-threaded, or for
element-wise-heavy work: ``set_num_threads(n)``, or ``set_num_threads("all")`` for every core
this process may use.

``set_num_threads(n, gemm=True)`` makes one pool, as PyTorch's intra-op pool is: OpenBLAS hands
its parallel jobs to numba's threads (``ops/kernels/compiled/blas_pool.py``), which also run the
compiled twins. No BLAS thread is then left spinning after a product, so the twins, the direct
convolutions among them, get every core in a GEMM-heavy step.
"""

from __future__ import annotations

import math
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor

# Elements touched (all arrays of an op) below which the thread hand-off costs more than it saves.
MIN_PARALLEL_WORK = 1 << 19
# How long OpenBLAS's idle threads keep spinning on their cores after a call (2^28 cycles by
# default, about 0.1 s here): element-wise work split onto those cores meanwhile waits for them.
BLAS_SPIN_SECONDS = 0.15

_settings = {"count": None, "pool": None, "gemm": None}  # gemm: the _OnePool in force
_blas = {"last": -math.inf}  # perf_counter() of the last BLAS call noted
_lock = threading.Lock()
_inside = threading.local()  # set in pool threads: a nested parallel_for runs serially there


def set_num_threads(count: int | str | None, *, gemm: bool = False) -> None:
    """Use ``count`` threads (the caller plus ``count - 1`` pool threads) for large element-wise
    ops and optimizer updates; ``"all"`` means every core available to this process, ``None``
    the default, 1.

    ``gemm=True``: one pool. OpenBLAS's parallel jobs run on numba's threads too, and OpenBLAS's
    thread count is held at ``count`` (process-wide, through threadpoolctl) until a call with
    ``gemm=False`` gives BLAS back its own threads and count. Needs numba, threadpoolctl and
    NumPy's OpenBLAS 0.3.27 or later (``ops/kernels/compiled/blas_pool.py``, registered
    through ``provide_one_pool``).
    """
    if count == "all":
        count = available_cores()
    if count is not None and (not isinstance(count, int) or count < 1):
        raise ValueError(f"set_num_threads needs an int >= 1, 'all' or None, got {count!r}")
    with _lock:
        pool, held = _settings["pool"], _settings["gemm"]
        _settings.update(count=count, pool=None, gemm=None)
        try:
            if held is not None:
                held.release()
            if gemm:
                _settings["gemm"] = _OnePool(count or 1)  # raises with BLAS as it was
        finally:
            if pool is not None:
                pool.shutdown(wait=True)


_one_pool_start = {"start": None}  # provided by ops/kernels/compiled (a higher floor)


def provide_one_pool(start) -> None:
    """Register how one pool starts: ``start()`` hands BLAS's parallel jobs to the compiled
    tier's threads and returns ``(stop, most_threads)``: the function that gives BLAS its jobs
    back, and how many threads one call's jobs may use. ``ops/kernels/compiled`` registers it
    on import (this floor does not import that one); it raises ImportError or RuntimeError
    saying why where one pool cannot run."""
    _one_pool_start["start"] = start


class _OnePool:
    """BLAS's jobs on the compiled tier's threads, and OpenBLAS's thread count held at
    ``threads``."""

    def __init__(self, threads: int):
        what = "set_num_threads(..., gemm=True)"
        try:
            from threadpoolctl import threadpool_limits
        except ImportError:
            raise ImportError(f"{what} needs threadpoolctl: pip install threadpoolctl") from None
        start = _one_pool_start["start"]
        if start is None:
            raise RuntimeError(f"{what} needs buildingai.ops.kernels.compiled: import buildingai")
        try:
            self.stop, most = start()
        except ImportError as error:
            raise ImportError(f"{what} needs numba ({error}): pip install numba") from None
        except RuntimeError as error:
            raise RuntimeError(f"{what} cannot run BLAS on numba's threads: {error}") from None
        # OpenBLAS makes one job per thread, and every job must find a thread of its own
        self.limits = threadpool_limits(limits=min(threads, most), user_api="blas")

    def release(self) -> None:
        self.stop()
        self.limits.restore_original_limits()


def one_pool() -> bool:
    """Whether OpenBLAS's jobs run on numba's threads (``set_num_threads(..., gemm=True)``)."""
    return _settings["gemm"] is not None


def get_num_threads() -> int:
    """How many threads large element-wise work is split across."""
    count = _settings["count"]
    return 1 if count is None else count


def blas_called() -> None:
    """Note that a BLAS call (a GEMM, a long dot product) just ran on this process's BLAS
    threads. Call sites: ``ops/linalg``, ``ops/rnn``, ``ops/resize``, ``vector_blas``."""
    _blas["last"] = time.perf_counter()


def blas_spinning() -> bool:
    """Whether a BLAS call ran less than ``BLAS_SPIN_SECONDS`` ago, so that its idle threads
    may still hold the other cores: element-wise work then stays on the calling thread. In a
    training step that is every element-wise op; a second thread there measured up to 40x
    slower (docs/design_notes/performance.md). Never in one pool
    (``set_num_threads(..., gemm=True)``): BLAS's jobs then run on numba's threads, whose
    spin is short."""
    if _settings["gemm"] is not None:
        return False
    return time.perf_counter() - _blas["last"] < BLAS_SPIN_SECONDS


def available_cores() -> int:
    """The cores this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not every platform has sched_getaffinity
        return os.cpu_count() or 1


def executor(workers: int) -> ThreadPoolExecutor:
    """The shared pool, with at least ``workers`` threads."""
    with _lock:
        pool = _settings["pool"]
        if pool is None or pool._max_workers < workers:
            old, pool = pool, ThreadPoolExecutor(workers, thread_name_prefix="buildingai")
            _settings["pool"] = pool
        else:
            old = None
    if old is not None:
        old.shutdown(wait=False)
    return pool


def parallel_for(kernel, length: int, work: int | None = None) -> None:
    """Call ``kernel(start, stop)`` over ``[0, length)``, cut into one contiguous range per
    thread and run concurrently, and wait for all of them (an exception in any is re-raised).

    ``work`` is the number of elements the whole call touches (``length`` if omitted); below
    ``MIN_PARALLEL_WORK``, with one thread, or inside a pool thread, ``kernel(0, length)`` runs
    on the calling thread. Ranges must be independent: each kernel writes only its own range.
    """
    threads = get_num_threads()
    if work is None:
        work = length
    if (
        threads == 1
        or work < MIN_PARALLEL_WORK
        or length < 2
        or getattr(_inside, "flag", False)
        or blas_spinning()
    ):
        kernel(0, length)
        return
    threads = min(threads, length)
    bounds = [length * index // threads for index in range(threads + 1)]
    pool = executor(threads - 1)
    jobs = [
        pool.submit(_run_inside, kernel, bounds[index], bounds[index + 1])
        for index in range(1, threads)
    ]
    try:
        kernel(bounds[0], bounds[1])
    finally:
        for job in jobs:
            job.result()


def inside_pool() -> bool:
    """Whether the calling thread is one of the pool's (where nested work runs serially)."""
    return getattr(_inside, "flag", False)


def _run_inside(kernel, start: int, stop: int) -> None:
    _inside.flag = True
    try:
        kernel(start, stop)
    finally:
        _inside.flag = False

"""Intra-op threads for large element-wise work on the CPU.

A NumPy ufunc runs on one core. NumPy releases the GIL inside its loops, though, so one large
element-wise op cut into contiguous ranges and run on a few threads uses every core, as PyTorch's
intra-op threads do. ``parallel_for`` is that cut; ops call it for arrays large enough that the
hand-off (waking a pool thread and collecting its result) is worth it. BLAS calls are not
affected: they have their own threads (threadpoolctl sets how many).

The arrangement is process-wide, like ``torch.set_num_threads``. By default, where the compiled
tier has a BLAS of its own (``pip install buildingai[fast]``: numba and scipy-openblas64), it is
one pool on every core, PyTorch's arrangement: these threads (numba's for the compiled kernels)
run the element-wise work and the matrix products, each product cut into blocks of rows or
columns, one single-threaded call per thread to a copy of OpenBLAS held at one thread
(``ops/linalg``, ``compiled/gemm.py``, ``own_blas.py``). No BLAS thread is then left spinning
after a product, so the compiled twins, the direct convolutions among them, get every core in
a GEMM-heavy step, and NumPy's own BLAS keeps its threads for the program's products.

Without that library the default is one thread, and NumPy's BLAS threads the products: after
each call OpenBLAS's idle threads spin on their cores for a while before they sleep, so in a
GEMM-heavy step extra element-wise threads find no free core (measurements:
docs/design_notes/performance.md). ``set_num_threads(n, gemm=True)`` then holds NumPy's BLAS at
one thread (threadpoolctl) to make these threads the only pool; ``set_num_threads(n,
gemm=False)`` gives the products back to BLAS's threads in either case.
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

# gemm: None (BLAS threads the products), OWN_BLAS, or threadpoolctl's limits holding NumPy's
# BLAS; settled: whether the arrangement was set, or the default one chosen (on first use)
_settings = {"count": None, "pool": None, "gemm": None, "settled": False}
OWN_BLAS = "own BLAS"  # products on a BLAS library of BuildingAI's own, held at one thread
# Set by the compiled tier (``ops/kernels/compiled``): a function that says whether products can
# run on its BLAS of its own (loading it); the backend cannot import it.
own_blas_probe = [None]
_blas = {"last": -math.inf}  # perf_counter() of the last BLAS call noted
_lock = threading.Lock()
_inside = threading.local()  # set in pool threads: a nested parallel_for runs serially there


def set_num_threads(count: int | str | None, *, gemm: bool | None = None) -> None:
    """Use ``count`` threads (the caller plus ``count - 1`` pool threads) for large element-wise
    ops, optimizer updates and, in one pool, matrix products; ``"all"`` means every core
    available to this process, ``None`` the default arrangement (below).

    ``gemm``: who runs the matrix products.

    - ``True`` (one pool, PyTorch's arrangement): these threads, each part a single-threaded
      BLAS call, on a copy of OpenBLAS of BuildingAI's own where the compiled tier has one
      (``pip install buildingai[fast]``: numba and scipy-openblas64), so that NumPy's BLAS
      keeps its threads for the program's own products; else on NumPy's BLAS held at one
      thread (process-wide, through threadpoolctl: ``pip install threadpoolctl``).
    - ``False``: NumPy's BLAS on its own threads (given back the count it had).
    - ``None``: one pool where BuildingAI has a BLAS of its own, else ``False``.

    The default arrangement, until this is called (or after ``set_num_threads(None)``): one
    pool on every available core where BuildingAI has a BLAS of its own, else one thread with
    BLAS on its own threads (its idle threads would hold the other cores after each product).
    It is settled on first use, so that numba loads only then.
    """
    if count == "all":
        count = available_cores()
    if count is not None and (not isinstance(count, int) or count < 1):
        raise ValueError(f"set_num_threads needs an int >= 1, 'all' or None, got {count!r}")
    probe = own_blas_probe[0]
    own = gemm is not False and probe is not None and probe()
    with _lock:
        pool, held = _settings["pool"], _settings["gemm"]
        if own:
            arrangement = OWN_BLAS
        elif gemm:  # (already held: keep the limits that know BLAS's count)
            arrangement = held if held not in (None, OWN_BLAS) else _blas_on_one_thread()
        else:
            arrangement = None
        released = held if held not in (None, OWN_BLAS) and held is not arrangement else None
        settled = not (count is None and gemm is None)
        _settings.update(count=count, pool=None, gemm=arrangement, settled=settled)
    if pool is not None:
        pool.shutdown(wait=True)
    if released is not None:
        released.restore_original_limits()


def _settle() -> None:
    """Choose the default arrangement (see ``set_num_threads``) on first use."""
    probe = own_blas_probe[0]
    own = probe is not None and probe()  # outside the lock: it may import numba
    with _lock:
        if not _settings["settled"]:
            if own:
                _settings.update(count=_settings["count"] or available_cores(), gemm=OWN_BLAS)
            _settings["settled"] = True


def _blas_on_one_thread():
    """Limit BLAS to one thread; the returned threadpoolctl limits restore the previous count."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        raise ImportError(
            "set_num_threads(..., gemm=True) needs threadpoolctl: pip install threadpoolctl"
        ) from None
    return threadpool_limits(limits=1, user_api="blas")


def one_pool() -> bool:
    """Whether matrix products run on BuildingAI's threads (``set_num_threads(..., gemm=True)``)."""
    if not _settings["settled"]:
        _settle()
    return _settings["gemm"] is not None


def own_blas() -> bool:
    """Whether matrix products run on BuildingAI's own BLAS (one pool, with the compiled tier's
    library: NumPy's BLAS then keeps its threads)."""
    if not _settings["settled"]:
        _settle()
    return _settings["gemm"] is OWN_BLAS


def gemm_threads() -> int:
    """How many threads a large matrix product is cut across: ``get_num_threads()`` in one
    pool, else 1 (NumPy's BLAS threads it)."""
    return get_num_threads() if one_pool() else 1


def get_num_threads() -> int:
    """How many threads large element-wise work is split across."""
    if not _settings["settled"]:
        _settle()
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
    slower (docs/design_notes/performance.md). Never while NumPy's BLAS is held at one thread
    (one pool without a BLAS of BuildingAI's own): it then has no threads of its own. On
    BuildingAI's own BLAS only the calls that still reach NumPy's count (``blas_called``)."""
    if not _settings["settled"]:
        _settle()
    if _settings["gemm"] is not None and _settings["gemm"] is not OWN_BLAS:
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

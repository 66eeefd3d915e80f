"""Intra-op threads for large element-wise work on the CPU, and who runs the matrix products.

A NumPy ufunc runs on one core. NumPy releases the GIL inside its loops, though, so one large
element-wise op cut into contiguous ranges and run on a few threads uses every core, as PyTorch's
intra-op threads do. ``parallel_for`` is that cut; ops call it for arrays large enough that the
hand-off (waking a pool thread and collecting its result) is worth it.

The arrangement is process-wide, like ``torch.set_num_threads``. The default is one thread, and
NumPy's BLAS threads the matrix products itself: after each call OpenBLAS's idle threads spin on
their cores for a while before they sleep, so in a GEMM-heavy step extra element-wise threads
would find no free core (``blas_spinning``).

One pool (``set_num_threads(n, gemm=True)``, PyTorch's arrangement) gives the products to these
threads as well: ``buildingai.accel`` cuts each large product into single-threaded BLAS calls,
one per thread. Where acceleration is enabled with its own copy of OpenBLAS (``pip install
buildingai[fast]``), one pool on every core is the default arrangement and that copy runs the
products, so NumPy's BLAS keeps its threads for the program's own products
(``accel/products.py``); this module only keeps the arrangement, and loads nothing itself.
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

# count: None (the default) or the threads asked for; gemm: None (BLAS threads the products),
# OWN_BLAS, or threadpoolctl's limits holding NumPy's BLAS at one thread
_settings = {"count": None, "pool": None, "gemm": None}
OWN_BLAS = "own BLAS"  # products on a BLAS library of BuildingAI's own, held at one thread
_asked = {"count": None, "gemm": None}  # what set_num_threads was last asked
# What buildingai.accel offers while it is enabled (``offer``): a BLAS of its own, and one pool
# on every core as the default arrangement.
_offered = {"own_blas": False, "one_pool": False}
_blas = {"last": -math.inf}  # perf_counter() of the last BLAS call noted
_lock = threading.Lock()


class _PoolThread(threading.local):
    """Set in pool threads: a nested parallel_for runs serially there."""

    flag = False  # the class's value on threads that never set it: no raised lookup to read it


_inside = _PoolThread()


def set_num_threads(count: int | str | None, *, gemm: bool | None = None) -> None:
    """Use ``count`` threads (the caller plus ``count - 1`` pool threads) for large element-wise
    ops, optimizer updates and, in one pool, matrix products; ``"all"`` means every core
    available to this process, ``None`` the default count (below).

    ``gemm``: who runs the matrix products.

    - ``True`` (one pool, PyTorch's arrangement): these threads, each part a single-threaded
      BLAS call, cut by ``buildingai.accel`` while acceleration is enabled. They call
      acceleration's own copy of OpenBLAS where it has one (``pip install buildingai[fast]``),
      so that NumPy's BLAS keeps its threads for the program's own products; else NumPy's BLAS,
      held at one thread (process-wide, through threadpoolctl: ``pip install threadpoolctl``).
    - ``False``: NumPy's BLAS on its own threads (given back the count it had).
    - ``None``: the default: ``False``, or one pool where enabled acceleration offers it.

    The default arrangement, until this is called (or after ``set_num_threads(None)``): one
    thread, with NumPy's BLAS on its own threads. ``buildingai.accel.enable()`` makes it one
    pool on every available core where acceleration has a BLAS of its own (its
    ``threads.one_pool`` switch, listed by ``buildingai.accel.status()``).
    """
    if count == "all":
        count = available_cores()
    if count is not None and (not isinstance(count, int) or count < 1):
        raise ValueError(f"set_num_threads needs an int >= 1, 'all' or None, got {count!r}")
    _arrange({"count": count, "gemm": gemm}, _offered, new_pool=True)


def offer(*, own_blas: bool, one_pool: bool) -> None:
    """What ``buildingai.accel`` offers while it is enabled (both False when it is disabled):
    ``own_blas``, a BLAS of its own held at one thread for the products of one pool;
    ``one_pool``, one pool on every core as the default arrangement (``gemm=None``)."""
    _arrange(_asked, {"own_blas": own_blas, "one_pool": one_pool}, strict=False)


def _arrange(asked: dict, offered: dict, new_pool: bool = False, strict: bool = True) -> None:
    """Settle the arrangement ``asked`` (set_num_threads's count and gemm) under what
    acceleration ``offered``, releasing what the previous arrangement held. Not ``strict``:
    where NumPy's BLAS cannot be held at one thread (no threadpoolctl), it keeps its threads."""
    with _lock:
        count, gemm = asked["count"], asked["gemm"]
        default_pool = gemm is None and offered["one_pool"] and offered["own_blas"]
        pool, held = _settings["pool"], _settings["gemm"]
        if (gemm or default_pool) and offered["own_blas"]:
            arrangement = OWN_BLAS
        elif gemm:  # (already held: keep the limits that know BLAS's count)
            arrangement = held if held not in (None, OWN_BLAS) else _blas_on_one_thread(strict)
        else:
            arrangement = None
        if count is None and default_pool:
            count = available_cores()
        released = held if held not in (None, OWN_BLAS) and held is not arrangement else None
        new_pool = new_pool or count != _settings["count"]
        _asked.update(asked)
        _offered.update(offered)
        _settings.update(count=count, gemm=arrangement, pool=None if new_pool else pool)
    if new_pool and pool is not None:
        pool.shutdown(wait=True)
    if released is not None:
        released.restore_original_limits()


def _blas_on_one_thread(strict: bool = True):
    """Limit BLAS to one thread; the returned threadpoolctl limits restore the previous count.
    Without threadpoolctl: an error, or None (BLAS keeps its threads) when not ``strict``."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        if not strict:
            return None
        raise ImportError(
            "set_num_threads(..., gemm=True) needs threadpoolctl: pip install threadpoolctl"
        ) from None
    return threadpool_limits(limits=1, user_api="blas")


def one_pool() -> bool:
    """Whether matrix products run on BuildingAI's threads (``set_num_threads(..., gemm=True)``,
    or the default of enabled acceleration)."""
    return _settings["gemm"] is not None


def own_blas() -> bool:
    """Whether matrix products run on acceleration's own BLAS (one pool with its library:
    NumPy's BLAS then keeps its threads)."""
    return _settings["gemm"] is OWN_BLAS


def gemm_threads() -> int:
    """How many threads a large matrix product is cut across: ``get_num_threads()`` in one
    pool, else 1 (NumPy's BLAS threads it)."""
    return get_num_threads() if _settings["gemm"] is not None else 1


def get_num_threads() -> int:
    """How many threads large element-wise work is split across."""
    count = _settings["count"]
    return 1 if count is None else count


def blas_called() -> None:
    """Note that a BLAS call (a GEMM, a long dot product) just ran on NumPy's BLAS threads."""
    _blas["last"] = time.perf_counter()


def blas_spinning() -> bool:
    """Whether a BLAS call noted by ``blas_called`` ran less than ``BLAS_SPIN_SECONDS`` ago, so
    that its idle threads may still hold the other cores: element-wise work then stays on the
    calling thread. In a training step that is every element-wise op; a second thread there
    measured up to 40x slower (docs/design_notes/performance.md). Never while NumPy's BLAS is
    held at one thread (one pool without a BLAS of acceleration's own): it then has no threads
    of its own."""
    gemm = _settings["gemm"]
    if gemm is not None and gemm is not OWN_BLAS:
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
    if threads == 1 or work < MIN_PARALLEL_WORK or length < 2 or _inside.flag or blas_spinning():
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
    return _inside.flag


def _run_inside(kernel, start: int, stop: int) -> None:
    _inside.flag = True
    try:
        kernel(start, stop)
    finally:
        _inside.flag = False

"""parallel_for: every index once, errors re-raised, nested calls serial, thread-count checks."""

import threading

import pytest

import buildingai as bai
from buildingai.backend import threads


def test_every_index_is_covered_once_by_contiguous_ranges(three_threads):
    seen = []
    lock = threading.Lock()
    all_running = threading.Barrier(3, timeout=10)  # breaks unless three ranges run at once

    def kernel(start, stop):
        with lock:
            seen.append((start, stop))
        all_running.wait()

    threads.parallel_for(kernel, 10)
    assert sorted(seen) == [(0, 3), (3, 6), (6, 10)]


def test_small_work_runs_on_the_calling_thread(monkeypatch):
    bai.set_num_threads(2)
    calls = []
    threads.parallel_for(lambda a, b: calls.append((a, b, threading.current_thread())), 100)
    assert calls == [(0, 100, threading.current_thread())]
    bai.set_num_threads(None)


def test_an_error_in_a_pool_thread_is_raised_in_the_caller(three_threads):
    def kernel(start, stop):
        if start > 0:
            raise ValueError(f"bad range {start}")

    with pytest.raises(ValueError, match="bad range"):
        threads.parallel_for(kernel, 9)


def test_a_nested_parallel_for_runs_serially_inside_pool_threads(three_threads):
    inner = []

    def kernel(start, stop):
        threads.parallel_for(lambda a, b: inner.append((start, a, b)), 4)

    threads.parallel_for(kernel, 3)  # would deadlock if pool threads waited on the pool
    # the caller's range may split again; pool threads' ranges run whole
    assert sorted((a, b) for start, a, b in inner if start == 0)[-1][1] == 4
    assert {(start, a, b) for start, a, b in inner if start > 0} == {(1, 0, 4), (2, 0, 4)}


def _default_count() -> int:
    """The default thread count: every core in one pool where enabled acceleration has a BLAS
    of its own (numba and scipy-openblas64), else 1."""
    return threads.available_cores() if threads.own_blas() else 1


def test_thread_counts():
    bai.set_num_threads(1)
    assert bai.get_num_threads() == 1 == bai.optim.get_num_threads()
    bai.set_num_threads("all")
    assert bai.get_num_threads() == threads.available_cores()
    bai.set_num_threads(None)
    assert bai.get_num_threads() == _default_count()  # see the module's docstring
    with pytest.raises(ValueError, match="int >= 1"):
        bai.set_num_threads(0)


def test_after_a_blas_call_work_stays_on_the_calling_thread(three_threads, monkeypatch):
    monkeypatch.setattr(threads, "BLAS_SPIN_SECONDS", 60.0)
    threads.blas_called()  # OpenBLAS's idle threads now spin on the other cores
    calls = []
    threads.parallel_for(lambda a, b: calls.append((a, b)), 10)
    assert calls == [(0, 10)]
    monkeypatch.setattr(threads, "BLAS_SPIN_SECONDS", 0.0)  # the spin is over
    calls.clear()
    threads.parallel_for(lambda a, b: calls.append((a, b)), 10)
    assert len(calls) == 3


def test_products_note_their_blas_call(accel_on):
    """A product large enough for NumPy's BLAS to thread is noted (its threads may spin after
    it); a smaller one runs on the calling thread, wakes nothing and is not."""
    import numpy as np

    large = bai.tensor(np.ones((72, 72), np.float32))  # 72^3 multiply-adds > 2^18
    small = bai.tensor(np.ones((8, 8), np.float32))
    bai.set_num_threads(2, gemm=False)  # NumPy's BLAS on its own threads runs the products
    try:
        for a, noted in ((large, True), (small, False)):
            for product in (lambda a=a: a @ a, lambda a=a: bai.nn.functional.linear(a, a)):
                threads._blas["last"] = float("-inf")
                product()
                assert threads.blas_spinning() is noted
    finally:
        bai.set_num_threads(None)


# ----- GEMMs on BuildingAI's threads: set_num_threads(n, gemm=True) ----------------------------


def _blas_threads() -> int:
    from threadpoolctl import threadpool_info

    return min(lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas")


@pytest.fixture
def numpy_blas_held(accel_off):
    """One pool on NumPy's BLAS held at one thread, as where acceleration is off or has no BLAS
    of its own (no numba or no scipy-openblas64)."""


@pytest.fixture
def blas_of_its_own(accel_on):
    """One pool on acceleration's own copy of OpenBLAS; skipped where it has none."""
    if not threads.own_blas():
        pytest.skip("no BLAS of BuildingAI's own: pip install numba scipy-openblas64")


def test_gemm_mode_holds_blas_at_one_thread_and_gives_it_back(numpy_blas_held):
    pytest.importorskip("threadpoolctl")
    before = _blas_threads()
    bai.set_num_threads(2, gemm=True)
    try:
        assert _blas_threads() == 1
        assert threads.gemm_threads() == 2
        bai.set_num_threads(3, gemm=True)  # changing the count keeps the hold
        assert _blas_threads() == 1 and threads.gemm_threads() == 3
    finally:
        bai.set_num_threads(None)
    assert _blas_threads() == before
    assert threads.gemm_threads() == 1
    bai.set_num_threads(2, gemm=True)
    bai.set_num_threads(2)  # gemm=False: BLAS gets its threads back, the count stays
    assert _blas_threads() == before and bai.get_num_threads() == 2
    bai.set_num_threads(None)


def test_gemm_mode_on_its_own_blas_leaves_numpys_threads_alone(blas_of_its_own):
    pytest.importorskip("threadpoolctl")
    before = _blas_threads()
    bai.set_num_threads(2, gemm=True)
    try:
        assert threads.own_blas() and threads.one_pool()
        assert _blas_threads() == before  # the program's own NumPy products keep their threads
        assert threads.gemm_threads() == 2
        bai.set_num_threads(2, gemm=False)  # the products back on NumPy's BLAS threads
        assert not threads.own_blas() and threads.gemm_threads() == 1
    finally:
        bai.set_num_threads(None)
    assert _blas_threads() == before


def test_numpys_blas_still_spins_beside_its_own_blas(blas_of_its_own, monkeypatch):
    monkeypatch.setattr(threads, "BLAS_SPIN_SECONDS", 60.0)
    bai.set_num_threads(2, gemm=True)
    try:
        threads.blas_called()  # a call that did run on NumPy's threads (an RNN step, a resize)
        assert threads.blas_spinning()
    finally:
        bai.set_num_threads(None)


def test_no_blas_spin_while_blas_has_no_threads_of_its_own(numpy_blas_held, monkeypatch):
    pytest.importorskip("threadpoolctl")
    monkeypatch.setattr(threads, "BLAS_SPIN_SECONDS", 60.0)
    threads.blas_called()
    assert threads.blas_spinning()
    bai.set_num_threads(2, gemm=True)
    try:
        assert not threads.blas_spinning()
    finally:
        bai.set_num_threads(None)
    assert threads.blas_spinning()


def test_gemm_mode_without_threadpoolctl_names_the_package(numpy_blas_held, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "threadpoolctl", None)
    with pytest.raises(ImportError, match="pip install threadpoolctl"):
        bai.set_num_threads(2, gemm=True)
    assert threads.gemm_threads() == 1


def test_two_threads_switching_the_mode_leave_blas_as_it_was():
    pytest.importorskip("threadpoolctl")
    from concurrent.futures import ThreadPoolExecutor

    before = _blas_threads()

    def switch(index):
        for _ in range(20):
            bai.set_num_threads(2, gemm=index % 2 == 0)
            bai.set_num_threads(None)

    with ThreadPoolExecutor(2) as pool:
        list(pool.map(switch, range(4)))
    assert threads.gemm_threads() == _default_count()
    assert _blas_threads() == before


def test_the_default_loads_nothing_while_acceleration_is_off(accel_off):
    bai.set_num_threads(None)
    assert bai.get_num_threads() == 1 and not threads.one_pool() and not threads.own_blas()
    bai.set_num_threads(2)  # gemm=None: NumPy's BLAS keeps the products
    try:
        assert bai.get_num_threads() == 2 and not threads.one_pool()
    finally:
        bai.set_num_threads(None)


def test_acceleration_offers_one_pool_and_takes_it_back():
    with bai.accel.enabled(False):
        threads.offer(own_blas=True, one_pool=True)  # as accel.enable() does with its library
        try:
            assert threads.own_blas() and bai.get_num_threads() == threads.available_cores()
            bai.set_num_threads(2, gemm=False)  # the user's choice stands
            assert not threads.one_pool() and bai.get_num_threads() == 2
            bai.set_num_threads(3)
            assert threads.own_blas() and bai.get_num_threads() == 3
        finally:
            threads.offer(own_blas=False, one_pool=False)
            bai.set_num_threads(None)
        assert not threads.one_pool() and bai.get_num_threads() == 1

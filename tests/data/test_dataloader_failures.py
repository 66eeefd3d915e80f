"""DataLoader failure paths: nothing hangs, errors name the worker, and nothing leaks (worker
processes, shared-memory segments) after errors, interrupts, early exits or garbage collection."""

from __future__ import annotations

import contextlib
import gc
import os
import signal
import threading
import time

import pytest

from buildingai.data import DataLoader, DataLoaderError, DataLoaderTimeoutError
from buildingai.data import dataloader as dataloader_module

from ._datasets import Failing, Indexed, KillsItself, Sleeps
from .conftest import assert_clean, loader_segments


@pytest.fixture
def short_grace(monkeypatch):
    """For a worker stuck in a 30 s item: shutdown waits 0.1 s, not 1 s, for it to finish
    before it stops it (``_JOIN_GRACE_S``); the stopping is what these tests check."""
    monkeypatch.setattr(dataloader_module, "_JOIN_GRACE_S", 0.1)


@pytest.mark.parametrize("workers", [0, 2])
def test_worker_exception_keeps_type_message_and_worker_id(workers, clean):
    loader = DataLoader(Failing(12), batch_size=2, num_workers=workers)
    seen = []
    with pytest.raises(ValueError, match="item 7 is corrupt") as caught:
        for batch in loader:
            seen.extend(batch[1].tolist())
    assert seen == [0, 1, 2, 3, 4, 5]  # batches before the failing one still arrive in order
    if workers:
        assert "DataLoader worker 1" in str(caught.value)  # batch 3 -> worker 3 % 2
        assert caught.value.worker_id == 1
        assert "in __getitem__" in str(caught.value.__cause__)  # the worker's traceback
    assert_clean()


def test_exception_with_unusual_constructor_becomes_worker_error(clean):
    from buildingai.data import DataLoaderWorkerError

    class Picky(Exception):
        def __init__(self, a, b):
            super().__init__(f"{a}/{b}")

    def collate(items):
        raise Picky(1, 2)

    with pytest.raises(DataLoaderWorkerError, match=r"Picky: 1/2[\s\S]*DataLoader worker 0"):
        list(DataLoader(Indexed(4), batch_size=2, num_workers=1, collate_fn=collate))


def test_worker_init_fn_failure_surfaces(clean):
    def init(worker_id):
        raise RuntimeError(f"cannot open database in worker {worker_id}")

    with pytest.raises(RuntimeError, match="cannot open database") as caught:
        list(DataLoader(Indexed(4), batch_size=2, num_workers=1, worker_init_fn=init))
    assert "worker_init_fn" in str(caught.value)


@pytest.mark.parametrize("timeout", [0, 10])
def test_killed_worker_is_reported_quickly(timeout, clean):
    loader = DataLoader(KillsItself(20), batch_size=2, num_workers=2, timeout=timeout)
    start = time.monotonic()
    with pytest.raises(DataLoaderError, match=r"worker 0 \(pid \d+, killed by signal SIGKILL\)"):
        list(loader)
    assert time.monotonic() - start < 5
    assert_clean()


def test_worker_killed_from_outside(clean):
    loader = DataLoader(Sleeps(8, seconds=0.05), batch_size=1, num_workers=2)
    iterator = iter(loader)
    next(iterator)
    os.kill(iterator._pool.processes[1].pid, signal.SIGKILL)
    with pytest.raises(DataLoaderError, match="worker 1 .*SIGKILL"):
        list(iterator)
    assert_clean()


def test_timeout_raises(clean, short_grace):
    loader = DataLoader(Sleeps(4, seconds=30), batch_size=1, num_workers=1, timeout=0.5)
    start = time.monotonic()
    with pytest.raises(DataLoaderTimeoutError, match=r"timed out after 0.5 s waiting for batch 0"):
        next(iter(loader))
    assert time.monotonic() - start < 5  # the timeout plus a prompt shutdown of the sleeper
    assert_clean()


def test_timeout_in_thread_mode(short_grace):
    loader = DataLoader(Sleeps(4, seconds=2), batch_size=1, timeout=0.2, prefetch=2)
    with pytest.raises(DataLoaderTimeoutError, match="no batch within timeout=0.2 s"):
        next(iter(loader))


@pytest.mark.parametrize("workers", [0, 2])
def test_keyboard_interrupt_in_loop_body_shuts_down(workers, clean):
    loader = DataLoader(Indexed(40), batch_size=2, num_workers=workers)
    with pytest.raises(KeyboardInterrupt):
        for _ in loader:
            raise KeyboardInterrupt
    assert_clean()  # no gc.collect(): unwinding the loop alone releases the workers


def test_ctrl_c_while_waiting_for_a_batch(clean, short_grace):
    loader = DataLoader(Sleeps(4, seconds=30), batch_size=1, num_workers=2)
    timer = threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    start = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        for _ in loader:
            pass
    timer.join()
    assert time.monotonic() - start < 6
    assert_clean()


def test_breaking_out_early_shuts_down(clean):
    loader = DataLoader(Indexed(100), batch_size=2, num_workers=2)
    for index, _ in enumerate(loader):
        if index == 1:
            break
    assert_clean()


def test_abandoned_iterator_is_collected(clean):
    loader = DataLoader(Indexed(100), batch_size=2, num_workers=2)
    iterator = iter(loader)
    next(iterator)
    assert len(loader_segments()) > 0
    del iterator
    assert_clean()


def test_del_persistent_loader_shuts_down(clean):
    loader = DataLoader(Indexed(10), batch_size=2, num_workers=2, persistent_workers=True)
    assert len(list(loader)) == 5
    assert len(loader._pool.processes) == 2
    del loader
    gc.collect()  # the loader and its finished iterator may form a cycle
    assert_clean()


def test_stuck_worker_is_terminated_on_shutdown(clean, short_grace):
    loader = DataLoader(Sleeps(4, seconds=30), batch_size=1, num_workers=1)
    iterator = iter(loader)
    time.sleep(0.2)  # the worker is now inside a 30 s __getitem__
    start = time.monotonic()
    del iterator
    assert_clean()
    assert time.monotonic() - start < 5


_ORPHAN_PARENT = """
import sys, time
import numpy as np
from buildingai.data import DataLoader, Dataset

class Slow(Dataset):
    def __len__(self):
        return 400

    def __getitem__(self, index):
        time.sleep(0.1)
        return np.zeros((64, 64), np.float32)

iterator = iter(DataLoader(Slow(), batch_size=2, num_workers=2, prefetch=20))
next(iterator)
print(" ".join(str(p.pid) for p in iterator._pool.processes), flush=True)
time.sleep(60)
"""


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"  # a zombie has exited
    except FileNotFoundError:
        return False


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads process states from /proc")
def test_workers_exit_soon_after_the_main_process_is_killed():
    import subprocess
    import sys

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    parent = subprocess.Popen(
        [sys.executable, "-c", _ORPHAN_PARENT], stdout=subprocess.PIPE, text=True, env=env
    )
    try:
        pids = [int(pid) for pid in parent.stdout.readline().split()]
        assert len(pids) == 2
        parent.kill()  # SIGKILL: no cleanup runs in the main process
        parent.wait()
        # Each worker has ~20 queued batches of 0.2 s; it must stop after the one in hand.
        deadline = time.monotonic() + 4
        while any(_alive(pid) for pid in pids) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not any(_alive(pid) for pid in pids)
        if os.path.isdir("/dev/shm"):  # the workers unlinked their shared memory on the way out
            assert not [n for n in os.listdir("/dev/shm") if n.startswith(f"bai{parent.pid}_")]
    finally:
        parent.kill()
        parent.wait()
        for pid in pids if "pids" in locals() else []:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)

"""Guards for the data tests: a hard time limit per test (a hung DataLoader fails instead of
blocking the suite) and a check that no worker process or shared-memory segment outlives it."""

from __future__ import annotations

import gc
import multiprocessing
import os
import signal
import time

import pytest

TEST_TIME_LIMIT_S = 60


class HungTest(Exception):
    pass


@pytest.fixture(autouse=True)
def time_limit():
    def expire(signum, frame):
        raise HungTest(f"test exceeded {TEST_TIME_LIMIT_S} s: something hangs")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(TEST_TIME_LIMIT_S)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)


def loader_segments() -> list[str]:
    if not os.path.isdir("/dev/shm"):
        return []
    return [name for name in os.listdir("/dev/shm") if name.startswith(f"bai{os.getpid()}_")]


def assert_clean(collect: bool = False) -> None:
    """No live worker process and no shared-memory segment of this process's loaders."""
    if collect:
        gc.collect()
    deadline = time.monotonic() + 5
    while multiprocessing.active_children() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert multiprocessing.active_children() == []
    assert loader_segments() == []


@pytest.fixture
def clean():
    """Use in tests that start workers: checks for leaks after the test (after a collection,
    since pytest's own frames may still hold an iterator). What existed before the test is kept
    out of the collector meanwhile (``gc.freeze``): the collection then walks the test's own
    objects, not the heap of every test before it (most of a second late in the suite)."""
    gc.freeze()
    try:
        yield
        assert_clean(collect=True)
    finally:
        gc.unfreeze()


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "network: needs PyPI (skips cleanly when it cannot be reached)"
    )

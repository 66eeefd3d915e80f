"""``buildingai.cuda.max_memory_allocated`` / ``max_memory_reserved`` /
``reset_peak_memory_stats``: 0 without a GPU (as PyTorch's CPU build answers), and the exact
peak of CuPy's pool from the counting allocator, checked on a stand-in for CuPy here and on the
real one where a GPU is present."""

from types import SimpleNamespace

import numpy as np
import pytest

import buildingai as bai
from buildingai.backend import device as _device
from buildingai.cuda import peak_memory

torch = pytest.importorskip("torch")


@pytest.mark.skipif(bai.cuda.is_available(), reason="the answers of a machine without a GPU")
def test_without_a_gpu_the_peaks_are_zero_like_pytorchs():
    bai.cuda.reset_peak_memory_stats()
    torch.cuda.reset_peak_memory_stats() if torch.cuda.is_available() else None
    assert bai.cuda.max_memory_allocated() == 0 == bai.cuda.max_memory_reserved()
    bai.cuda.reset_max_memory_allocated()
    assert bai.cuda.max_memory_allocated(0) == 0


class FakePool:
    """CuPy's pool as the counter sees it: bytes in use, and bytes held (freed blocks stay)."""

    def __init__(self) -> None:
        self.used, self.held = 0, 0

    def used_bytes(self):
        return self.used

    def total_bytes(self):
        return self.held

    def malloc(self, size):
        self.used += size
        self.held = max(self.held, self.used)
        return SimpleNamespace(size=size)

    def free(self, memory):
        self.used -= memory.size


@pytest.fixture
def fake_cupy(monkeypatch):
    pool = FakePool()
    current = {"allocator": pool.malloc}
    cuda = SimpleNamespace(
        get_allocator=lambda: current["allocator"],
        set_allocator=lambda allocator: current.update(allocator=allocator),
        runtime=SimpleNamespace(getDeviceCount=lambda: 1),
    )
    fake = SimpleNamespace(cuda=cuda, get_default_memory_pool=lambda: pool)
    monkeypatch.setattr(_device, "_cupy", fake)
    monkeypatch.setattr(peak_memory, "_counter", None)

    def allocate(size):  # what CuPy does for each new array: call the current allocator
        return current["allocator"](size)

    return pool, allocate


def test_the_peak_is_the_most_in_use_at_once(fake_cupy):
    pool, allocate = fake_cupy
    kept = allocate(100)  # before anyone asks: not counted as a peak of its own
    assert bai.cuda.max_memory_allocated() == 100  # the first question: what is in use now
    bai.cuda.reset_peak_memory_stats()
    first, second = allocate(300), allocate(50)
    pool.free(first)
    pool.free(second)
    allocate(120)
    assert bai.cuda.memory_allocated() == 220
    assert bai.cuda.max_memory_allocated() == 450  # 100 + 300 + 50
    assert bai.cuda.max_memory_reserved() == 450
    bai.cuda.reset_peak_memory_stats()  # from what is in use now
    assert bai.cuda.max_memory_allocated() == 220
    allocate(10)
    assert bai.cuda.max_memory_allocated() == 230
    assert bai.cuda.max_memory_reserved() == 450  # the pool still holds the freed blocks
    assert kept.size == 100


def test_the_counter_wraps_the_allocator_once(fake_cupy):
    bai.cuda.reset_peak_memory_stats()
    wrapped = peak_memory._counter
    bai.cuda.max_memory_allocated()
    bai.cuda.reset_peak_memory_stats()
    assert peak_memory._counter is wrapped
    assert not isinstance(wrapped.allocator, peak_memory.PeakCounter)


@pytest.mark.skipif(not bai.cuda.is_available(), reason="needs CuPy and a CUDA GPU")
def test_on_a_gpu_the_peak_covers_a_freed_temporary():
    bai.cuda.reset_peak_memory_stats()
    before = bai.cuda.memory_allocated()
    big = bai.zeros(1 << 20, device="cuda")  # 4 MiB
    del big
    assert bai.cuda.max_memory_allocated() >= before + (1 << 22)
    assert bai.cuda.max_memory_reserved() >= bai.cuda.max_memory_allocated()
    assert np.isfinite(bai.cuda.max_memory_allocated())

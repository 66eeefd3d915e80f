"""The most GPU memory used at once: ``max_memory_allocated``, ``max_memory_reserved`` and
``reset_peak_memory_stats``, as PyTorch programs ask them around the part they measure.

CuPy's memory pool counts the bytes in use now but keeps no peak. Memory in use only grows
when an array is allocated, so reading the pool right after every allocation finds the peak
exactly: ``reset_peak_memory_stats()`` wraps CuPy's current allocator with a counter that does
that (one Python call per GPU allocation from then on). Nothing is wrapped until a program
asks for a peak, so the peak counts from the first call of one of these functions, not from
the start of the process as PyTorch's does; before that, ``max_memory_allocated()`` is the
memory in use at the moment it is asked. Call ``reset_peak_memory_stats()`` before the part
you measure, as measuring code usually does.
"""

from __future__ import annotations

from ..backend import device as _device


class PeakCounter:
    """A CuPy allocator (``size -> MemoryPointer``) that calls ``allocator`` and then records
    the most bytes ``pool`` has had in use and held (used or cached)."""

    def __init__(self, pool, allocator) -> None:
        self.pool, self.allocator = pool, allocator
        self.reset()

    def reset(self) -> None:
        """Start the peaks again from what the pool uses and holds now."""
        self.peak_used = int(self.pool.used_bytes())
        self.peak_held = int(self.pool.total_bytes())

    def __call__(self, size: int):
        memory = self.allocator(size)
        self.peak_used = max(self.peak_used, int(self.pool.used_bytes()))
        self.peak_held = max(self.peak_held, int(self.pool.total_bytes()))
        return memory


_counter: PeakCounter | None = None


def _installed_counter() -> PeakCounter | None:
    """The counter around CuPy's allocator, installed on first use; None without a GPU."""
    global _counter
    if _counter is not None:
        return _counter
    if not _device.cuda_is_available():
        return None
    cuda = _device.cupy_module().cuda
    _counter = PeakCounter(_device._cupy.get_default_memory_pool(), cuda.get_allocator())
    cuda.set_allocator(_counter)
    return _counter


def reset_peak_memory_stats(device=None) -> None:
    """Start counting the peak of GPU memory from now (from the memory in use now); does
    nothing without a GPU. ``device`` is accepted for PyTorch's signature: the counts are
    CuPy's pool's, for the current GPU."""
    counter = _installed_counter()
    if counter is not None:
        counter.reset()


def reset_max_memory_allocated(device=None) -> None:
    """PyTorch's older name for ``reset_peak_memory_stats``."""
    reset_peak_memory_stats(device)


def max_memory_allocated(device=None) -> int:
    """The most bytes live arrays have used at once since ``reset_peak_memory_stats()`` (or
    the first call of this function); 0 without a GPU."""
    counter = _installed_counter()
    return 0 if counter is None else counter.peak_used


def max_memory_reserved(device=None) -> int:
    """The most bytes CuPy's pool has held (used or cached) at once since
    ``reset_peak_memory_stats()`` (or the first call of a peak function); 0 without a GPU."""
    counter = _installed_counter()
    return 0 if counter is None else counter.peak_held


__all__ = [
    "max_memory_allocated",
    "max_memory_reserved",
    "reset_max_memory_allocated",
    "reset_peak_memory_stats",
]

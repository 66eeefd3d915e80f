"""Host memory: keep freed array memory in the process for the next training step.

A training step allocates tens of megabytes of activations and gradients and frees them all at
its end. glibc's malloc serves blocks above its mmap threshold with fresh ``mmap`` calls and
returns the free top of its heap to the OS once it exceeds the trim threshold, so every step pays
page faults and zero-filling for all of that memory again, and ``munmap`` calls when it is freed.
That can cost a large share of a Transformer step (see docs/design_notes/performance.md).

``retain_freed_memory`` raises both thresholds, so freed blocks stay in the heap and the next step
reuses them: the behaviour of a caching allocator, obtained from malloc itself. It is a process-wide
setting of the C library (it also serves PyTorch, NumPy and everything else in the process), so it
is never applied on import; call it once at start-up, or let ``Trainer`` do it
(``retain_freed_memory`` in its config). The price is that the process keeps its peak heap
size until it exits.

Switch: calling ``retain_freed_memory()`` (``Trainer.from_config`` calls it unless the config
says ``retain_freed_memory: false``); ``status()`` says whether it is in force.
"""

from __future__ import annotations

import ctypes
import ctypes.util

# mallopt parameters (glibc's malloc.h)
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3

_applied: dict | None = None


def retain_freed_memory(largest_block: int = 64 << 20, keep: int = 1 << 30) -> bool:
    """Let freed blocks of up to ``largest_block`` bytes be reused from the heap, and keep up to
    ``keep`` free bytes instead of returning them to the OS.

    Returns True when the C library accepted the settings; False where it has no ``mallopt``
    (macOS, musl, Windows), in which case nothing changed. Calling it again replaces the values.
    """
    global _applied
    mallopt = _mallopt()
    if mallopt is None:
        return False
    # glibc refuses an mmap threshold above its compile-time maximum (32 MiB on 64-bit builds
    # without large heaps); fall back to halves until it accepts one.
    block = largest_block
    while block >= 1 << 20 and not mallopt(_M_MMAP_THRESHOLD, block):
        block //= 2
    if block < 1 << 20 or not mallopt(_M_TRIM_THRESHOLD, keep):
        return False
    _applied = {"largest_block": block, "keep": keep}
    return True


def allocator_settings() -> dict | None:
    """The values ``retain_freed_memory`` applied in this process, or None if it was not called
    (or had no effect)."""
    return None if _applied is None else dict(_applied)


def status() -> dict:
    """``{"active", "detail", "switch"}``: whether ``retain_freed_memory`` set malloc's
    thresholds in this process, to what, and how it is turned on."""
    switch = (
        "buildingai.backend.retain_freed_memory() (Trainer.from_config calls it unless the "
        "config says retain_freed_memory: false)"
    )
    if _applied is None:
        return {"active": False, "detail": "malloc defaults", "switch": switch}
    detail = (
        f"freed blocks up to {_applied['largest_block']} bytes are reused and up to "
        f"{_applied['keep']} free bytes kept in the heap"
    )
    return {"active": True, "detail": detail, "switch": switch}


def _mallopt():
    name = ctypes.util.find_library("c")
    try:
        library = ctypes.CDLL(name)
        function = library.mallopt
    except (OSError, AttributeError, TypeError):
        return None
    function.argtypes = (ctypes.c_int, ctypes.c_int)
    function.restype = ctypes.c_int
    return function

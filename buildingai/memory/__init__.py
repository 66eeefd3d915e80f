"""Memory: what tensors hold, and tools to hold less.

- ``start_tracking()`` / ``stop_tracking()`` / ``with tracking():``: count the buffers of the
  tensors made meanwhile (off by default: counting costs every op a weak reference and a lock).
- ``stats()`` / ``reset_peak()``: current and peak bytes held by the arrays tensors were built on,
  in all and per device (``backend/accounting.py`` counts them as dispatch builds tensors).
- ``summary()``: the bytes held now, by the op that made them and by the module they were made in.
- ``memory_scope()``: release, at the end of a block, the tensors made in it that nothing needs.
- ``retain_freed_memory()``: keep freed host memory in the process for the next step.
- Gradient checkpointing is ``buildingai.checkpoint``.
"""

from ..backend.accounting import is_tracking, reset_peak, start_tracking, stats, stop_tracking
from ..backend.accounting import tracked as tracking
from ..backend.memory import allocator_settings, retain_freed_memory
from .scope import MemoryScope, ReleasedTensorError, memory_scope
from .summary import MemorySummary, summary

__all__ = [
    "MemoryScope",
    "MemorySummary",
    "ReleasedTensorError",
    "allocator_settings",
    "memory_scope",
    "reset_peak",
    "retain_freed_memory",
    "is_tracking",
    "start_tracking",
    "stats",
    "stop_tracking",
    "summary",
    "tracking",
]

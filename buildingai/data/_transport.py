"""Moving batches from worker processes to the main process through shared memory.

A worker writes the arrays of a batch into one of its reusable shared-memory *slots* and sends
the main process only a small descriptor (slot name, offsets, shapes, dtypes and the structure of
the batch with arrays replaced by placeholders), pickled to a few hundred bytes. The main process
copies the arrays out of the slot once and hands the slot back. Large arrays are never pickled.

Slot segments are named ``<prefix>_<slot>_<generation>``, so the main process can find and remove
the segments of a worker that was killed before it could clean up.
"""

from __future__ import annotations

import contextlib
import os
import pickle
from collections.abc import Mapping
from multiprocessing import shared_memory
from typing import Any

import numpy as np

from ..autograd.tensor import Tensor

_ALIGN = 64  # bytes; keeps every array cache-line aligned inside a slot
_SHM_DIR = "/dev/shm"


class _Leaf:
    """Placeholder for the ``index``-th array of a flattened batch."""

    __slots__ = ("index", "is_tensor")

    def __init__(self, index: int, is_tensor: bool) -> None:
        self.index, self.is_tensor = index, is_tensor

    def __reduce__(self):
        return (_Leaf, (self.index, self.is_tensor))


def flatten(batch: Any, arrays: list[np.ndarray]) -> Any:
    """The batch with every numeric array (or Tensor) replaced by a ``_Leaf``; the arrays are
    appended to ``arrays``. Containers are rebuilt; other objects (strings...) stay in place."""
    if isinstance(batch, Tensor):
        data = np.asarray(batch.array)  # a CUDA array cannot cross processes; pull it to the host
        arrays.append(data)
        return _Leaf(len(arrays) - 1, True)
    if isinstance(batch, np.ndarray) and not batch.dtype.hasobject:
        arrays.append(batch)
        return _Leaf(len(arrays) - 1, False)
    if isinstance(batch, Mapping):
        return {key: flatten(value, arrays) for key, value in batch.items()}
    if isinstance(batch, tuple) and hasattr(batch, "_fields"):
        return type(batch)(*(flatten(value, arrays) for value in batch))
    if isinstance(batch, (tuple, list)):
        return type(batch)(flatten(value, arrays) for value in batch)
    return batch


def unflatten(skeleton: Any, arrays: list[np.ndarray]) -> Any:
    """Inverse of ``flatten``."""
    if isinstance(skeleton, _Leaf):
        array = arrays[skeleton.index]
        return Tensor(array) if skeleton.is_tensor else array
    if isinstance(skeleton, Mapping):
        return {key: unflatten(value, arrays) for key, value in skeleton.items()}
    if isinstance(skeleton, tuple) and hasattr(skeleton, "_fields"):
        return type(skeleton)(*(unflatten(value, arrays) for value in skeleton))
    if isinstance(skeleton, (tuple, list)):
        return type(skeleton)(unflatten(value, arrays) for value in skeleton)
    return skeleton


def _aligned(size: int) -> int:
    return -(-size // _ALIGN) * _ALIGN


class SlotWriter:
    """The worker side: a small pool of shared-memory segments, reused batch after batch.

    A slot is busy from ``write`` until the main process sends ``release(slot)``. A batch larger
    than its slot gets a new, larger segment (the old one is removed).
    """

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self.segments: dict[int, shared_memory.SharedMemory] = {}
        self.busy: set[int] = set()
        self.generation = 0

    def _free_slot(self) -> int:
        for slot in sorted(self.segments):
            if slot not in self.busy:
                return slot
        return len(self.segments) and max(self.segments) + 1

    def write(self, batch: Any) -> bytes:
        """Copy the arrays of ``batch`` into a free slot; return the pickled descriptor."""
        arrays: list[np.ndarray] = []
        skeleton = flatten(batch, arrays)
        offsets, total = [], 0
        for array in arrays:
            offsets.append(total)
            total += _aligned(array.nbytes)
        slot = self._free_slot()
        segment = self.segments.get(slot)
        if segment is None or segment.size < total:
            if segment is not None:
                segment.close()
                segment.unlink()
            # headroom, so that slowly growing batches (variable-length text) rarely reallocate
            size = max(_ALIGN, total + total // 4)
            name = f"{self.prefix}_{slot}_{self.generation}"
            self.generation += 1
            segment = shared_memory.SharedMemory(name=name, create=True, size=size)
            self.segments[slot] = segment
        meta = []
        for array, offset in zip(arrays, offsets):
            target = np.ndarray(array.shape, array.dtype, buffer=segment.buf, offset=offset)
            target[...] = array
            meta.append((offset, array.shape, array.dtype))
        self.busy.add(slot)
        return pickle.dumps((slot, segment.name, meta, skeleton, total), protocol=5)

    def release(self, slot: int) -> None:
        self.busy.discard(slot)

    def close(self) -> None:
        for segment in self.segments.values():
            segment.close()
            with contextlib.suppress(FileNotFoundError):
                segment.unlink()
        self.segments.clear()


class SlotReader:
    """The main-process side: attaches each slot once and copies batches out of it."""

    def __init__(self, pin_memory: bool = False) -> None:
        self.attached: dict[tuple[int, int], shared_memory.SharedMemory] = {}
        self.pin_memory = pin_memory and pinning_available()
        self.queue_bytes = 0  # pickled descriptor bytes received through the result queue
        self.shared_bytes = 0  # array bytes received through shared memory
        self.batches = 0

    def read(self, worker_id: int, descriptor: bytes) -> tuple[int, Any]:
        """Return ``(slot, batch)``: the batch rebuilt from its own (copied) arrays."""
        slot, name, meta, skeleton, total = pickle.loads(descriptor)
        key = (worker_id, slot)
        segment = self.attached.get(key)
        if segment is None or segment.name != name:
            if segment is not None:
                segment.close()
            segment = shared_memory.SharedMemory(name=name)
            self.attached[key] = segment
        arrays = []
        for offset, shape, dtype in meta:
            view = np.ndarray(shape, dtype, buffer=segment.buf, offset=offset)
            arrays.append(_pinned_copy(view) if self.pin_memory else view.copy())
        self.queue_bytes += len(descriptor)
        self.shared_bytes += total
        self.batches += 1
        return slot, unflatten(skeleton, arrays)

    def close(self) -> None:
        for segment in self.attached.values():
            # BufferError only if a view escaped; the mapping then dies with that view
            with contextlib.suppress(BufferError):
                segment.close()
        self.attached.clear()


_PINNING: list[bool] = []  # cached answer of pinning_available()


def pinning_available() -> bool:
    """Whether page-locked host memory can be allocated (CuPy installed and a GPU visible)."""
    if not _PINNING:
        try:
            import cupy
            import cupyx  # noqa: F401

            _PINNING.append(cupy.cuda.runtime.getDeviceCount() > 0)
        except Exception:
            _PINNING.append(False)
    return _PINNING[0]


def _pinned_copy(view: np.ndarray) -> np.ndarray:
    """A copy in page-locked host memory (CuPy), so that a later host-to-GPU copy is
    asynchronous and faster; a plain copy when CuPy or a GPU is missing."""
    try:
        import cupyx

        pinned = cupyx.empty_pinned(view.shape, view.dtype)
    except Exception:  # no CuPy, no GPU: pinning is meaningless on the CPU
        return view.copy()
    pinned[...] = view
    return pinned


def remove_segments(prefix: str, known: list[str] = ()) -> list[str]:
    """Unlink every shared-memory segment whose name starts with ``prefix`` (found in /dev/shm
    where that exists) and the ``known`` names. Returns the names removed."""
    names = set(known)
    if os.path.isdir(_SHM_DIR):
        names.update(name for name in os.listdir(_SHM_DIR) if name.startswith(prefix))
    removed = []
    for name in sorted(names):
        try:
            segment = shared_memory.SharedMemory(name=name)
        except (FileNotFoundError, ValueError):
            continue
        segment.close()
        try:
            segment.unlink()
            removed.append(name)
        except FileNotFoundError:  # pragma: no cover - removed concurrently
            pass
    return removed

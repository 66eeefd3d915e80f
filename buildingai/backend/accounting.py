"""Memory accounting: the bytes held by the arrays that tensors were built on, per device.

Every Tensor the framework builds (an op's output in dispatch, or ``Tensor(array)``) reports its
array here. An array is counted by the buffer that owns its memory (a view counts nothing: its
base is the buffer), once, however many tensors share it; a weak reference with a callback takes
it out when the buffer is freed, so ``current`` is the memory that is really still held, by
tensors, graph nodes that saved it, or any other reference. ``peak`` is the highest ``current``
since the last ``reset_peak``. Arrays an op allocates only while it runs, and arrays that never
became a tensor's or a graph node's, are not counted.

Arrays a forward keeps on its graph node for backward (``ctx.xhat``...) are counted as well
(``record_saved``): they are held by the graph like saved tensors.

Each buffer also keeps the name of the op that made it and the module path it was made in, for
``buildingai.memory.summary``.

Counting costs every new tensor a weak reference and a lock, so it runs only while someone asks
for it: ``start_tracking()`` / ``stop_tracking()`` (or ``with tracked():``, which
``buildingai.memory`` exports as ``tracking``), called by the user around what they want counted
and by ``memory_scope`` and ``TimeTracer`` for their block. Requests nest and add up across
threads; ``tracking`` (read by dispatch on every op) is True while any is open. Buffers made
while nobody tracks are not counted.
"""

from __future__ import annotations

import contextlib
import threading
import weakref

import numpy as np

from ..errors import BuildingAIError
from . import device as _device

_NDARRAY = np.ndarray


class Buffer(weakref.ref):
    """A weak reference to a counted buffer, with what it costs and where it was made."""

    __slots__ = ("key", "nbytes", "device", "op", "module")

    def __new__(cls, owner, callback, *fields):
        return super().__new__(cls, owner, callback)

    def __init__(self, owner, callback, key, nbytes, device, op, module) -> None:
        super().__init__(owner, callback)
        self.key, self.nbytes, self.device = key, nbytes, device
        self.op, self.module = op, module


class _Counter:
    """``current`` and ``peak`` bytes of one device (or of all of them)."""

    __slots__ = ("current", "peak")

    def __init__(self) -> None:
        self.current = 0
        self.peak = 0


_buffers: dict[int, Buffer] = {}  # id of the owning array -> its Buffer
_total = _Counter()
_devices: dict[str, _Counter] = {"cpu": _Counter()}
# Only integer arithmetic runs under the lock: nothing in it can start a garbage collection,
# whose weakref callbacks would take the lock again on this thread.
_lock = threading.Lock()

tracking = False  # True while at least one tracking request is open: dispatch reads it per op
_requests = [0]


def start_tracking() -> None:
    """Count the buffers of tensors made from now on (until the matching ``stop_tracking``)."""
    global tracking
    with _lock:
        _requests[0] += 1
        tracking = True


def stop_tracking() -> None:
    """Close one ``start_tracking`` request; counting stops when none is left open. Buffers
    already counted stay counted until they are freed."""
    global tracking
    with _lock:
        _requests[0] = max(0, _requests[0] - 1)
        tracking = _requests[0] > 0


@contextlib.contextmanager
def tracked():
    """``with tracked():`` counts the buffers made in the block (and keeps counting if an outer
    request is open)."""
    start_tracking()
    try:
        yield
    finally:
        stop_tracking()


def is_tracking() -> bool:
    """Whether new buffers are counted now."""
    return tracking


def record(array, op: str, module_path) -> None:
    """Count ``array`` (made by ``op`` inside the modules ``module_path``, a list of names) if
    its buffer is not counted yet."""
    if array is None:  # a placeholder that parallel() fills later (and counts then)
        return
    owner = array
    base = array.base
    while base is not None:  # a view: the memory belongs to the array it views
        if not isinstance(base, _device.ARRAY_TYPES):  # bytes, mmap, another library's tensor
            break
        owner = base
        base = owner.base
    key = id(owner)
    if key in _buffers:
        return
    nbytes = owner.nbytes
    device = "cpu" if type(owner) is _NDARRAY else _device_name(owner)
    module = ".".join(module_path) if module_path else ""
    try:
        buffer = Buffer(owner, _release, key, nbytes, device, op, module)
    except TypeError:  # an array type without weak references: it cannot be tracked
        return
    if _buffers.setdefault(key, buffer) is not buffer:  # another thread counted it first
        return
    counter = _devices.get(device)
    if counter is None:
        counter = _devices.setdefault(device, _Counter())
    with _lock:
        current = _total.current + nbytes
        _total.current = current
        if current > _total.peak:
            _total.peak = current
        current = counter.current + nbytes
        counter.current = current
        if current > counter.peak:
            counter.peak = current


def record_saved(values, op: str, module_path) -> None:
    """Count the arrays among ``values`` (what a forward kept on its graph node for backward:
    im2col columns, normalised inputs, probabilities)."""
    for value in values:
        if isinstance(value, _device.ARRAY_TYPES):
            record(value, op, module_path)


def _release(buffer: Buffer, buffers=_buffers, devices=_devices, total=_total, lock=_lock):
    """The weakref callback: the buffer was freed. (The tables are bound as defaults: buffers
    are also freed while the interpreter shuts down and clears module globals.)"""
    if buffers.pop(buffer.key, None) is not buffer:
        return
    nbytes = buffer.nbytes
    counter = devices[buffer.device]
    with lock:
        total.current -= nbytes
        counter.current -= nbytes


def stats() -> dict:
    """``{"current", "peak", "devices": {name: {"current", "peak"}}, "tracking"}`` in bytes,
    of the buffers counted while tracking (``start_tracking``) and not freed since."""
    if not tracking:
        raise BuildingAIError(
            "[memory.stats] memory tracking is off, so no tensor's memory is counted",
            help="call buildingai.memory.start_tracking() before making the tensors to count, "
            "or run them inside `with buildingai.memory.tracking():`",
        )
    with _lock:
        devices = {
            name: {"current": counter.current, "peak": counter.peak}
            for name, counter in _devices.items()
        }
        return {
            "current": _total.current,
            "peak": _total.peak,
            "devices": devices,
            "tracking": tracking,
        }


def reset_peak() -> None:
    """Start a new peak from the bytes held now (per device too)."""
    with _lock:
        _total.peak = _total.current
        for counter in _devices.values():
            counter.peak = counter.current


def live_buffers() -> list[Buffer]:
    """The counted buffers still alive (their ``nbytes``, ``device``, ``op`` and ``module``)."""
    return [buffer for buffer in list(_buffers.values()) if buffer() is not None]


def buffer_of(array) -> Buffer | None:
    """The counted buffer that holds ``array``'s memory, or None."""
    owner = array
    base = array.base
    while base is not None and isinstance(base, _device.ARRAY_TYPES):
        owner = base
        base = owner.base
    return _buffers.get(id(owner))


def _device_name(array) -> str:
    device = getattr(array, "device", None)
    index = getattr(device, "id", None)
    return "cpu" if index is None else f"cuda:{index}"

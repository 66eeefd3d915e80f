"""Time spent inside op records' ``forward``, separate from the dispatch around it.

While a ``TimeTracer`` is active, each op record it sees gets its ``forward`` wrapped in a timer
(an instance attribute over the class method); the wrapper is removed when the last tracer
exits. The wrapper only adds a clock read on each side and writes this thread's last reading,
so results and the op stream are unchanged, and threads that are not tracing pay one extra call.
"""

from __future__ import annotations

import threading
from time import perf_counter_ns


class _LastForward(threading.local):
    """Nanoseconds spent in the most recent ``forward`` on this thread."""

    ns: int = 0


LAST_FORWARD = _LastForward()
_lock = threading.Lock()
# id(op) -> [op, number of tracers using it, wrapper, the instance's own forward or None]
_users: dict[int, list] = {}


def _timed(forward):
    def timed_forward(ctx, xp, *arrays, **attrs):
        start = perf_counter_ns()
        result = forward(ctx, xp, *arrays, **attrs)
        LAST_FORWARD.ns = perf_counter_ns() - start
        return result

    timed_forward.untimed = forward
    return timed_forward


def time_forward(op) -> None:
    """Wrap ``op.forward`` in the timer (counted: one ``release`` per call undoes it)."""
    with _lock:
        entry = _users.get(id(op))
        if entry is not None:
            entry[1] += 1
            return
        wrapper = _timed(op.forward)
        own = op.__dict__.get("forward")
        op.forward = wrapper
        _users[id(op)] = [op, 1, wrapper, own]


def release(op) -> None:
    """Undo one ``time_forward(op)``; the last one restores the record's own ``forward``."""
    with _lock:
        entry = _users.get(id(op))
        if entry is None:
            return
        entry[1] -= 1
        if entry[1] > 0:
            return
        del _users[id(op)]
        if op.__dict__.get("forward") is entry[2]:
            if entry[3] is None:
                del op.__dict__["forward"]
            else:
                op.forward = entry[3]

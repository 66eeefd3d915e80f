"""Dispatch state, per thread: grad mode, the interceptors, the deferral hook, the module path.

Grad mode, the interceptors and the deferral hook form one immutable ``DispatchState`` held in a
``contextvars.ContextVar``, so every thread (and every asyncio task) sees its own: a new thread
starts from the defaults, and a scope (``no_grad``, ``intercept``) sets a changed copy and restores
the previous value on exit. The module path changes on every module call, more often than a
context variable is cheap to set, so it is a plain per-thread stack (``MODULE_CALLS``).

Work run on other threads for a caller (``parallel()`` branches, frozen-graph workers) inherits
the caller's state and module path: ``inherit()`` captures them, ``run_inherited`` runs under them.
"""

from __future__ import annotations

import contextvars
import threading
from typing import NamedTuple


class DispatchState:
    """What dispatch reads on every op. Its fields never change: ``replace`` makes a changed
    copy (a state only caches its twin with grad mode flipped, for ``no_grad``).

    Attributes:
        grad_enabled: whether ops record the graph for backward.
        interceptors: the active observers of every op, outermost first.
        deferral: ``function(op, inputs, attrs) -> Tensor | None`` asked before each op runs
            (``parallel()`` records ops this way), or None.
        observed: True when interceptors or a deferral are active (one test for fast paths).
    """

    __slots__ = ("grad_enabled", "interceptors", "deferral", "observed", "_grad_flipped")

    def __init__(self, grad_enabled: bool = True, interceptors: tuple = (), deferral=None) -> None:
        self.grad_enabled = grad_enabled
        self.interceptors = interceptors
        self.deferral = deferral
        self.observed = bool(interceptors) or deferral is not None
        self._grad_flipped = None  # the same state with grad_enabled flipped, made once

    def replace(self, **changes) -> DispatchState:
        """A copy with the given fields changed."""
        fields = {
            "grad_enabled": self.grad_enabled,
            "interceptors": self.interceptors,
            "deferral": self.deferral,
        }
        fields.update(changes)
        return DispatchState(**fields)

    def with_grad(self, enabled: bool) -> DispatchState:
        """This state with recording turned on or off (what ``no_grad`` sets)."""
        if enabled == self.grad_enabled:
            return self
        flipped = self._grad_flipped
        if flipped is None:  # a state never changes, so its twin can be kept and reused
            flipped = DispatchState(enabled, self.interceptors, self.deferral)
            flipped._grad_flipped = self
            self._grad_flipped = flipped
        return flipped

    def __repr__(self) -> str:
        return (
            f"DispatchState(grad_enabled={self.grad_enabled}, interceptors={self.interceptors}, "
            f"deferral={self.deferral})"
        )


# The default is shared by every thread, which is safe: a DispatchState is never modified.
STATE: contextvars.ContextVar[DispatchState] = contextvars.ContextVar(
    "buildingai_dispatch_state",
    default=DispatchState(),  # noqa: B039
)
current_state = STATE.get  # () -> DispatchState: this thread's (or task's) state


class _ModuleCalls(threading.local):
    """``stacks``: the modules being called on this thread, innermost last, and the names they
    are called by (``nn`` pushes both; errors name the path, and a call finds its name in its
    caller). One attribute holding both lists: one per-thread lookup per module call."""

    def __init__(self) -> None:
        self.stacks: tuple[list, list[str]] = ([], [])


MODULE_CALLS = _ModuleCalls()


def module_path() -> tuple[str, ...]:
    """The names of the modules being called on this thread, outermost first."""
    return tuple(MODULE_CALLS.stacks[1])


class Inherited(NamedTuple):
    """What work run on another thread for a caller takes from it."""

    state: DispatchState
    module_path: tuple[str, ...]


def inherit() -> Inherited:
    """This thread's dispatch state and module path, for ``run_inherited`` on another thread."""
    return Inherited(STATE.get(), tuple(MODULE_CALLS.stacks[1]))


def run_inherited(inherited: Inherited, function, *args):
    """Call ``function(*args)`` on this thread under ``inherited`` (a caller's grad mode,
    interceptors, deferral and module path), then restore this thread's own."""
    token = STATE.set(inherited.state)
    calls = MODULE_CALLS
    saved = calls.stacks
    calls.stacks = ([], list(inherited.module_path))
    try:
        return function(*args)
    finally:
        calls.stacks = saved
        STATE.reset(token)

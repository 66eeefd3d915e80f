"""Dispatch state, per thread: grad mode, the dispatch mode stack, the module path.

Grad mode and the dispatch mode stack form one immutable ``DispatchState`` held in a
``contextvars.ContextVar``, so every thread (and every asyncio task) sees its own: a new thread
starts from the defaults, and a scope (``no_grad``, ``dispatch_mode``) sets a changed copy and
restores the previous value on exit. The module path changes on every module call, more often than a
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
        modes: the dispatch mode stack (``dispatch_mode``), outermost first.
        handling: how many of the ``transformers`` may still handle an op: inside a
            transformer's ``__dispatch__`` only the ones below it do.
        transformers: the modes of the stack that may replace or run an op themselves (they
            override ``__dispatch__``), outermost first.
        observers: the modes of the stack that watch the ops that run (they override
            ``before_op`` or ``after_op``), outermost first.
        observed: True when any mode is on the stack (one test for fast paths).
    """

    __slots__ = (
        "grad_enabled",
        "modes",
        "handling",
        "transformers",
        "observers",
        "observed",
        "_grad_flipped",
    )

    def __init__(self, grad_enabled: bool = True, modes: tuple = (), handling=None) -> None:
        self.grad_enabled = grad_enabled
        self.modes = modes
        self.transformers = tuple(mode for mode in modes if mode.transforms)
        self.observers = tuple(mode for mode in modes if mode.observes)
        self.handling = len(self.transformers) if handling is None else handling
        self.observed = bool(modes)
        self._grad_flipped = None  # the same state with grad_enabled flipped, made once

    def replace(self, **changes) -> DispatchState:
        """A copy with the given fields changed (a new mode stack handles ops from its top)."""
        fields = {"grad_enabled": self.grad_enabled, "modes": self.modes}
        if "modes" not in changes:
            fields["handling"] = self.handling
        fields.update(changes)
        return DispatchState(**fields)

    def with_grad(self, enabled: bool) -> DispatchState:
        """This state with recording turned on or off (what ``no_grad`` sets)."""
        if enabled == self.grad_enabled:
            return self
        flipped = self._grad_flipped
        if flipped is None:  # a state never changes, so its twin can be kept and reused
            flipped = DispatchState(enabled, self.modes, self.handling)
            flipped._grad_flipped = self
            self._grad_flipped = flipped
        return flipped

    def __repr__(self) -> str:
        return f"DispatchState(grad_enabled={self.grad_enabled}, modes={self.modes})"


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
    """The names of the modules being called on this thread, outermost first: the one way to
    read the module path (``".".join(module_path())`` is ``"encoder.layers.0.fc1"``)."""
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
    dispatch modes and module path), then restore this thread's own."""
    token = STATE.set(inherited.state)
    calls = MODULE_CALLS
    saved = calls.stacks
    calls.stacks = ([], list(inherited.module_path))
    try:
        return function(*args)
    finally:
        calls.stacks = saved
        STATE.reset(token)

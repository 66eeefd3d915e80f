"""Gradient recording mode: ``no_grad`` and ``enable_grad``, as context managers and decorators.

The mode belongs to the calling thread (it is part of the dispatch state, ``state.py``): a
``no_grad`` block on one thread never changes what another thread records.
"""

from __future__ import annotations

import functools
from threading import get_ident

from .state import STATE


class _GradMode:
    """Reads this thread's recording flag: ``grad_mode.enabled``."""

    __slots__ = ()

    @property
    def enabled(self) -> bool:
        return STATE.get().grad_enabled


grad_mode = _GradMode()


def is_grad_enabled() -> bool:
    """True when ops on this thread record the graph for backward."""
    return STATE.get().grad_enabled


class _SetGradEnabled:
    _value = True

    def __enter__(self):
        token = STATE.set(STATE.get().with_grad(self._value))
        # one instance may be entered by several threads, or again inside its own block
        tokens = self.__dict__.setdefault("_tokens", {})
        tokens.setdefault(get_ident(), []).append(token)
        return self

    def __exit__(self, *exc_info) -> None:
        STATE.reset(self._tokens[get_ident()].pop())  # restores the state before __enter__

    def __call__(self, function):
        @functools.wraps(function)
        def wrapper(*args, **kwargs):
            with type(self)():
                return function(*args, **kwargs)

        return wrapper


class no_grad(_SetGradEnabled):
    """Run ops without recording the graph: ``with no_grad(): ...``, ``@no_grad()`` or
    ``@no_grad``."""

    _value = False

    def __new__(cls, function=None):
        if function is not None:  # @no_grad without parentheses, as PyTorch accepts
            return cls()(function)
        return super().__new__(cls)


class enable_grad(_SetGradEnabled):
    """Record the graph again inside a ``no_grad`` region."""

    _value = True


class set_grad_enabled(_SetGradEnabled):
    """``with set_grad_enabled(flag): ...`` turns recording on or off for the block."""

    def __init__(self, mode: bool) -> None:
        self._value = bool(mode)

    def __call__(self, function):
        value = self._value

        @functools.wraps(function)
        def wrapper(*args, **kwargs):
            with set_grad_enabled(value):
                return function(*args, **kwargs)

        return wrapper


class inference_mode(set_grad_enabled):
    """PyTorch's ``inference_mode``: ``with inference_mode(): ...``, ``@inference_mode()`` or
    ``@inference_mode``. ``inference_mode(True)`` (the default) runs ops without recording the
    graph, as ``no_grad``; ``inference_mode(False)`` records it again, as PyTorch does.

    BuildingAI's no-grad mode already skips all graph bookkeeping, so there is no separate kind
    of "inference tensor": a tensor made here can later be used in a recorded computation.
    """

    def __new__(cls, mode=True):
        if callable(mode):  # @inference_mode without parentheses
            return cls(True)(mode)
        return super().__new__(cls)

    def __init__(self, mode: bool = True) -> None:
        super().__init__(not mode)

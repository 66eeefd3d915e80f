"""Gradient recording mode: ``no_grad`` and ``enable_grad``, as context managers and decorators."""

from __future__ import annotations

import functools


class _GradMode:
    """Holds the process-wide recording flag that the scoped managers below flip and restore."""

    enabled = True


grad_mode = _GradMode()


def is_grad_enabled() -> bool:
    """True when ops record the graph for backward."""
    return grad_mode.enabled


class _SetGradEnabled:
    _value = True

    def __enter__(self):
        self._previous = grad_mode.enabled
        grad_mode.enabled = self._value
        return self

    def __exit__(self, *exc_info) -> None:
        grad_mode.enabled = self._previous

    def __call__(self, function):
        @functools.wraps(function)
        def wrapper(*args, **kwargs):
            with type(self)():
                return function(*args, **kwargs)

        return wrapper


class no_grad(_SetGradEnabled):
    """Run ops without recording the graph: ``with no_grad(): ...`` or ``@no_grad()``."""

    _value = False


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

"""``use_deterministic_algorithms``: PyTorch's switch for run-to-run identical results.

BuildingAI's CPU ops have no nondeterministic variant to switch off: with a fixed seed and
thread count, a program gives the same results on every run (the learning path's runs repeat
bit for bit). The setting is kept so that programs written for PyTorch run, and so that code can
ask for it with ``are_deterministic_algorithms_enabled``.
"""

from __future__ import annotations

_state = {"enabled": False, "warn_only": False}


def use_deterministic_algorithms(mode: bool, *, warn_only: bool = False) -> None:
    """Record that the program asks for deterministic algorithms (as ``torch``'s; BuildingAI's
    CPU ops already are, for a fixed thread count)."""
    if not isinstance(mode, bool):
        raise TypeError(f"use_deterministic_algorithms: mode must be a bool, got {mode!r}")
    _state["enabled"], _state["warn_only"] = mode, bool(warn_only)


def are_deterministic_algorithms_enabled() -> bool:
    """Whether ``use_deterministic_algorithms(True)`` is in force."""
    return _state["enabled"]


def is_deterministic_algorithms_warn_only_enabled() -> bool:
    """Whether it was asked for with ``warn_only=True``."""
    return _state["enabled"] and _state["warn_only"]

"""Workload ``transformer-gelu``: the ``transformer`` workload with the exact GELU (erf form,
``activation="gelu"`` as users write it) instead of the tanh form; no NumPy bound (NumPy has no
erf)."""

from __future__ import annotations

from . import transformer

ADAM = True
NAME = "transformer-gelu"
sizes = transformer.sizes


def steppers(quick: bool) -> dict:
    return transformer.steppers(quick, approximate="none")

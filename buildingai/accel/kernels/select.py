"""Array kernels of ``where``: the choice between two arrays, or an array and a number, by a
boolean condition of the same shape, written into ``out``. NumPy's ``where`` and masked
``copyto`` branch on each element and run many times slower on an irregular mask than a
product does (docs/design_notes/performance.md); the compiled twins choose with a select in
one pass. Registered against the ``where`` record in ``accel/elementwise.py``.
"""

from __future__ import annotations

from .compiled import compiled_twin


@compiled_twin("select.select")
def select(xp, condition, a, b, out) -> None:
    """out = a where condition, else b."""
    xp.copyto(out, b)
    xp.copyto(out, a, where=condition)


@compiled_twin("select.select_else_value", ("value",))
def select_else_value(xp, condition, a, out, *, value) -> None:
    """out = a where condition, else the number ``value``."""
    xp.copyto(out, value)
    xp.copyto(out, a, where=condition)


@compiled_twin("select.value_else_select", ("value",))
def value_else_select(xp, condition, b, out, *, value) -> None:
    """out = the number ``value`` where condition, else b."""
    xp.copyto(out, b)
    xp.copyto(out, value, where=condition)

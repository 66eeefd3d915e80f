"""A block of columns added to: the array kernel of ``accel/index_into.py``. ``kernel(xp,
*arrays, **params)`` is the reference its compiled twin (``compiled/index.py``) is tested
against."""

from __future__ import annotations

from .compiled import compiled_twin


@compiled_twin("index.add_columns", params=("start",), strided=True)
def add_columns(xp, total, grad, *, start) -> None:
    """total[:, :, start:start + width] += grad, for total (a, b, columns) and grad (a, b,
    width) whose last axes are contiguous."""
    total[:, :, start : start + grad.shape[2]] += grad

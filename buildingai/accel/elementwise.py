"""Faster element-wise records of ``ops/elementwise.py``, registered against the record they
speed up: a clamp with one Python-number bound through rows of the scalar
(``kernels/scalar_loops.py``), where NumPy's loop against a scalar runs without SIMD; ``where``
as one compiled select (``kernels/select.py``), where NumPy's branches on an irregular mask.
"""

from __future__ import annotations

import numpy as np

from ..ops import elementwise
from ..ops.promotion import torch_dtype
from .kernels import compiled, select
from .kernels.scalar_loops import ROW, extremum_with_scalar
from .registry import register


def _number(value) -> bool:
    return type(value) is float or type(value) is int


def _one_sided_fits(xp, x, low, high) -> bool:
    """One bound is None and the other a Python number; x a large contiguous float NumPy
    array."""
    bound = high if low is None else low if high is None else None
    return (
        _number(bound)
        and type(x) is np.ndarray
        and x.dtype.kind == "f"
        and x.size >= 2 * ROW
        and x.flags.c_contiguous
    )


def _one_sided_clamp(ctx, xp, x, low, high):
    if low is not None:
        return torch_dtype(np.maximum, x, low, extremum_with_scalar(np, np.maximum, x, low))
    return torch_dtype(np.minimum, x, high, extremum_with_scalar(np, np.minimum, x, high))


register(
    elementwise.CLAMP,
    _one_sided_fits,
    _one_sided_clamp,
    name="clamp.scalar_rows",
    description="max or min against a number through rows of it, so NumPy's SIMD loop runs",
)


# ----- where ---------------------------------------------------------------------------------------


def _float32_like(array, condition) -> bool:
    return (
        type(array) is np.ndarray
        and array.dtype == np.float32
        and array.shape == condition.shape
        and array.flags.c_contiguous
    )


def _where_fits(xp, condition, a, b) -> bool:
    """A C-contiguous boolean NumPy condition large enough for the compiled select, and float32
    arrays of its shape on both sides or on one side with a Python number on the other (the
    result is then float32 too)."""
    if not (
        type(condition) is np.ndarray
        and condition.dtype == np.bool_
        and condition.flags.c_contiguous
        and 3 * condition.size >= compiled.MIN_WORK  # smaller: the twin declines, NumPy's is quick
    ):
        return False
    if _float32_like(a, condition):
        return _number(b) or _float32_like(b, condition)
    return _number(a) and _float32_like(b, condition)


def _where(ctx, xp, condition, a, b):
    """The compiled select; NotImplemented (the record's ``where``) where the twin declines."""
    if type(a) is np.ndarray:
        out = np.empty_like(a)
        if type(b) is np.ndarray:
            kernel, arrays, keywords = select.select, [condition, a, b, out], None
        else:
            kernel, arrays, keywords = select.select_else_value, [condition, a, out], {"value": b}
    else:
        out = np.empty_like(b)
        kernel, arrays, keywords = select.value_else_select, [condition, b, out], {"value": a}
    flat = [array.reshape(-1) for array in arrays]
    return out if compiled.run(kernel, flat, keywords) else NotImplemented


register(
    elementwise.WHERE,
    _where_fits,
    _where,
    name="where.select",
    requires=("numba",),
    description="one compiled select pass over float32, where NumPy branches on each element",
)

"""Faster element-wise records of ``ops/elementwise.py``, registered against the record they
speed up: a clamp with one Python-number bound through rows of the scalar
(``kernels/scalar_loops.py``), where NumPy's loop against a scalar runs without SIMD.
"""

from __future__ import annotations

import numpy as np

from ..ops import elementwise
from ..ops.promotion import torch_dtype
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

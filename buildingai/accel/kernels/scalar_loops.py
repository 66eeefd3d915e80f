"""Element-wise maximum/minimum against a scalar, at the speed of the array-array loop.

NumPy's SIMD loops for ``maximum``/``minimum`` cover two contiguous operands, but on AVX2
machines not an operand of stride 0, which is what a scalar is: ``np.maximum(x, 0)`` runs
without SIMD. Viewing x as rows of ``ROW`` values and broadcasting one row of the scalar over
them keeps the inner loop contiguous-contiguous, with the same result bit for bit (NaN
propagates alike).
"""

from __future__ import annotations

import numpy as np

ROW = 8192  # values per row: long enough to hide the outer loop, short enough to stay in L1


def _rows(flat, width: int):
    """The first ``len // width * width`` values of ``flat`` as (rows, width), and the rest."""
    whole = flat.size // width * width
    return flat[:whole].reshape(-1, width), flat[whole:]


def extremum_with_scalar(xp, ufunc, x, value, out=None):
    """``ufunc(x, value)`` (``maximum`` or ``minimum``), into ``out`` if given (x's shape and
    dtype). A Python-number ``value`` against a large contiguous NumPy float array goes through
    rows of it; anything else (tensor bounds, small, non-contiguous or non-float arrays, CuPy)
    takes the plain call."""
    if (
        (type(value) is not float and type(value) is not int)
        or xp is not np
        or x.size < 2 * ROW
        or x.dtype.kind != "f"
        or not x.flags.c_contiguous
        or (out is not None and not out.flags.c_contiguous)
    ):
        return ufunc(x, value) if out is None else ufunc(x, value, out=out)
    if out is None:
        out = np.empty_like(x)
    row = np.full(ROW, value, dtype=x.dtype)
    body, tail = _rows(x.reshape(-1), ROW)
    out_body, out_tail = _rows(out.reshape(-1), ROW)
    ufunc(body, row, out=out_body)
    ufunc(tail, row[: tail.size], out=out_tail)
    return out

"""Compiled twins of ``accel/kernels/select.py``: flat arrays (a boolean condition, float32
values), one pass, the choice as a select rather than a branch, so it vectorises."""

from __future__ import annotations

import numpy as np
from numba import njit, prange

kernel = njit(parallel=True, nogil=True, cache=True)


@kernel
def select(condition, a, b, out):
    for i in prange(out.size):
        out[i] = a[i] if condition[i] else b[i]


@kernel
def select_else_value(condition, a, out, value):
    value = np.float32(value)
    for i in prange(out.size):
        out[i] = a[i] if condition[i] else value


@kernel
def value_else_select(condition, b, out, value):
    value = np.float32(value)
    for i in prange(out.size):
        out[i] = value if condition[i] else b[i]

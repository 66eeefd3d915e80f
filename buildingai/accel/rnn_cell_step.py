"""The faster forward of ``rnn_cell_step`` (``ops/rnn_cell_step.py``), one Elman step with its
products: the two products routed as ``matmul``'s are (``products.matmul_array``: BuildingAI's
threads or its own BLAS where one pool takes them, in the math precision in force), then the sum
of the products and biases and the nonlinearity in one compiled pass, ``rnn_cell``'s kernel
(``recurrence.rnn_cell_fused``).
"""

from __future__ import annotations

import numpy as np

from ..ops.rnn_cell_step import RNN_CELL_STEP
from .products import matmul_array
from .recurrence import _rnn_cell_fits, rnn_cell_fused
from .registry import register

_FLOAT32 = np.dtype(np.float32)


def _fits(xp, x, h, w_ih, w_hh, *biases, nonlinearity) -> bool:
    """float32 NumPy operands (``rnn_cell``'s kernel then takes the two products)."""
    for array in (x, w_ih, w_hh):  # a loop, not all(): asked on every step of a cell loop
        if type(array) is not np.ndarray or array.dtype != _FLOAT32:
            return False
    return _rnn_cell_fits(xp, h, h, *biases, nonlinearity=nonlinearity)  # (h's own test)


def rnn_cell_step(ctx, xp, x, h, w_ih, w_hh, *biases, nonlinearity):
    """What ``RNNCellStep.forward`` computes: its products, then ``rnn_cell``'s one pass."""
    gates_x, gates_h = matmul_array(xp, x, w_ih.T), matmul_array(xp, h, w_hh.T)
    return rnn_cell_fused(ctx, xp, gates_x, gates_h, *biases, nonlinearity=nonlinearity)


register(
    RNN_CELL_STEP,
    _fits,
    rnn_cell_step,
    name="rnn_cell_step.fused",
    requires=("numba",),
    description="the two products routed, then the sums and nonlinearity in one compiled pass "
    "(float32)",
)

"""A basic index's gradient added into its input's (``GetItem.add_grad_into``: ``total[index]
+= grad``, the backward engine's sum) where the index takes one block of whole slices along
one axis, as ``split`` and ``chunk`` make (a GPT's q, k and v from one product): as a block of
columns of a row-major array, through ``column_blocks.add_columns``' twin. NumPy's in-place
sum walks such a block one short row at a time: for a (16, 64, 384) input and a third of its
last axis, 50-60 us against the twin's 16 (one thread). A small block (an LSTM cell's h and c
cut from one (N, 2H) array) stays on NumPy: below ``LEAST_ELEMENTS`` its few rows cost less
there than the twin's call.
"""

from __future__ import annotations

from math import prod

import numpy as np

from ..ops.index import GETITEM, one_axis_range
from .kernels import compiled
from .kernels.column_blocks import add_columns
from .registry import register_gradient_into

# Gradients of fewer elements go to NumPy's in-place sum (docs/design_notes/performance.md).
LEAST_ELEMENTS = 1 << 14


def column_block(total, grad, index) -> tuple | None:
    """(total as (a, b, columns), grad as (a, b, width), the block's first column), views both,
    where ``index`` (slices and an Ellipsis) takes whole slices everywhere but along one axis,
    one step-1 range there; total is C-contiguous, grad has the block's shape and dtype and its
    rows (that axis and the ones after it) contiguous, its leading axes but the last one
    foldable into one. None otherwise."""
    if total.size == 0 or not total.flags.c_contiguous or total.dtype != grad.dtype:
        return None
    shape = total.shape
    block = one_axis_range(shape, index)
    if block is None:
        return None
    axis, first, last = block
    if grad.shape != (*shape[:axis], last - first, *shape[axis + 1 :]):
        return None
    outer, inner = shape[:axis], prod(shape[axis + 1 :])
    folded = (prod(outer[:-1]), outer[-1] if outer else 1)
    try:
        block = np.reshape(grad, (*folded, -1), copy=False)
    except ValueError:  # its rows are not laid out as one strided (a, b, width) array
        return None
    if block.shape[2] > 1 and block.strides[2] != grad.itemsize:
        return None
    return total.reshape(*folded, -1), block, first * inner


def _large_numpy_arrays(total, grad, attrs) -> bool:
    return type(total) is np.ndarray and type(grad) is np.ndarray and grad.size >= LEAST_ELEMENTS


def _add_column_block(total, grad, attrs):
    block = column_block(total, grad, attrs["index"])
    if block is None:
        return NotImplemented
    rows, block_rows, start = block
    if not compiled.run(add_columns, [rows, block_rows], {"start": start}):
        add_columns(np, rows, block_rows, start=start)
    return None


register_gradient_into(
    GETITEM,
    _large_numpy_arrays,
    _add_column_block,
    name="getitem.add_columns",
    description="a split's gradient added into its input's sum as a block of columns, in one "
    "pass per row through a compiled twin",
)

"""Indexing primitives.

``getitem`` reads ``x[index]``; its adjoint ``zeros_index_add`` adds values into a zero array at
the same index (summing where an advanced index repeats a position). Each is the other's backward,
so gradients of any order flow through indexing. ``index`` is a tuple already normalised by the
public function: ints, slices, None, Ellipsis and integer or boolean arrays.
"""

from __future__ import annotations

from .base import Op


def has_advanced(index: tuple) -> bool:
    """True when the index holds an array (advanced indexing copies and may repeat positions)."""
    return any(hasattr(part, "shape") for part in index)


class GetItem(Op):
    name, onnx = "getitem", "Slice"
    save_inputs = False

    def forward(self, ctx, xp, x, *, index):
        ctx.input_shape = x.shape
        return x[index]

    def backward(self, ctx, grad):
        return (grad.zeros_index_add(ctx.input_shape, ctx.attrs["index"]),)


class ZerosIndexAdd(Op):
    """``out = zeros(shape); out[index] += values`` (repeated positions accumulate)."""

    name = "zeros_index_add"
    save_inputs = False

    def forward(self, ctx, xp, values, *, shape, index):
        out = xp.zeros(shape, dtype=values.dtype)
        if has_advanced(index):
            xp.add.at(out, index, values)
        else:
            out[index] = values
        return out

    def backward(self, ctx, grad):
        return (grad.getitem(ctx.attrs["index"]),)


GETITEM, ZEROS_INDEX_ADD = GetItem(), ZerosIndexAdd()

"""Op records that only frozen graphs create: they stand for values the traced call made
outside dispatch (``zeros(batch, hidden)``), so that their sizes can stay symbolic."""

from __future__ import annotations

import numpy as np

from ..ops.abstract import ValueSpec
from ..ops.base import Op


class Full(Op):
    """An array of ``shape`` filled with ``value`` (no inputs; constant, so no gradient)."""

    name = "full"
    save_inputs, differentiable = False, False

    def forward(self, ctx, xp, *, shape, value, dtype):
        return xp.full(shape, value, dtype=dtype)

    def infer(self, *, shape, value, dtype) -> ValueSpec:
        return ValueSpec(tuple(shape), np.dtype(dtype))

    def to_onnx(self, emit, inputs, output, attrs):
        dtype = np.dtype(attrs["dtype"])
        fill = emit.onnx.numpy_helper.from_array(np.asarray([attrs["value"]], dtype=dtype))
        emit.node("ConstantOfShape", [emit.ints(attrs["shape"])], output, dtype=dtype, value=fill)


FULL = Full()

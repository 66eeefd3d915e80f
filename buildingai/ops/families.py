"""Op families: the ``infer`` and ``cost`` that whole groups of records share.

A record inherits from its family and overrides only what differs:

- ``ElementwiseOp``: inputs broadcast; the dtype follows PyTorch's promotion rule
  (``promotion.result_type``); ``FloatFunction`` (exp, sqrt, sigmoid...) gives integer inputs
  the default float dtype; ``SameDtypeFunction`` keeps its input's dtype.
- ``ReductionOp``: ``axes`` (None or a tuple of non-negative ints) and ``keepdims`` attributes;
  the input is read once.
- ``ViewOp`` / ``CopyOp``: ops that move elements without arithmetic; a view moves no bytes.

FLOP counts are estimates per element, with every arithmetic operation and every
transcendental function (exp, log, tanh, erf...) counted as one.
"""

from __future__ import annotations

from contextlib import contextmanager

import numpy as np

from .abstract import (
    SymbolicSizeError,
    ValueSpec,
    broadcast_shapes,
    memory_cost,
    reduced_shape,
)
from .base import Op
from .promotion import INTEGRAL, float_dtype, result_type

_INT64 = np.dtype(np.int64)


# ----- naming the op in symbolic-size errors ------------------------------------------------------


@contextmanager
def symbolic_sizes(op: str):
    """Name ``op`` in a ``SymbolicSizeError`` raised by size arithmetic inside the block."""
    try:
        yield
    except SymbolicSizeError as error:
        if error.message.startswith("["):
            raise
        raise SymbolicSizeError(f"[{op}] {error.message}", help=error.help) from None


def tensor_specs(specs) -> list:
    return [spec for spec in specs if isinstance(spec, ValueSpec)]


def device_of(specs) -> str:
    for spec in specs:
        if isinstance(spec, ValueSpec):
            return spec.device
    return "cpu"


# ----- the families ------------------------------------------------------------------------------


class ElementwiseOp(Op):
    """An op applied element by element to broadcast inputs (tensors or Python scalars).

    ``infer``: the broadcast shape and ``output_dtype`` (PyTorch's ``result_type`` of the
    operands). ``cost``: ``flops_per_element`` per output element, every input read once.
    """

    flops_per_element = 1

    def output_dtype(self, *operands) -> np.dtype:
        """The output dtype for these operands (arrays, specs or scalars)."""
        return result_type(*operands)

    def infer(self, *specs, **attrs) -> ValueSpec:
        tensors = tensor_specs(specs)
        with symbolic_sizes(self.name):
            shape = broadcast_shapes(*(spec.shape for spec in tensors))
        return ValueSpec(shape, self.output_dtype(*specs), device_of(tensors))

    def cost(self, *specs, **attrs) -> tuple:
        return memory_cost(specs, self.infer(*specs, **attrs), self.flops_per_element)


class FloatFunction(ElementwiseOp):
    """An element-wise function defined on real numbers only (exp, log, sqrt, sigmoid...):
    integer and bool inputs give the default float dtype."""

    def output_dtype(self, *operands) -> np.dtype:
        return float_dtype(result_type(*operands))


class SameDtypeFunction(ElementwiseOp):
    """An element-wise function whose output has its (first) input's dtype (neg, abs, floor...)."""

    def output_dtype(self, *operands) -> np.dtype:
        return np.dtype(operands[0].dtype)


class ReductionOp(Op):
    """A reduction over ``axes`` (None: every axis) with ``keepdims``; the input is read once,
    ``flops_per_input`` per input element. Under autocast a reduction sums in float32."""

    flops_per_input = 1
    autocast = "float32"

    def output_dtype(self, x: ValueSpec, **attrs) -> np.dtype:
        return x.dtype

    def infer(self, x, **attrs) -> ValueSpec:
        shape = reduced_shape(x.shape, attrs.get("axes"), attrs.get("keepdims", False))
        return ValueSpec(shape, self.output_dtype(x, **attrs), x.device)

    def cost(self, x, **attrs) -> tuple:
        out = self.infer(x, **attrs)
        with symbolic_sizes(self.name):
            return (x.numel * self.flops_per_input, x.nbytes, out.nbytes)


def accumulator_dtype(dtype: np.dtype) -> np.dtype:
    """The dtype of a sum or product: int64 for every integer and bool (PyTorch; NumPy would
    give uint64 for unsigned inputs), the input's own for floats."""
    return _INT64 if dtype.kind in INTEGRAL else dtype


class ViewOp(Op):
    """An op whose output is a view of its input: it moves no bytes and computes nothing."""

    save_inputs, view = False, True

    def cost(self, *specs, **attrs) -> tuple:
        self.infer(*specs, **attrs)  # the same errors as infer for inputs that do not fit
        return (0, 0, 0)


class CopyOp(Op):
    """An op that copies elements without arithmetic: every input read once, the output
    written once, no FLOPs."""

    def cost(self, *specs, **attrs) -> tuple:
        out = self.infer(*specs, **attrs)
        with symbolic_sizes(self.name):
            _, read, written = memory_cost(specs, out)
        return (0, read, written)


__all__ = [
    "CopyOp",
    "ElementwiseOp",
    "FloatFunction",
    "ReductionOp",
    "SameDtypeFunction",
    "ViewOp",
    "accumulator_dtype",
    "symbolic_sizes",
]

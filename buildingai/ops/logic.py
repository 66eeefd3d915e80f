"""Element-wise comparisons, logic and value tests (boolean results) and bitwise logic: ops
without gradient. Operands of different dtypes meet in PyTorch's result dtype
(``promotion.result_type``), so a float32 tensor is compared with a 0-d float64 one in float32.
"""

from __future__ import annotations

import numpy as np

from ..errors import DTypeError
from .abstract import ValueSpec
from .families import ElementwiseOp
from .promotion import INTEGRAL, cast_operands, is_float_dtype, result_type

_BOOL = np.dtype(bool)


def _onnx_result_type(emit, inputs: list):
    """``result_type`` of ONNX values (graph constants given as literals with a ``value``), so
    that an exported comparison runs in the dtype forward compares in; None where a shape is
    not known to the emitter (the operands' own rule applies then)."""
    operands = []
    for ref in inputs:
        if hasattr(ref, "value"):
            operands.append(ref.value)
        elif ref in emit.shapes:
            operands.append(ValueSpec(tuple(emit.shapes[ref]), emit.dtype(ref)))
        else:
            return None
    return result_type(*operands)


def _call_promoted(function, arrays: tuple):
    """``function(*arrays)`` with two operands of different dtypes first cast to PyTorch's
    result dtype (a float32 tensor meets a 0-d float64 one in float32, as in PyTorch)."""
    if len(arrays) == 2:
        a, b = arrays
        if hasattr(a, "dtype") and hasattr(b, "dtype") and a.dtype != b.dtype:
            return function(*cast_operands(arrays, result_type(a, b)))
    return function(*arrays)


class Predicate(ElementwiseOp):
    """An element-wise test with a boolean result and no gradient: comparisons, logic and value
    tests (isnan...). ``ufunc`` names the NumPy/CuPy function, ``onnx_type`` the ONNX
    operator where one matches (``ne`` and ``isfinite`` are composed)."""

    save_inputs = False
    differentiable = False

    def __init__(self, name: str, ufunc: str, onnx_type: str | None) -> None:
        self.name, self.ufunc, self.onnx_type = name, ufunc, onnx_type

    def output_dtype(self, *operands) -> np.dtype:
        return _BOOL

    def forward(self, ctx, xp, *arrays):
        return _call_promoted(getattr(xp, self.ufunc), arrays)

    def to_onnx(self, emit, inputs, output, attrs):
        operands = emit.operands(inputs, _onnx_result_type(emit, inputs))
        if self.name.startswith("logical_"):  # ONNX logic takes booleans only
            operands = [o if emit.dtype(o).kind == "b" else emit.cast(o, "bool") for o in operands]
        if self.name in ("isnan", "isinf", "isfinite"):
            _value_test_onnx(self.name, emit, operands[0], output)
        elif self.name == "ne":
            emit.node("Not", [emit.node("Equal", operands, dtype="bool")], output)
        else:
            emit.node(self.onnx_type, operands, output, dtype="bool")


def _value_test_onnx(name: str, emit, x: str, output: str) -> None:
    """isnan / isinf / isfinite. Integers and booleans are always finite (ONNX's tests take
    floats only); float16 and bfloat16 are tested in float32 (exact, and ONNX Runtime's IsInf
    has no float16 kernel)."""
    if not is_float_dtype(emit.dtype(x)):
        finite = emit.node("Equal", [x, x], dtype="bool")
        emit.node("Identity" if name == "isfinite" else "Not", [finite], output)
        return
    if emit.dtype(x).itemsize < 4:
        x = emit.cast(x, "float32")
    if name == "isfinite":
        nan = emit.node("IsNaN", [x], dtype="bool")
        inf = emit.node("IsInf", [x], dtype="bool")
        emit.node("Not", [emit.node("Or", [nan, inf])], output)
    else:
        emit.node("IsNaN" if name == "isnan" else "IsInf", [x], output, dtype="bool")


class Bitwise(ElementwiseOp):
    """Bitwise logic on integer or boolean tensors (on booleans, the logical operation), in
    PyTorch's result dtype; no gradient."""

    save_inputs = False
    differentiable = False

    def __init__(self, name: str, ufunc: str, onnx_type: str) -> None:
        self.name, self.ufunc, self.onnx_type = name, ufunc, onnx_type

    def check(self, *arrays):
        for value in arrays:
            if hasattr(value, "dtype") and value.dtype.kind not in INTEGRAL:
                shown = ", ".join(str(getattr(v, "dtype", type(v).__name__)) for v in arrays)
                raise DTypeError(
                    f"[{self.name}] needs boolean or integer tensors, got {shown}",
                    help="compare first (e.g. (x > 0) & (y > 0)), or use logical_and/logical_or "
                    "for truth values of any dtype",
                )

    def forward(self, ctx, xp, *arrays):
        return _call_promoted(getattr(xp, self.ufunc), arrays)

    def to_onnx(self, emit, inputs, output, attrs):
        operands = emit.operands(inputs, emit.dtype(output))
        if emit.dtype(output).kind == "b":  # ONNX's bitwise ops take integers only
            logical = {"bitwise_and": "And", "bitwise_or": "Or", "bitwise_xor": "Xor"}
            emit.node(logical.get(self.name, "Not"), operands, output)
            return
        if emit.opset < 18:
            raise DTypeError(
                f"[{self.name}] ONNX has bitwise operators on integers from opset 18 "
                f"(exporting at opset {emit.opset})",
                help="export with opset=18 or later, or use booleans (logical operators)",
            )
        emit.node(self.onnx_type, operands, output)


EQ = Predicate("eq", "equal", "Equal")
NE = Predicate("ne", "not_equal", None)
LT = Predicate("lt", "less", "Less")
LE = Predicate("le", "less_equal", "LessOrEqual")
GT = Predicate("gt", "greater", "Greater")
GE = Predicate("ge", "greater_equal", "GreaterOrEqual")

LOGICAL_AND = Predicate("logical_and", "logical_and", "And")
LOGICAL_OR = Predicate("logical_or", "logical_or", "Or")
LOGICAL_XOR = Predicate("logical_xor", "logical_xor", "Xor")
LOGICAL_NOT = Predicate("logical_not", "logical_not", "Not")
BITWISE_AND = Bitwise("bitwise_and", "bitwise_and", "BitwiseAnd")
BITWISE_OR = Bitwise("bitwise_or", "bitwise_or", "BitwiseOr")
BITWISE_XOR = Bitwise("bitwise_xor", "bitwise_xor", "BitwiseXor")
BITWISE_NOT = Bitwise("bitwise_not", "invert", "BitwiseNot")

ISNAN = Predicate("isnan", "isnan", "IsNaN")
ISINF = Predicate("isinf", "isinf", "IsInf")
ISFINITE = Predicate("isfinite", "isfinite", None)

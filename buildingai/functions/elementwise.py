"""Element-wise functions: ``buildingai.exp(x)`` and ``x.exp()`` alike."""

from __future__ import annotations

from ..autograd.dispatch import apply
from ..ops import elementwise as ops


def add(a, b):
    """a + b, broadcast."""
    return apply(ops.ADD, a, b)


def sub(a, b):
    """a - b, broadcast."""
    return apply(ops.SUB, a, b)


def mul(a, b):
    """a * b, broadcast."""
    return apply(ops.MUL, a, b)


def div(a, b):
    """a / b (true division), broadcast."""
    return apply(ops.DIV, a, b)


def neg(x):
    return apply(ops.NEG, x)


def exp(x):
    return apply(ops.EXP, x)


def log(x):
    """Natural logarithm."""
    return apply(ops.LOG, x)


def where(condition, a, b):
    """Elements of ``a`` where ``condition`` holds, else of ``b`` (all three broadcast)."""
    return apply(ops.WHERE, condition, a, b)


def _tensor_where(self, condition, other):
    """``x.where(condition, other)``: PyTorch's method form of ``where(condition, x, other)``."""
    return where(condition, self, other)


def eq(a, b):
    return apply(ops.EQ, a, b)


def ne(a, b):
    return apply(ops.NE, a, b)


def lt(a, b):
    return apply(ops.LT, a, b)


def le(a, b):
    return apply(ops.LE, a, b)


def gt(a, b):
    return apply(ops.GT, a, b)


def ge(a, b):
    return apply(ops.GE, a, b)


subtract, multiply, divide, true_divide, negative = sub, mul, div, div, neg

__all__ = ["add", "sub", "mul", "div", "neg", "exp", "log", "where",
           "eq", "ne", "lt", "le", "gt", "ge",
           "subtract", "multiply", "divide", "true_divide", "negative"]  # fmt: skip


def _reflected(function):
    def reflected(self, other):
        return function(other, self)

    reflected.__name__ = f"r{function.__name__}"
    return reflected


TENSOR_METHODS = {
    "__add__": add, "__radd__": _reflected(add),
    "__sub__": sub, "__rsub__": _reflected(sub),
    "__mul__": mul, "__rmul__": _reflected(mul),
    "__truediv__": div, "__rtruediv__": _reflected(div),
    "__neg__": neg,
    "__eq__": eq, "__ne__": ne, "__lt__": lt, "__le__": le, "__gt__": gt, "__ge__": ge,
    "eq": eq, "ne": ne, "lt": lt, "le": le, "gt": gt, "ge": ge, "where": _tensor_where,
    "add": add, "sub": sub, "mul": mul, "div": div, "neg": neg, "exp": exp, "log": log,
}  # fmt: skip

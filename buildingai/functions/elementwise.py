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


subtract, multiply, divide, true_divide, negative = sub, mul, div, div, neg

__all__ = ["add", "sub", "mul", "div", "neg", "exp", "log",
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
    "add": add, "sub": sub, "mul": mul, "div": div, "neg": neg, "exp": exp, "log": log,
}  # fmt: skip

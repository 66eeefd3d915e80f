"""Element-wise primitive ops: arithmetic and math functions, with broadcasting.

Backward rules return gradients shaped like the broadcast output; the engine sums them back to
each input's shape. Python scalars may stand for any input and receive no gradient.
"""

from __future__ import annotations

from .base import Op


def _is_tensor(value) -> bool:
    return hasattr(value, "requires_grad")


def _needs(value) -> bool:
    return _is_tensor(value) and value.requires_grad


class Add(Op):
    name, onnx = "add", "Add"
    save_inputs = False

    def forward(self, ctx, xp, a, b):
        return xp.add(a, b)

    def backward(self, ctx, grad):
        return grad, grad


class Sub(Op):
    name, onnx = "sub", "Sub"
    save_inputs = False

    def forward(self, ctx, xp, a, b):
        return xp.subtract(a, b)

    def backward(self, ctx, grad):
        return grad, -grad


class Mul(Op):
    name, onnx = "mul", "Mul"

    def forward(self, ctx, xp, a, b):
        return xp.multiply(a, b)

    def backward(self, ctx, grad):
        a, b = ctx.inputs
        return (grad * b if _needs(a) else None), (grad * a if _needs(b) else None)


class Div(Op):
    name, onnx = "div", "Div"

    def forward(self, ctx, xp, a, b):
        return xp.true_divide(a, b)

    def backward(self, ctx, grad):
        a, b = ctx.inputs
        grad_a = grad / b if _needs(a) else None
        grad_b = -grad * a / (b * b) if _needs(b) else None
        return grad_a, grad_b


class Neg(Op):
    name, onnx = "neg", "Neg"
    save_inputs = False

    def forward(self, ctx, xp, x):
        return xp.negative(x)

    def backward(self, ctx, grad):
        return (-grad,)


class Exp(Op):
    name, onnx = "exp", "Exp"
    save_inputs, save_output = False, True

    def forward(self, ctx, xp, x):
        return xp.exp(x)

    def backward(self, ctx, grad):
        return (grad * ctx.output,)


class Log(Op):
    name, onnx = "log", "Log"

    def forward(self, ctx, xp, x):
        return xp.log(x)

    def backward(self, ctx, grad):
        (x,) = ctx.inputs
        return (grad / x,)


ADD, SUB, MUL, DIV, NEG, EXP, LOG = Add(), Sub(), Mul(), Div(), Neg(), Exp(), Log()


class Where(Op):
    """``condition ? a : b``; the condition gets no gradient."""

    name, onnx = "where", "Where"
    save_inputs = True

    def forward(self, ctx, xp, condition, a, b):
        return xp.where(condition, a, b)

    def backward(self, ctx, grad):
        condition, a, b = ctx.inputs
        zero = grad * 0
        grad_a = grad.where(condition, zero) if _needs(a) else None
        grad_b = zero.where(condition, grad) if _needs(b) else None
        return None, grad_a, grad_b


class Compare(Op):
    """An element-wise comparison (no gradient); ``ufunc`` names the NumPy function."""

    save_inputs = False
    differentiable = False

    def __init__(self, name: str, ufunc: str, onnx: str | None) -> None:
        self.name, self.ufunc, self.onnx = name, ufunc, onnx

    def forward(self, ctx, xp, a, b):
        return getattr(xp, self.ufunc)(a, b)


WHERE = Where()
EQ = Compare("eq", "equal", "Equal")
NE = Compare("ne", "not_equal", None)
LT = Compare("lt", "less", "Less")
LE = Compare("le", "less_equal", "LessOrEqual")
GT = Compare("gt", "greater", "Greater")
GE = Compare("ge", "greater_equal", "GreaterOrEqual")

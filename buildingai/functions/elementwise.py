"""Element-wise functions: ``buildingai.exp(x)`` and ``x.exp()`` alike.

Every function accepts Tensors or Python scalars, broadcasts binary inputs, and follows PyTorch's
semantics (and dtype rules) where NumPy and PyTorch differ.
"""

from __future__ import annotations

from ..autograd.dispatch import apply, binary_operator
from ..autograd.tensor import Tensor
from ..errors import BuildingAIError
from ..ops import activation, special
from ..ops import elementwise as ops
from .creation import as_tensor
from .memory_format import MemoryFormat, check_memory_format, preserve_format
from .positions import nonzero
from .rounding import rounded_division

TensorLike = Tensor | float | int | bool

# ----- arithmetic -------------------------------------------------------------------------------


# Binary ops run through dispatch's operator path: exactly apply(op, a, b), with its steps for
# the commonest call (two CPU tensors, or a tensor and a number, that no mode watches) inline.
_ADD, _SUB, _MUL, _DIV, _POW = map(binary_operator, (ops.ADD, ops.SUB, ops.MUL, ops.DIV, ops.POW))
_FLOOR_DIVIDE, _REMAINDER = map(binary_operator, (ops.FLOOR_DIVIDE, ops.REMAINDER))
_MAXIMUM, _MINIMUM = map(binary_operator, (ops.MAXIMUM, ops.MINIMUM))
_EQ, _NE, _LT, _LE, _GT, _GE = map(
    binary_operator, (ops.EQ, ops.NE, ops.LT, ops.LE, ops.GT, ops.GE)
)
_LOGICAL_AND, _LOGICAL_OR, _LOGICAL_XOR = map(
    binary_operator, (ops.LOGICAL_AND, ops.LOGICAL_OR, ops.LOGICAL_XOR)
)


def add(a: TensorLike, b: TensorLike, *, alpha: float = 1) -> Tensor:
    """a + alpha * b (``alpha`` as in ``torch.add``). a, b: broadcastable -> the broadcast shape."""
    if alpha != 1:
        b = _MUL(b, alpha)
    return _ADD(a, b)


def sub(a: TensorLike, b: TensorLike, *, alpha: float = 1) -> Tensor:
    """a - alpha * b (``alpha`` as in ``torch.sub``). a, b: broadcastable -> the broadcast shape."""
    if alpha != 1:
        b = _MUL(b, alpha)
    return _SUB(a, b)


def mul(a: TensorLike, b: TensorLike) -> Tensor:
    """a * b. a, b: broadcastable -> the broadcast shape."""
    return _MUL(a, b)


def div(a: TensorLike, b: TensorLike, *, rounding_mode: str | None = None) -> Tensor:
    """a / b. a, b: broadcastable -> the broadcast shape. ``rounding_mode`` as in ``torch.div``:
    None is true division (integers give the default float dtype); ``"floor"`` rounds down
    (``floor_divide``) and ``"trunc"`` towards zero, both keeping an integer dtype. A rounded
    float quotient requires grad with a zero gradient, as in PyTorch."""
    if rounding_mode is None:
        return _DIV(a, b)
    return rounded_division(a, b, rounding_mode)


def neg(x: TensorLike) -> Tensor:
    """-x. x: any shape (*) -> the same shape."""
    return apply(ops.NEG, _operand(x))


def pow(base: TensorLike, exponent: TensorLike) -> Tensor:  # noqa: A001 - PyTorch's name
    """base ** exponent; either may be a Python scalar. base, exponent: broadcastable -> the
    broadcast shape.

    The gradient with respect to the exponent (base^exponent * log(base)) is computed only when
    the exponent is a tensor that requires grad.
    """
    return _POW(base, exponent)


def floor_divide(a: TensorLike, b: TensorLike) -> Tensor:
    """floor(a / b) (Python's ``//``: -7 // 2 == -4). A float result has a zero gradient, as
    ``div(a, b, rounding_mode="floor")`` (PyTorch's ``floor_divide`` raises on backward).
    a, b: broadcastable -> the broadcast shape."""
    return _FLOOR_DIVIDE(a, b)


def remainder(a: TensorLike, b: TensorLike) -> Tensor:
    """a - floor(a / b) * b (Python's ``%``: the result takes the divisor's sign).
    a, b: broadcastable -> the broadcast shape."""
    return _REMAINDER(a, b)


def maximum(a: TensorLike, b: TensorLike) -> Tensor:
    """Element-wise maximum; NaN propagates. Ties split the gradient in halves.
    a, b: broadcastable -> the broadcast shape."""
    return _MAXIMUM(a, b)


def minimum(a: TensorLike, b: TensorLike) -> Tensor:
    """Element-wise minimum; NaN propagates. Ties split the gradient in halves.
    a, b: broadcastable -> the broadcast shape."""
    return _MINIMUM(a, b)


def clamp(x: TensorLike, min: TensorLike | None = None, max: TensorLike | None = None) -> Tensor:  # noqa: A002
    """Limit x to [min, max]; each bound is None, a scalar or a tensor broadcast against x.

    x and any tensor bounds broadcast together -> the broadcast shape (x's shape when the
    bounds are scalars). Where min > max the result is max (PyTorch). At a boundary the
    gradient goes to x.
    """
    if min is None and max is None:
        raise BuildingAIError(
            "[clamp] needs at least one of min and max", help="pass min=..., max=... or both"
        )
    return apply(ops.CLAMP, _operand(x), min, max)


clip = clamp

# ----- math functions ---------------------------------------------------------------------------


def exp(x: TensorLike) -> Tensor:
    """e ** x. x: any shape (*) -> the same shape."""
    return apply(ops.EXP, _operand(x))


def expm1(x: TensorLike) -> Tensor:
    """exp(x) - 1, accurate for |x| near 0. x: any shape (*) -> the same shape."""
    return apply(ops.EXPM1, _operand(x))


def log(x: TensorLike) -> Tensor:
    """Natural logarithm. x: any shape (*) -> the same shape."""
    return apply(ops.LOG, _operand(x))


def log1p(x: TensorLike) -> Tensor:
    """log(1 + x), accurate for |x| near 0. x: any shape (*) -> the same shape."""
    return apply(ops.LOG1P, _operand(x))


def sqrt(x: TensorLike) -> Tensor:
    """Square root (NaN for negative inputs). x: any shape (*) -> the same shape."""
    return apply(ops.SQRT, _operand(x))


def rsqrt(x: TensorLike) -> Tensor:
    """1 / sqrt(x). x: any shape (*) -> the same shape."""
    return apply(ops.RSQRT, _operand(x))


def reciprocal(x: TensorLike) -> Tensor:
    """1 / x (integers give the default float dtype). x: any shape (*) -> the same shape."""
    return apply(ops.RECIPROCAL, _operand(x))


def square(x: TensorLike) -> Tensor:
    """x * x. x: any shape (*) -> the same shape."""
    return apply(ops.SQUARE, _operand(x))


def abs(x: TensorLike) -> Tensor:  # noqa: A001 - PyTorch's name
    """|x|; the gradient is sign(x) (0 at 0). x: any shape (*) -> the same shape."""
    return apply(ops.ABS, _operand(x))


def sin(x: TensorLike) -> Tensor:
    """Sine (x in radians). x: any shape (*) -> the same shape."""
    return apply(ops.SIN, _operand(x))


def cos(x: TensorLike) -> Tensor:
    """Cosine (x in radians). x: any shape (*) -> the same shape."""
    return apply(ops.COS, _operand(x))


def tanh(input: TensorLike) -> Tensor:  # noqa: A002 - PyTorch's name
    """Hyperbolic tangent. input: any shape (*) -> the same shape."""
    return apply(ops.TANH, _operand(input))


def erf(x: TensorLike) -> Tensor:
    """The error function 2/sqrt(pi) * integral_0^x exp(-t^2) dt.
    x: any shape (*) -> the same shape."""
    return apply(special.ERF, _operand(x))


# ----- activations -----------------------------------------------------------------------------


def sigmoid(input: TensorLike) -> Tensor:  # noqa: A002 - PyTorch's name
    """1 / (1 + exp(-input)), finite and accurate for any input. input: any shape (*) -> the same shape."""
    return apply(special.SIGMOID, _operand(input))


def relu(x: TensorLike) -> Tensor:
    """max(x, 0); the gradient at 0 is 0. x: any shape (*) -> the same shape."""
    return apply(activation.RELU, _operand(x))


def leaky_relu(x: TensorLike, negative_slope: float = 0.01) -> Tensor:
    """x for x > 0, negative_slope * x otherwise. x: any shape (*) -> the same shape."""
    return apply(activation.LEAKY_RELU, _operand(x), negative_slope=negative_slope)


def gelu(x: TensorLike, approximate: str = "none") -> Tensor:
    """x * Phi(x) with Phi the standard normal CDF (``approximate="none"``, through erf), or
    0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) with ``approximate="tanh"``.
    x: any shape (*) -> the same shape."""
    if approximate not in ("none", "tanh"):
        raise BuildingAIError(
            f"[gelu] approximate must be 'none' or 'tanh', got {approximate!r}",
            help="use gelu(x) for the exact form or gelu(x, approximate='tanh')",
        )
    return apply(special.GELU, _operand(x), approximate=approximate)


def silu(x: TensorLike) -> Tensor:
    """x * sigmoid(x) (also called swish). x: any shape (*) -> the same shape."""
    return apply(special.SILU, _operand(x))


def softplus(x: TensorLike, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """log(1 + exp(beta x)) / beta, and x itself where beta x > threshold (as in PyTorch).
    Finite for any x. x: any shape (*) -> the same shape."""
    return apply(special.SOFTPLUS, _operand(x), beta=beta, threshold=threshold)


# ----- piecewise-constant functions (zero gradient) --------------------------------------------


def sign(x: TensorLike) -> Tensor:
    """-1, 0 or 1 (0 for NaN, as in PyTorch); zero gradient. x: any shape (*) -> the same shape."""
    return apply(ops.SIGN, _operand(x))


def floor(x: TensorLike) -> Tensor:
    """Round down; zero gradient. Integer tensors are returned as a copy.
    x: any shape (*) -> the same shape."""
    return apply(ops.FLOOR, _operand(x))


def ceil(x: TensorLike) -> Tensor:
    """Round up; zero gradient. Integer tensors are returned as a copy.
    x: any shape (*) -> the same shape."""
    return apply(ops.CEIL, _operand(x))


def round(x: TensorLike, decimals: int = 0) -> Tensor:  # noqa: A001 - PyTorch's name
    """Round half to even, to ``decimals`` decimal places; zero gradient.
    x: any shape (*) -> the same shape."""
    return apply(ops.ROUND, _operand(x), decimals=int(decimals))


def clone(x: Tensor, *, memory_format: MemoryFormat = preserve_format) -> Tensor:
    """A copy with its own memory, still in the graph (the gradient passes through).
    x: any shape (*) -> the same shape.

    ``memory_format`` takes PyTorch's values; every one gives the same row-major copy here
    (``buildingai.functions.memory_format`` says why ``channels_last`` changes nothing).
    """
    if memory_format is not preserve_format:
        check_memory_format("clone", memory_format, x.ndim, allow_preserve=True)
    return apply(ops.CLONE, _operand(x))


# ----- selection and comparison --------------------------------------------------------------


def where(condition: TensorLike, a: TensorLike = None, b: TensorLike = None):
    """Elements of ``a`` where ``condition`` holds, else of ``b``. condition, a, b:
    broadcastable -> the broadcast shape of all three. ``where(condition)`` alone is
    ``nonzero(condition, as_tuple=True)``: a tuple of one index tensor per dimension, as in
    PyTorch."""
    if a is None and b is None:
        return nonzero(_operand(condition), as_tuple=True)
    if a is None or b is None:
        raise TypeError(
            "[where] takes condition, input and other, or condition alone (got one of input "
            "and other)"
        )
    return apply(ops.WHERE, condition, a, b)


def _operand(x):
    """A one-input function's input as a Tensor: a Python number becomes a 0-d tensor of the
    default dtype for its kind (float32, int64, bool), as ``buildingai.tensor`` makes it."""
    return x if isinstance(x, Tensor) else as_tensor(x)


def _tensor_where(self, condition, other):
    """``x.where(condition, other)``: PyTorch's method form of ``where(condition, x, other)``."""
    return where(condition, self, other)


def eq(a: TensorLike, b: TensorLike) -> Tensor:
    """a == b (boolean, no gradient). a, b: broadcastable -> the broadcast shape."""
    return _EQ(a, b)


def ne(a: TensorLike, b: TensorLike) -> Tensor:
    """a != b (boolean, no gradient). a, b: broadcastable -> the broadcast shape."""
    return _NE(a, b)


def lt(a: TensorLike, b: TensorLike) -> Tensor:
    """a < b (boolean, no gradient). a, b: broadcastable -> the broadcast shape."""
    return _LT(a, b)


def le(a: TensorLike, b: TensorLike) -> Tensor:
    """a <= b (boolean, no gradient). a, b: broadcastable -> the broadcast shape."""
    return _LE(a, b)


def gt(a: TensorLike, b: TensorLike) -> Tensor:
    """a > b (boolean, no gradient). a, b: broadcastable -> the broadcast shape."""
    return _GT(a, b)


def ge(a: TensorLike, b: TensorLike) -> Tensor:
    """a >= b (boolean, no gradient). a, b: broadcastable -> the broadcast shape."""
    return _GE(a, b)


def isnan(x: TensorLike) -> Tensor:
    """True where x is NaN (boolean, no gradient). x: any shape (*) -> the same shape."""
    return apply(ops.ISNAN, _operand(x))


def isinf(x: TensorLike) -> Tensor:
    """True where x is +inf or -inf (boolean, no gradient). x: any shape (*) -> the same shape."""
    return apply(ops.ISINF, _operand(x))


def isfinite(x: TensorLike) -> Tensor:
    """True where x is neither NaN nor infinite (boolean, no gradient).
    x: any shape (*) -> the same shape."""
    return apply(ops.ISFINITE, _operand(x))


# ----- logic ------------------------------------------------------------------------------------


def logical_and(a: TensorLike, b: TensorLike) -> Tensor:
    """Truth of a and b (nonzero is true), any dtype; boolean result.
    a, b: broadcastable -> the broadcast shape."""
    return _LOGICAL_AND(a, b)


def logical_or(a: TensorLike, b: TensorLike) -> Tensor:
    """Truth of a or b (nonzero is true), any dtype; boolean result.
    a, b: broadcastable -> the broadcast shape."""
    return _LOGICAL_OR(a, b)


def logical_xor(a: TensorLike, b: TensorLike) -> Tensor:
    """Truth of exactly one of a and b (nonzero is true), any dtype; boolean result.
    a, b: broadcastable -> the broadcast shape."""
    return _LOGICAL_XOR(a, b)


def logical_not(x: TensorLike) -> Tensor:
    """Truth of not x (zero is true), any dtype; boolean result.
    x: any shape (*) -> the same shape."""
    return apply(ops.LOGICAL_NOT, _operand(x))


def bitwise_and(a: TensorLike, b: TensorLike) -> Tensor:
    """``a & b`` for integer or boolean tensors (logical and on booleans).
    a, b: broadcastable -> the broadcast shape."""
    return apply(ops.BITWISE_AND, a, b)


def bitwise_or(a: TensorLike, b: TensorLike) -> Tensor:
    """``a | b`` for integer or boolean tensors. a, b: broadcastable -> the broadcast shape."""
    return apply(ops.BITWISE_OR, a, b)


def bitwise_xor(a: TensorLike, b: TensorLike) -> Tensor:
    """``a ^ b`` for integer or boolean tensors. a, b: broadcastable -> the broadcast shape."""
    return apply(ops.BITWISE_XOR, a, b)


def bitwise_not(x: TensorLike) -> Tensor:
    """``~x`` for integer or boolean tensors (logical not on booleans).
    x: any shape (*) -> the same shape."""
    return apply(ops.BITWISE_NOT, _operand(x))


subtract, multiply, divide, true_divide, negative = sub, mul, div, div, neg
absolute = abs

__all__ = ["add", "sub", "mul", "div", "neg", "pow", "floor_divide", "remainder",
           "maximum", "minimum", "clamp", "clip",
           "exp", "expm1", "log", "log1p", "sqrt", "rsqrt", "reciprocal", "square", "abs",
           "sin", "cos", "tanh", "erf",
           "sigmoid", "relu", "leaky_relu", "gelu", "silu", "softplus",
           "sign", "floor", "ceil", "round", "clone",
           "where", "eq", "ne", "lt", "le", "gt", "ge", "isnan", "isinf", "isfinite",
           "logical_and", "logical_or", "logical_xor", "logical_not",
           "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not",
           "subtract", "multiply", "divide", "true_divide", "negative", "absolute"]  # fmt: skip


def _reflected(function):
    def reflected(self, other):
        return function(other, self)

    reflected.__name__ = f"r{function.__name__}"
    return reflected


TENSOR_METHODS = {
    "__add__": _ADD, "__radd__": _reflected(_ADD),
    "__sub__": _SUB, "__rsub__": _reflected(_SUB),
    "__mul__": _MUL, "__rmul__": _reflected(_MUL),
    "__truediv__": _DIV, "__rtruediv__": _reflected(_DIV),
    "__pow__": pow, "__rpow__": _reflected(pow),
    "__floordiv__": floor_divide, "__rfloordiv__": _reflected(floor_divide),
    "__mod__": remainder, "__rmod__": _reflected(remainder),
    "__neg__": neg, "__abs__": abs,
    "__invert__": bitwise_not,
    "__and__": bitwise_and, "__rand__": _reflected(bitwise_and),
    "__or__": bitwise_or, "__ror__": _reflected(bitwise_or),
    "__xor__": bitwise_xor, "__rxor__": _reflected(bitwise_xor),
    "__eq__": eq, "__ne__": ne, "__lt__": lt, "__le__": le, "__gt__": gt, "__ge__": ge,
    "eq": eq, "ne": ne, "lt": lt, "le": le, "gt": gt, "ge": ge, "where": _tensor_where,
    "add": add, "sub": sub, "mul": mul, "div": div, "neg": neg, "pow": pow,
    "floor_divide": floor_divide, "remainder": remainder,
    "maximum": maximum, "minimum": minimum, "clamp": clamp, "clip": clamp,
    "exp": exp, "expm1": expm1, "log": log, "log1p": log1p, "sqrt": sqrt, "rsqrt": rsqrt,
    "reciprocal": reciprocal, "square": square, "abs": abs, "sin": sin, "cos": cos,
    "tanh": tanh, "erf": erf,
    "sigmoid": sigmoid, "relu": relu, "leaky_relu": leaky_relu, "gelu": gelu, "silu": silu,
    "softplus": softplus,
    "sign": sign, "floor": floor, "ceil": ceil, "round": round, "clone": clone,
    "isnan": isnan, "isinf": isinf, "isfinite": isfinite,
    "logical_and": logical_and, "logical_or": logical_or, "logical_xor": logical_xor,
    "logical_not": logical_not,
    "bitwise_and": bitwise_and, "bitwise_or": bitwise_or, "bitwise_xor": bitwise_xor,
    "bitwise_not": bitwise_not,
}  # fmt: skip

"""Cases of the element-wise ops: unary, binary, comparisons, logic and bits, clamp, where,
casts."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

import buildingai as bai
from buildingai.backend.device import Device

from .base import (
    NOT_DIFFERENTIABLE,
    TF,
    Draw,
    Sample,
    case,
    torch,
    trailing_sizes,
)

# ----- element-wise: unary ------------------------------------------------------------------------


def unary(name: str, function: Callable, low=-2.0, high=2.0, **options) -> None:
    """A one-input element-wise op: x (n, *rest) -> same shape. ``function(x, draw)`` may
    take the draw, to pick its attributes."""
    takes_draw = function.__code__.co_argcount == 2

    def make(d: Draw) -> Sample:
        x = d.floats("n", *trailing_sizes(d), low=low, high=high)
        return d.capture(name, lambda: function(x, d) if takes_draw else function(x))

    case(name, make, **options)


unary("abs", lambda x: x.abs(), torch=torch.abs, gradgrad=True)
unary("cos", lambda x: x.cos(), torch=torch.cos, gradgrad=True)
unary("sin", lambda x: x.sin(), torch=torch.sin)
unary("exp", lambda x: x.exp(), torch=torch.exp, gradgrad=True)
unary("expm1", lambda x: x.expm1(), torch=torch.expm1)
unary("log", lambda x: x.log(), low=0.2, torch=torch.log, gradgrad=True)
unary("log1p", lambda x: x.log1p(), low=-0.5, torch=torch.log1p)
unary("neg", lambda x: -x, torch=torch.neg)
unary("reciprocal", lambda x: x.reciprocal(), low=0.3, torch=torch.reciprocal)
unary("relu", lambda x: x.relu(), torch=torch.relu)
unary("rsqrt", lambda x: x.rsqrt(), low=0.3, torch=torch.rsqrt)
unary("sqrt", lambda x: x.sqrt(), low=0.3, torch=torch.sqrt, gradgrad=True)
unary("square", lambda x: x.square(), torch=torch.square)
unary("tanh", lambda x: x.tanh(), torch=torch.tanh, gradgrad=True)
unary("erf", lambda x: x.erf(), torch=torch.special.erf, gradgrad=True)
unary("sigmoid", lambda x: x.sigmoid(), torch=torch.sigmoid, gradgrad=True)
unary("silu", lambda x: x.silu(), torch=TF.silu, gradgrad=True)
unary(
    "lgamma",
    lambda x: x.lgamma(),
    low=-4.5,
    high=6.0,
    torch=torch.lgamma,
    gradgrad=True,
    onnx="ONNX has no log-gamma operator",
)
unary(
    "polygamma",
    lambda x, d: x.polygamma(d.variant((0, 1, 2))),
    low=0.2,
    high=8.0,
    torch=lambda x, *, n: torch.special.polygamma(n, x),
    gradgrad=True,
    onnx="ONNX has no polygamma operator",
)
unary("clone", lambda x: x.clone(), torch=torch.clone)
unary("sign", lambda x: x.sign(), torch=torch.sign)
unary("floor", lambda x: x.floor(), torch=torch.floor)
unary("ceil", lambda x: x.ceil(), torch=torch.ceil)
unary(
    "round",
    lambda x, d: x.round(decimals=d.variant((0, 1, 2))),
    torch=lambda x, *, decimals: torch.round(x, decimals=decimals),
)
unary(
    "leaky_relu",
    lambda x, d: x.leaky_relu(d.variant((0.2, 0.01, 1.5))),
    torch=lambda x, *, negative_slope: TF.leaky_relu(x, negative_slope),
)
unary(
    "gelu",
    lambda x, d: x.gelu(approximate=d.variant(("none", "tanh"))),
    torch=lambda x, *, approximate: TF.gelu(x, approximate=approximate),
    gradgrad=True,
)
unary(
    "softplus",
    lambda x: x.softplus(beta=2.0, threshold=3.0),
    torch=lambda x, *, beta, threshold: TF.softplus(x, beta=beta, threshold=threshold),
    gradgrad=True,
)


def _contiguous(d: Draw) -> Sample:
    x = d.floats(d.size(2, 3), "n", *trailing_sizes(d, 0, 1))
    view = x.permute(*reversed(range(x.ndim)))  # a strided view: contiguous copies it
    return d.call("contiguous", view, symbols={(0, view.ndim - 2): "n"})


case("contiguous", _contiguous, torch=lambda x: x.contiguous())


def _cast(d: Draw) -> Sample:
    x = d.floats("n", *trailing_sizes(d))
    target = d.variant((np.float32, np.float64, np.int32, np.int64))
    if np.dtype(target) == x.dtype:
        target = np.int64
    return d.capture("cast", lambda: x.astype(target))


case(
    "cast",
    _cast,
    torch=lambda x, *, dtype: x.to(getattr(torch, np.dtype(dtype).name)),
)


def _to_device(d: Draw) -> Sample:
    x = d.floats("n", *trailing_sizes(d))
    return d.call("to_device", x, device=Device("cpu"))


case(
    "to_device",
    _to_device,
    gradcheck=True,
    onnx="an exported graph runs on one device chosen by the runtime: there is no copy to map",
)


# ----- element-wise: binary -----------------------------------------------------------------------


def _operand_pair(d: Draw, low_b=-2.0, high_b=2.0, low_a=-2.0, high_a=2.0):
    """a (n, *rest) and b of a shape that broadcasts against it (same, size-1 axes, or fewer
    axes); the symbolic n is shared where b has it."""
    rest = trailing_sizes(d, 0, 2)
    a = d.floats("n", *rest, low=low_a, high=high_a)
    layout = d.choice(("same", "ones", "shorter"))
    if layout == "same":
        b_dims = ("n",) + rest
    elif layout == "ones":
        b_dims = (1,) + tuple(d.choice((1, s)) for s in rest)  # s may be "m"
    else:
        b_dims = rest
    b = d.floats(*b_dims, low=low_b, high=high_b)
    if d.choice((False, True)):
        a, b = b, a
    return a, b


def _mixed(d: Draw, a: bai.Tensor, b: bai.Tensor) -> tuple:
    """a and b with b of another dtype (on either side), or a Python scalar (weakly typed; on the
    right, where methods and operators both take it)."""
    kind = d.choice(("float64", "float32", "int64", "int32", "python float", "python int"))
    if kind == "python float":
        return a, 1.5
    if kind == "python int":
        return a, 2
    values = b.array.astype(kind)
    if values.dtype.kind == "i":
        values[values == 0] = 1  # integer division by zero is an error, not a sample
    other = d.tensor(values, d.names_of(b))
    return (a, other) if d.choice((False, True)) else (other, a)


def binary(name: str, function: Callable, low_b=-2.0, low_a=-2.0, rounded=False, **options) -> None:
    def make(d: Draw) -> Sample:
        a, b = _operand_pair(d, low_b=low_b, low_a=low_a)
        if rounded:  # whole numbers, so that equal elements occur
            np.round(a.array, out=a.array)
            np.round(b.array, out=b.array)
        if d.mixed:
            a, b = _mixed(d, a, b)
        return d.capture(name, lambda: function(a, b))

    case(name, make, **options)


binary("add", lambda a, b: a + b, torch=torch.add, gradgrad=True)
binary("sub", lambda a, b: a - b, torch=torch.sub)
binary("mul", lambda a, b: a * b, torch=torch.mul, gradgrad=True)
binary("div", lambda a, b: a / b, low_a=0.3, low_b=0.3, torch=torch.div, gradgrad=True)
binary("pow", lambda a, b: a**b, low_a=0.3, low_b=0.3, torch=torch.pow, gradgrad=True)
binary("maximum", lambda a, b: bai.maximum(a, b), torch=torch.maximum)
binary("minimum", lambda a, b: bai.minimum(a, b), torch=torch.minimum)
binary(
    "remainder",
    lambda a, b: a.remainder(b),
    low_a=0.3,
    low_b=0.3,
    torch=torch.remainder,
    grad_inputs=(0,),  # the derivative in b, -floor(a / b), jumps where a / b is an integer
)
binary(
    "floor_divide",
    lambda a, b: a.floor_divide(b),
    low_a=0.3,
    low_b=0.3,
    # PyTorch's floor_divide raises on backward; its div(rounding_mode="floor") is the same
    # quotient and gives the zero gradient this record gives
    torch=lambda a, b: torch.div(a, b, rounding_mode="floor"),
)
for _name, _function, _reference in (
    ("eq", lambda a, b: a == b, torch.eq),
    ("ne", lambda a, b: a != b, torch.ne),
    ("lt", lambda a, b: a < b, torch.lt),
    ("le", lambda a, b: a <= b, torch.le),
    ("gt", lambda a, b: a > b, torch.gt),
    ("ge", lambda a, b: a >= b, torch.ge),
):
    binary(_name, _function, rounded=True, torch=_reference, no_grad=NOT_DIFFERENTIABLE)


def logical(name: str, reference: Callable, arity: int = 2) -> None:
    def make(d: Draw) -> Sample:
        if arity == 1:
            return d.call(name, d.bools("n", *trailing_sizes(d)))
        a, b = _operand_pair(d)
        kinds = d.choice(("bool", "float"))  # logical ops read any dtype as truth values
        if kinds == "bool":
            a, b = d.bools(*d.dims_of(a)), d.bools(*d.dims_of(b))
        return d.call(name, a, b)

    case(name, make, torch=reference, no_grad=NOT_DIFFERENTIABLE)


logical("logical_and", torch.logical_and)
logical("logical_or", torch.logical_or)
logical("logical_xor", torch.logical_xor)
logical("logical_not", torch.logical_not, arity=1)


def bitwise(name: str, reference: Callable, arity: int = 2) -> None:
    def make(d: Draw) -> Sample:
        kind = d.choice(("int", "bool"))
        rest = trailing_sizes(d)
        if kind == "int":
            a = d.ints("n", *rest, low=-8, high=8, dtype=d.dtype)
            b = d.ints(*rest, low=-8, high=8, dtype=d.dtype)
        else:
            a, b = d.bools("n", *rest), d.bools(*rest)
        return d.call(name, *((a,) if arity == 1 else (a, b)))

    case(
        name,
        make,
        dtypes=(np.int32, np.int64, np.uint8),
        torch=reference,
        no_grad=NOT_DIFFERENTIABLE,
        onnx_opset=18,  # ONNX's Bitwise* operators
    )


bitwise("bitwise_and", torch.bitwise_and)
bitwise("bitwise_or", torch.bitwise_or)
bitwise("bitwise_xor", torch.bitwise_xor)
bitwise("bitwise_not", torch.bitwise_not, arity=1)


def _special_values(name: str) -> Callable:
    def make(d: Draw) -> Sample:
        x = d.floats("n", *trailing_sizes(d, 1, 2))
        data = x.array.reshape(-1)
        data[:: max(1, data.size // 3)] = d.choice((np.inf, -np.inf, np.nan))
        return d.call(name, x)

    return make


for _name, _reference in (
    ("isnan", torch.isnan),
    ("isinf", torch.isinf),
    ("isfinite", torch.isfinite),
):
    case(_name, _special_values(_name), torch=_reference, no_grad=NOT_DIFFERENTIABLE)


def _clamp(d: Draw) -> Sample:
    x = d.floats("n", *trailing_sizes(d))
    low = d.choice((-0.5, None, "tensor"))
    high = d.choice((1.0, None)) if low is not None else 1.0
    if low == "tensor":
        low = d.floats(*d.dims_of(x)[1:], low=-1.0, high=0.0)
    return d.capture("clamp", lambda: x.clamp(low, high))


def _torch_clamp(x, low, high):
    if low is not None:
        x = torch.clamp(x, min=low)
    return x if high is None else torch.clamp(x, max=high)


case("clamp", _clamp, torch=_torch_clamp)


def _where(d: Draw) -> Sample:
    a, b = _operand_pair(d)
    if "n" not in d.dims_of(a):
        a, b = b, a  # a has the full rank, so that some input is symbolic
    condition = d.bools(*d.dims_of(d.choice((a, b))))
    b_value = d.choice((b, 0.5))
    return d.capture("where", lambda: bai.where(condition, a, b_value))


case("where", _where, torch=lambda c, a, b: torch.where(c, a, b), gradgrad=True)

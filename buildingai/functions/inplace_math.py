"""The in-place forms of the point-wise functions (``sqrt_``, ``exp_``, ``sigmoid_``,
``pow_``, ``addcmul_``, ``lerp_``, ``lt_``, ``cumsum_``, ...), as PyTorch code writes them.

Each computes its out-of-place function and writes the result into the tensor through the
in-place path of ``inplace.py``: the version counter moves, a leaf that requires grad is
refused while gradients are recorded, a result that needs a wider dtype than the tensor's
(``sqrt_`` of an int64 tensor) is refused, and inside a recorded graph the tensor takes the
function's node, so gradients flow as through the out-of-place form.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np

from ..accel.updates import fused_update
from ..autograd.tensor import Tensor
from ..backend.device import array_namespace
from ..errors import DTypeError, ShapeError
from . import (
    arrangement,
    elementwise,
    gamma,
    linear_algebra,
    pointwise_compositions,
    reduce,
    searching,
)
from .inplace import (
    _check_keeps_shape,
    _in_place,
    _keep_none_of,
    div_,
    mul_,
    sub_,
    updated_by_accel,
)


def _write(x: Tensor, name: str, others: tuple, compute: Callable[[Tensor], Tensor]) -> Tensor:
    """``x = compute(x)`` in place; ``others`` are the tensors the result also depends on."""

    def write(array) -> None:  # nothing records or observes: compute and copy the values in
        array_namespace(array).copyto(array, compute(Tensor(array)).array, casting="same_kind")

    return _in_place(x, name, others, compute, write, reads_previous=True)


def _fused(x: Tensor, name: str, others: tuple, scalar) -> bool:
    """The update as one kernel of acceleration's (``accel/updates.py``), and True, where it
    takes the call (``updated_by_accel``); False, having done nothing, elsewhere (the formula
    then runs)."""
    return updated_by_accel(x, name, others, scalar, functools.partial(fused_update, name))


def _unary(name: str, function: Callable[[Tensor], Tensor]):
    def method(x: Tensor) -> Tensor:
        return _write(x, f"{name}_", (), function)

    method.__name__ = f"{name}_"
    method.__doc__ = f"``x = {name}(x)`` in place; returns ``x``."
    return method


def _binary(name: str, function: Callable[[Tensor, object], Tensor]):
    """The in-place form ``x.name_(other)`` of a two-input function: ``other`` broadcasts to
    ``x``'s shape, never ``x`` to a larger one."""

    def method(x: Tensor, other) -> Tensor:
        forms = (f"x.{name}_(other)", f"x = x.{name}(other)")
        _check_keeps_shape(x, f"{name}_", forms, other)
        return _write(x, f"{name}_", (other,), lambda previous: function(previous, other))

    method.__name__ = f"{name}_"
    method.__doc__ = f"``x = {name}(x, other)`` in place; returns ``x``."
    return method


def _truth(name: str, function: Callable[..., Tensor]):
    """The in-place form of a comparison or logical function: ``x`` keeps its dtype and holds
    0/1 (``False``/``True`` for a boolean ``x``). Its gradient is zero, and a tensor in a graph
    keeps requiring grad, as in PyTorch."""

    def method(x: Tensor, *other) -> Tensor:
        forms = (f"x.{name}_(...)", f"x = x.{name}(...)")
        _check_keeps_shape(x, f"{name}_", forms, *other)

        def compute(previous: Tensor) -> Tensor:
            return _keep_none_of(previous, function(previous, *other), previous.shape)

        return _write(x, f"{name}_", other, compute)

    method.__name__ = f"{name}_"
    method.__doc__ = f"``x = {name}(x, ...)`` in place, in ``x``'s dtype; returns ``x``."
    return method


_UNARY = {
    "abs": elementwise.abs, "neg": elementwise.neg, "exp": elementwise.exp,
    "log": elementwise.log, "sqrt": elementwise.sqrt, "rsqrt": elementwise.rsqrt,
    "square": elementwise.square, "reciprocal": elementwise.reciprocal,
    "sign": elementwise.sign, "floor": elementwise.floor, "ceil": elementwise.ceil,
    "sin": elementwise.sin, "cos": elementwise.cos, "log1p": elementwise.log1p,
    "expm1": elementwise.expm1, "sigmoid": elementwise.sigmoid, "tanh": elementwise.tanh,
    "relu": elementwise.relu, "erf": elementwise.erf,
    "absolute": elementwise.abs, "negative": elementwise.neg,
    "bitwise_not": elementwise.bitwise_not, "lgamma": gamma.lgamma, "digamma": gamma.digamma,
}  # fmt: skip

_BINARY = {
    "remainder": elementwise.remainder, "floor_divide": elementwise.floor_divide,
    "bitwise_and": elementwise.bitwise_and, "bitwise_or": elementwise.bitwise_or,
    "bitwise_xor": elementwise.bitwise_xor,
}  # fmt: skip

_TRUTH = {
    "eq": elementwise.eq, "ne": elementwise.ne, "lt": elementwise.lt, "le": elementwise.le,
    "gt": elementwise.gt, "ge": elementwise.ge,
    "greater": elementwise.gt, "greater_equal": elementwise.ge, "less": elementwise.lt,
    "less_equal": elementwise.le, "not_equal": elementwise.ne,
    "logical_and": elementwise.logical_and, "logical_or": elementwise.logical_or,
    "logical_xor": elementwise.logical_xor, "logical_not": elementwise.logical_not,
}  # fmt: skip


def subtract_(x: Tensor, other, *, alpha=1) -> Tensor:
    """``x -= alpha * other`` in place (``sub_``)."""
    return sub_(x, other, alpha=alpha)


def divide_(x: Tensor, other, *, rounding_mode: str | None = None) -> Tensor:
    """``x = divide(x, other, rounding_mode=...)`` in place; true division (``div_``) when
    ``rounding_mode`` is None, ``"floor"`` or ``"trunc"`` otherwise."""
    if rounding_mode is None:
        return div_(x, other)
    _check_keeps_shape(x, "divide_", ("x.divide_(other)", "x = x.divide(other)"), other)
    return _write(x, "divide_", (other,),
                  lambda p: elementwise.div(p, other, rounding_mode=rounding_mode))  # fmt: skip


def _keeps_dtype(x: Tensor, name: str, dtype) -> None:
    """PyTorch's in-place scans refuse a ``dtype`` other than the tensor's own."""
    if dtype is not None and np.dtype(dtype) != x.dtype:
        raise DTypeError(
            f"[{name}] the tensor has dtype {x.dtype} but dtype={np.dtype(dtype)} was asked: an "
            "in-place op writes in the tensor's own dtype",
            help=f"use the out-of-place form, x = x.{name[:-1]}(dim, dtype=...)",
        )


def cumsum_(x: Tensor, dim: int, dtype=None) -> Tensor:
    """Running sums along ``dim`` in place. x: (*) -> the same shape."""
    _keeps_dtype(x, "cumsum_", dtype)
    return _write(x, "cumsum_", (), lambda previous: reduce.cumsum(previous, dim=dim))


def cumprod_(x: Tensor, dim: int, dtype=None) -> Tensor:
    """Running products along ``dim`` in place. x: (*) -> the same shape."""
    _keeps_dtype(x, "cumprod_", dtype)
    return _write(x, "cumprod_", (), lambda previous: reduce.cumprod(previous, dim=dim))


def polygamma_(x: Tensor, n: int) -> Tensor:
    """``x = polygamma(n, x)`` in place."""
    return _write(x, "polygamma_", (), lambda previous: gamma.polygamma(n, previous))


def nan_to_num_(x: Tensor, nan: float = 0.0, posinf=None, neginf=None) -> Tensor:
    """Replace NaN, +inf and -inf in place (``nan_to_num``); returns ``x``."""
    return _write(x, "nan_to_num_", (),
                  lambda p: searching.nan_to_num(p, nan=nan, posinf=posinf, neginf=neginf))  # fmt: skip


def pow_(x: Tensor, exponent) -> Tensor:
    """``x = x ** exponent`` in place."""
    _check_keeps_shape(x, "pow_", ("x.pow_(e)", "x = x.pow(e)"), exponent)
    return _write(x, "pow_", (exponent,), lambda previous: elementwise.pow(previous, exponent))


def round_(x: Tensor, decimals: int = 0) -> Tensor:
    """``x = round(x, decimals)`` in place (halves to even, as PyTorch)."""
    return _write(x, "round_", (), lambda previous: elementwise.round(previous, decimals))


def clamp_min_(x: Tensor, min) -> Tensor:  # noqa: A002 - PyTorch's name
    """``x = max(x, min)`` in place."""
    _check_keeps_shape(x, "clamp_min_", ("x.clamp_min_(m)", "x = x.clamp_min(m)"), min)
    return _write(x, "clamp_min_", (min,), lambda p: pointwise_compositions.clamp_min(p, min))


def clamp_max_(x: Tensor, max) -> Tensor:  # noqa: A002 - PyTorch's name
    """``x = min(x, max)`` in place."""
    _check_keeps_shape(x, "clamp_max_", ("x.clamp_max_(m)", "x = x.clamp_max(m)"), max)
    return _write(x, "clamp_max_", (max,), lambda p: pointwise_compositions.clamp_max(p, max))


def addcmul_(x: Tensor, tensor1, tensor2, *, value=1) -> Tensor:
    """``x += value * tensor1 * tensor2`` in place."""
    forms = ("x.addcmul_(a, b)", "x = x.addcmul(a, b)")
    _check_keeps_shape(x, "addcmul_", forms, tensor1, tensor2)
    if _fused(x, "addcmul_", (tensor1, tensor2), value):
        return x
    return _write(x, "addcmul_", (tensor1, tensor2),
                  lambda p: pointwise_compositions.addcmul(p, tensor1, tensor2, value=value))  # fmt: skip


def addcdiv_(x: Tensor, tensor1, tensor2, *, value=1) -> Tensor:
    """``x += value * tensor1 / tensor2`` in place."""
    forms = ("x.addcdiv_(a, b)", "x = x.addcdiv(a, b)")
    _check_keeps_shape(x, "addcdiv_", forms, tensor1, tensor2)
    if _fused(x, "addcdiv_", (tensor1, tensor2), value):
        return x
    return _write(x, "addcdiv_", (tensor1, tensor2),
                  lambda p: pointwise_compositions.addcdiv(p, tensor1, tensor2, value=value))  # fmt: skip


def _scaled_product(name: str, function: Callable):
    """The in-place form ``x.name_(a, b, *, beta=1, alpha=1)`` of a scaled product,
    ``x = beta x + alpha (a times b)`` (addmm, addmv, baddbmm, addr, addbmm): the product must
    have x's shape, as in PyTorch, where x cannot grow."""

    def method(x: Tensor, first, second, *, beta=1, alpha=1) -> Tensor:
        def compute(previous: Tensor) -> Tensor:
            result = function(previous, first, second, beta=beta, alpha=alpha)
            if tuple(result.shape) != tuple(x.shape):
                raise ShapeError(
                    f"[{name}_] the result has shape {tuple(result.shape)}, but the tensor "
                    f"written in place has shape {tuple(x.shape)}",
                    help=f"use the out-of-place form, x = x.{name}(a, b)",
                )
            return result

        return _write(x, f"{name}_", (first, second), compute)

    method.__name__ = f"{name}_"
    method.__doc__ = f"``x = {name}(x, a, b, beta=beta, alpha=alpha)`` in place; returns ``x``."
    return method


_SCALED_PRODUCTS = {
    "addmm": arrangement.addmm, "addmv": arrangement.addmv, "baddbmm": arrangement.baddbmm,
    "addr": linear_algebra.addr, "addbmm": linear_algebra.addbmm,
}  # fmt: skip


def lerp_(x: Tensor, end, weight) -> Tensor:
    """``x += weight * (end - x)`` in place."""
    _check_keeps_shape(x, "lerp_", ("x.lerp_(end, w)", "x = x.lerp(end, w)"), end, weight)
    if _fused(x, "lerp_", (end,), weight):
        return x
    return _write(x, "lerp_", (end, weight),
                  lambda p: pointwise_compositions.lerp(p, end, weight))  # fmt: skip


__all__: list[str] = []  # in-place forms are Tensor methods only, as in PyTorch

TENSOR_METHODS = {f"{name}_": _unary(name, function) for name, function in _UNARY.items()}
TENSOR_METHODS.update({f"{name}_": _binary(name, function) for name, function in _BINARY.items()})
TENSOR_METHODS.update({f"{name}_": _truth(name, function) for name, function in _TRUTH.items()})
TENSOR_METHODS.update(
    {f"{name}_": _scaled_product(name, function) for name, function in _SCALED_PRODUCTS.items()}
)
TENSOR_METHODS.update(
    multiply_=mul_,
    true_divide_=div_,
    subtract_=subtract_,
    divide_=divide_,
    cumsum_=cumsum_,
    cumprod_=cumprod_,
    polygamma_=polygamma_,
    nan_to_num_=nan_to_num_,
    pow_=pow_,
    round_=round_,
    clamp_min_=clamp_min_,
    clamp_max_=clamp_max_,
    addcmul_=addcmul_,
    addcdiv_=addcdiv_,
    lerp_=lerp_,
)

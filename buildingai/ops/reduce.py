"""Reductions over axes, and the scans (cumulative sum and product) their gradients rest on.

Attributes are already normalised by the public functions: ``axes`` is None (all axes) or a tuple
of distinct non-negative ints; ``axis`` (argmax, scans) is a non-negative int or None.

Backward rules spread the output gradient back over the reduced axes with ``reshape`` +
``expand`` (views, no copies) and combine it with as little full-size arithmetic as they can.

Dtypes follow PyTorch: sums, products and scans of integers and bools are int64; means,
variances, norms and logsumexp of integers give the default float dtype.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from ..errors import ShapeError
from .abstract import ValueSpec
from .base import Op
from .families import CopyOp, ReductionOp, accumulator_dtype
from .nn import SOFTMAX
from .promotion import INTEGRAL, as_float, float_dtype


def kept_shape(shape: tuple, axes) -> tuple:
    """The shape a reduction over ``axes`` has with keepdims=True."""
    if axes is None:
        return (1,) * len(shape)
    return tuple(1 if axis in axes else extent for axis, extent in enumerate(shape))


def reduced_count(shape: tuple, axes) -> int:
    """How many elements each output element of a reduction over ``axes`` combines."""
    return math.prod(shape if axes is None else (shape[axis] for axis in axes))


def _spread(ctx, grad):
    """The output gradient (or any output-shaped tensor) broadcast back to the input shape."""
    axes = ctx.attrs["axes"]
    if not ctx.attrs["keepdims"] and axes is not None:  # (a sum of all is 0-d: it expands as is)
        grad = grad.reshape(kept_shape(ctx.input_shape, axes))
    return grad.expand(ctx.input_shape)


def _kept(ctx, value):
    """An output-shaped tensor reshaped to the keepdims=True shape (broadcasts against x)."""
    return value.reshape(kept_shape(ctx.input_shape, ctx.attrs["axes"]))


def _quietly(function, *args, **kwargs):
    """Run a backend reduction whose degenerate cases (empty slices, zero degrees of freedom)
    are meant to give nan or inf, as in NumPy and PyTorch, without printing warnings."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return function(*args, **kwargs)


def _require_nonempty(op: str, x, axes, what: str) -> None:
    """A reduction without an identity element (max, argmax...) needs something to reduce."""
    if reduced_count(x.shape, axes) == 0:
        over = "all axes" if axes is None else f"axis {axes[0] if len(axes) == 1 else axes}"
        raise ShapeError(
            f"[{op}] cannot take the {what} over {over} of an empty tensor shaped "
            f"{tuple(x.shape)}: the reduced dimension has size 0",
            help=f"{op} has no identity value; check the size first, or reduce over a non-empty "
            "axis",
        )


class Sum(ReductionOp):
    name = "sum"
    save_inputs = False

    def output_dtype(self, x, **attrs):
        return accumulator_dtype(x.dtype)

    def forward(self, ctx, xp, x, *, axes, keepdims):
        ctx.input_shape = x.shape
        if x.dtype.kind in INTEGRAL:  # int64 for every integer, as PyTorch (NumPy: uint64 too)
            return x.sum(axis=axes, keepdims=keepdims, dtype=xp.int64)
        return x.sum(axis=axes, keepdims=keepdims)  # (the method skips xp.sum's wrapper)

    def backward(self, ctx, grad):
        return (_spread(ctx, grad),)

    def to_onnx(self, emit, inputs, output, attrs):
        x = _in_output_dtype(emit, inputs, output)  # booleans and small ints sum in int64
        emit.reduce("ReduceSum", x, attrs["axes"], attrs["keepdims"], output)


def sum_to_axes(have: tuple, shape: tuple) -> tuple:
    """The axes of an array shaped ``have`` that ``sum_to(shape)`` sums over."""
    lead = len(have) - len(shape)
    return tuple(range(lead)) + tuple(
        lead + axis for axis, want in enumerate(shape) if want == 1 and have[lead + axis] != 1
    )


class SumTo(CopyOp):
    """Sum a broadcast array back to ``shape``: the adjoint of ``expand``."""

    name = "sum_to"
    save_inputs = False

    def infer(self, x, *, shape) -> ValueSpec:
        summed = sum_to_axes(x.shape, shape)
        dtype = accumulator_dtype(x.dtype) if summed else x.dtype
        return ValueSpec(tuple(shape), dtype, x.device)

    def cost(self, x, *, shape) -> tuple:
        out = self.infer(x, shape=shape)
        return (x.numel, x.nbytes, out.nbytes)

    def check(self, x, *, shape):
        if len(shape) > x.ndim or any(
            want != 1 and want != have for have, want in zip(x.shape[::-1], shape[::-1])
        ):
            raise ShapeError(f"[sum_to] cannot sum {tuple(x.shape)} down to {tuple(shape)}")

    def forward(self, ctx, xp, x, *, shape):
        ctx.input_shape = x.shape
        axes = sum_to_axes(x.shape, shape)
        if not axes:
            return x.reshape(shape)
        if x.dtype.kind in INTEGRAL:
            return xp.sum(x, axis=axes, dtype=xp.int64).reshape(shape)
        return xp.sum(x, axis=axes).reshape(shape)

    def backward(self, ctx, grad):
        return (grad.expand(ctx.input_shape),)

    def to_onnx(self, emit, inputs, output, attrs):
        have = emit.shapes[inputs[0]]
        shape = attrs["shape"]
        lead = len(have) - len(shape)
        axes = list(range(lead)) + [
            lead + axis for axis, want in enumerate(shape) if want == 1 and have[lead + axis] != 1
        ]
        summed = emit.reduce("ReduceSum", _in_output_dtype(emit, inputs, output), axes, True)
        emit.node("Reshape", [summed, emit.ints(shape)], output)


class Mean(ReductionOp):
    """The mean; an empty reduction gives nan (NumPy and PyTorch agree)."""

    name = "mean"
    save_inputs = False

    def output_dtype(self, x, **attrs):
        return float_dtype(x.dtype)

    def forward(self, ctx, xp, x, *, axes, keepdims):
        ctx.input_shape = x.shape
        x = as_float(x)
        if reduced_count(x.shape, axes) == 0:
            return _quietly(xp.mean, x, axis=axes, keepdims=keepdims)
        return xp.mean(x, axis=axes, keepdims=keepdims)

    def backward(self, ctx, grad):
        count = reduced_count(ctx.input_shape, ctx.attrs["axes"])
        # divide the small output gradient, then broadcast it as a view
        return (_spread(ctx, grad / max(count, 1)),)

    def to_onnx(self, emit, inputs, output, attrs):
        x = _in_output_dtype(emit, inputs, output)  # integers average in the default float
        emit.reduce("ReduceMean", x, attrs["axes"], attrs["keepdims"], output)


class Var(ReductionOp):
    """Variance with ``correction`` (PyTorch) = ``ddof`` (NumPy): divide by N - correction.

    A divisor N - correction <= 0 gives inf or nan, as in both libraries.
    """

    name = "var"
    flops_per_input = 4  # the mean, a subtraction, a square, a sum

    def output_dtype(self, x, **attrs):
        return float_dtype(x.dtype)

    def forward(self, ctx, xp, x, *, axes, keepdims, correction):
        ctx.input_shape = x.shape
        x = as_float(x)
        if reduced_count(x.shape, axes) - correction <= 0:
            return _quietly(xp.var, x, axis=axes, ddof=correction, keepdims=keepdims)
        return xp.var(x, axis=axes, ddof=correction, keepdims=keepdims)

    def backward(self, ctx, grad):
        (x,) = ctx.inputs
        axes = ctx.attrs["axes"]
        scale = _inverse_dof(ctx)
        centered = x - x.mean(axis=axes, keepdims=True)
        return (_spread(ctx, grad * (2 * scale)) * centered,)

    def to_onnx(self, emit, inputs, output, attrs):
        x = _in_output_dtype(emit, inputs, output)
        _variance_onnx(emit, x, emit.shapes[inputs[0]], attrs, output)


class Std(ReductionOp):
    """Standard deviation: the square root of ``var`` with the same ``correction``.

    Its gradient (x - mean) / ((N - correction) * std) is taken as 0 where std is 0 (a constant
    slice), as in PyTorch, rather than 0/0.
    """

    name = "std"
    save_output = True
    flops_per_input = 4

    def output_dtype(self, x, **attrs):
        return float_dtype(x.dtype)

    def forward(self, ctx, xp, x, *, axes, keepdims, correction):
        ctx.input_shape = x.shape
        x = as_float(x)
        if reduced_count(x.shape, axes) - correction <= 0:
            return _quietly(xp.std, x, axis=axes, ddof=correction, keepdims=keepdims)
        return xp.std(x, axis=axes, ddof=correction, keepdims=keepdims)

    def backward(self, ctx, grad):
        (x,) = ctx.inputs
        axes = ctx.attrs["axes"]
        scale = _inverse_dof(ctx)
        centered = x - x.mean(axis=axes, keepdims=True)
        out = ctx.output
        nonzero = out != 0
        per_output = (grad * scale / out.where(nonzero, 1.0)).where(nonzero, 0.0)
        return (_spread(ctx, per_output) * centered,)

    def to_onnx(self, emit, inputs, output, attrs):
        x = _in_output_dtype(emit, inputs, output)
        emit.node("Sqrt", [_variance_onnx(emit, x, emit.shapes[inputs[0]], attrs)], output)


def _in_output_dtype(emit, inputs, output) -> str:
    """The input's ONNX value cast to the output's dtype (int64 sums, float means...)."""
    return emit.operands(inputs[:1], emit.dtype(output))[0]


def _inverse_dof(ctx) -> float:
    """1 / max(N - correction, 0), inf for no degrees of freedom (the value is nan or inf)."""
    dof = reduced_count(ctx.input_shape, ctx.attrs["axes"]) - ctx.attrs["correction"]
    return 1.0 / dof if dof > 0 else math.inf


def _variance_onnx(emit, x, shape, attrs, output=None):
    """ONNX nodes for ``var`` of ``x`` (of ``shape``): the mean squared deviation times
    N / (N - correction)."""
    axes, keepdims = attrs["axes"], attrs["keepdims"]
    reduced = [shape[a] for a in (range(len(shape)) if axes is None else axes)]
    if not all(isinstance(extent, int) for extent in reduced):
        raise ShapeError(
            "[var] ONNX export needs the reduced dimensions to be fixed sizes",
            help="make those dimensions fixed in the input signature",
        )
    count = math.prod(reduced)
    centered = emit.node("Sub", [x, emit.reduce("ReduceMean", x, axes, True)])
    mean_square = emit.reduce("ReduceMean", emit.node("Mul", [centered, centered]), axes, keepdims)
    dof = count - attrs["correction"]
    scale = count / dof if dof > 0 else math.inf
    return emit.node("Mul", [mean_square, emit.scalar(scale, x)], output)


class Extremum(ReductionOp):
    """max or min over axes (values only). The gradient is split evenly among tied extrema,
    like PyTorch's ``amax``/``amin``: each of k tied elements receives 1/k of the gradient."""

    autocast = "promote"

    save_output = True

    def __init__(self, name: str, function: str, onnx_type: str, what: str) -> None:
        self.name, self.function, self.onnx_type, self.what = name, function, onnx_type, what

    def check(self, x, *, axes, keepdims):
        _require_nonempty(self.name, x, axes, self.what)

    def forward(self, ctx, xp, x, *, axes, keepdims):
        ctx.input_shape = x.shape
        return getattr(xp, self.function)(x, axis=axes, keepdims=keepdims)

    def backward(self, ctx, grad):
        (x,) = ctx.inputs
        winners = x == _kept(ctx, ctx.output)
        ties = winners.sum(axis=ctx.attrs["axes"], keepdims=True).astype(grad.dtype)
        share = grad if ctx.attrs["keepdims"] else _kept(ctx, grad)
        return ((share / ties).expand(ctx.input_shape).where(winners, 0.0),)

    def to_onnx(self, emit, inputs, output, attrs):
        x, axes, keepdims = inputs[0], attrs["axes"], attrs["keepdims"]
        if emit.dtype(x).kind == "b":  # ONNX reductions take no booleans: reduce 0/1 integers
            reduced = emit.reduce(self.onnx_type, emit.cast(x, "int32"), axes, keepdims)
            emit.cast(reduced, "bool", output)
            return
        emit.reduce(self.onnx_type, x, axes, keepdims, output)


class ArgExtremum(ReductionOp):
    """The int64 index of the max (min) along one axis, or into the flattened tensor for
    ``axis=None``; the first one wins ties."""

    autocast = "promote"

    save_inputs, differentiable = False, False

    def __init__(self, name: str, function: str, onnx_type: str, what: str) -> None:
        self.name, self.function, self.onnx_type, self.what = name, function, onnx_type, what

    def infer(self, x, *, axis, keepdims) -> ValueSpec:
        axes = None if axis is None else (axis,)
        return super().infer(x, axes=axes, keepdims=keepdims).with_dtype(np.int64)

    def cost(self, x, *, axis, keepdims) -> tuple:
        out = self.infer(x, axis=axis, keepdims=keepdims)
        return (x.numel, x.nbytes, out.nbytes)

    def check(self, x, *, axis, keepdims):
        _require_nonempty(self.name, x, None if axis is None else (axis,), self.what)

    def forward(self, ctx, xp, x, *, axis, keepdims):
        index = getattr(xp, self.function)(x, axis=axis, keepdims=keepdims)
        return xp.asarray(index, dtype=xp.int64)

    def to_onnx(self, emit, inputs, output, attrs):
        x, axis, keepdims = inputs[0], attrs["axis"], attrs["keepdims"]
        rank = len(emit.shapes[x])
        if emit.dtype(x).kind == "b":  # ONNX's ArgMax takes no booleans
            x = emit.cast(x, "int32")
        if axis is not None:
            emit.node(self.onnx_type, [x], output, axis=int(axis), keepdims=int(keepdims))
            return
        flat = emit.node("Reshape", [x, emit.ints([-1])])  # an index into the flattened tensor
        index = emit.node(self.onnx_type, [flat], axis=0, keepdims=0, dtype="int64")
        shape = [1] * rank if keepdims else []
        emit.node("Reshape", [index, emit.ints(shape)], output)


class Prod(ReductionOp):
    """The product over axes (1 for an empty reduction).

    The gradient of each element is the product of all the *other* elements: ``prod / x`` when
    no element is zero, and otherwise exclusive cumulative products from both ends, which never
    divide: exact when the input holds one or several zeros, and (as the cumulative products
    are differentiable) so is the second derivative.
    """

    name = "prod"
    save_output = True

    def output_dtype(self, x, **attrs):
        return accumulator_dtype(x.dtype)

    def forward(self, ctx, xp, x, *, axes, keepdims):
        ctx.input_shape = x.shape
        if x.dtype.kind in INTEGRAL:
            return xp.prod(x, axis=axes, keepdims=keepdims, dtype=xp.int64)
        return xp.prod(x, axis=axes, keepdims=keepdims)

    def backward(self, ctx, grad):
        (x,) = ctx.inputs
        if x.ndim == 0:
            return (grad,)
        if not bool((x.array == 0).any()):
            # the common case: prod / x is exact, one division, and differentiable again
            return (_spread(ctx, grad * ctx.output) / x,)
        axes = tuple(range(x.ndim)) if ctx.attrs["axes"] is None else ctx.attrs["axes"]
        if len(axes) == 1:
            others = _product_of_others(x, axes[0])
        else:
            # move the reduced axes to the end and flatten them into one axis of the products
            kept = tuple(axis for axis in range(x.ndim) if axis not in axes)
            order = kept + axes
            moved = x.permute(order)
            count = reduced_count(x.shape, axes)
            flat = moved.reshape(tuple(x.shape[a] for a in kept) + (count,))
            others = _product_of_others(flat, len(kept)).reshape(moved.shape)
            inverse = [0] * x.ndim
            for position, axis in enumerate(order):
                inverse[axis] = position
            others = others.permute(tuple(inverse))
        return (_spread(ctx, grad) * others,)

    def to_onnx(self, emit, inputs, output, attrs):
        x = _in_output_dtype(emit, inputs, output)
        emit.reduce("ReduceProd", x, attrs["axes"], attrs["keepdims"], output)


def _product_of_others(x, axis: int):
    """``out[i] = prod(x[j] for j != i)`` along ``axis``, without dividing."""
    before = x.cumprod(axis=axis, exclusive=True)
    after = x.cumprod(axis=axis, exclusive=True, reverse=True)
    return before * after


class LogSumExp(ReductionOp):
    """``log(sum(exp(x)))``, shifted by the maximum so that large inputs neither overflow nor
    underflow; an empty reduction gives -inf. The gradient is ``softmax(x)`` over the axes."""

    name = "logsumexp"
    save_output = True
    flops_per_input = 4  # the maximum, a subtraction, an exp, a sum

    def output_dtype(self, x, **attrs):
        return float_dtype(x.dtype)

    def forward(self, ctx, xp, x, *, axes, keepdims):
        ctx.input_shape = x.shape
        x = as_float(x)
        if reduced_count(x.shape, axes) == 0:
            shape = kept_shape(x.shape, axes) if keepdims else _dropped_shape(x.shape, axes)
            return xp.full(shape, -xp.inf, dtype=x.dtype)
        shift = xp.amax(x, axis=axes, keepdims=True)
        # an infinite maximum would turn x - shift into nan (inf - inf)
        shift = xp.where(xp.isfinite(shift), shift, 0).astype(x.dtype, copy=False)
        # an array of our own (not a 0-d scalar), so exp can work in place
        shifted = xp.asarray(x - shift)
        total = xp.sum(xp.exp(shifted, out=shifted), axis=axes, keepdims=True)
        out = _quietly(xp.log, total) + shift  # all -inf inputs give log(0) = -inf
        return out if keepdims else out.reshape(_dropped_shape(x.shape, axes))

    def backward(self, ctx, grad):
        (x,) = ctx.inputs
        axes = ctx.attrs["axes"]
        reduced = tuple(range(x.ndim)) if axes is None else axes
        if len(reduced) == 1:  # the softmax record along that axis (and its row kernels)
            return (_spread(ctx, grad) * SOFTMAX(x, axis=reduced[0]),)
        # exp(x - out) is the softmax, but out is rounded to the input's precision (at 1e4 in
        # float32, by ~1e-3); renormalising removes that error, which is common to each slice.
        # The quotient does not depend on out at all, so its derivative stays the softmax's.
        unnormalised = (x - _kept(ctx, ctx.output)).exp()
        softmax = unnormalised / unnormalised.sum(axis=axes, keepdims=True)
        return (_spread(ctx, grad) * softmax,)

    def to_onnx(self, emit, inputs, output, attrs):
        # written out with the maximum subtracted, as forward does (no overflow for large inputs)
        x, axes, keepdims = _in_output_dtype(emit, inputs, output), attrs["axes"], attrs["keepdims"]
        shift = emit.reduce("ReduceMax", x, axes, True)
        total = emit.reduce(
            "ReduceSum", emit.node("Exp", [emit.node("Sub", [x, shift])]), axes, True
        )
        out = emit.node("Add", [emit.node("Log", [total]), shift])
        if keepdims:
            emit.node("Identity", [out], output)
        else:
            rank = len(emit.shapes[inputs[0]])
            emit.squeeze(out, list(range(rank)) if axes is None else axes, output)


def _dropped_shape(shape: tuple, axes) -> tuple:
    """The shape a reduction over ``axes`` has with keepdims=False."""
    if axes is None:
        return ()
    return tuple(extent for axis, extent in enumerate(shape) if axis not in axes)


class TruthReduction(ReductionOp):
    """``all`` / ``any`` over axes: a boolean result without gradient."""

    autocast = "promote"

    save_inputs, differentiable = False, False

    def __init__(self, name: str, function: str) -> None:
        self.name, self.function = name, function

    def output_dtype(self, x, **attrs):
        return np.dtype(bool)

    def forward(self, ctx, xp, x, *, axes, keepdims):
        return getattr(xp, self.function)(x, axis=axes, keepdims=keepdims)

    def to_onnx(self, emit, inputs, output, attrs):
        # ONNX reductions take no booleans: reduce 0/1 integers (min for all, max for any)
        truth = emit.cast(inputs[0], "bool") if emit.dtype(inputs[0]).kind != "b" else inputs[0]
        counts = emit.cast(truth, "int32")
        reduce = "ReduceMin" if self.function == "all" else "ReduceMax"
        reduced = emit.reduce(reduce, counts, attrs["axes"], attrs["keepdims"])
        emit.cast(reduced, "bool", output)


class CountNonzero(ReductionOp):
    name = "count_nonzero"
    autocast = "promote"
    save_inputs, differentiable = False, False

    def output_dtype(self, x, **attrs):
        return np.dtype(np.int64)

    def forward(self, ctx, xp, x, *, axes, keepdims):
        return xp.sum(x != 0, axis=axes, keepdims=keepdims, dtype=xp.int64)

    def to_onnx(self, emit, inputs, output, attrs):
        x = inputs[0]
        nonzero = emit.node("Not", [emit.node("Equal", [x, emit.scalar(0, x)], dtype="bool")])
        counts = emit.cast(nonzero, "int64")
        emit.reduce("ReduceSum", counts, attrs["axes"], attrs["keepdims"], output)


class VectorNorm(ReductionOp):
    """The vector p-norm ``sum(|x|^p)^(1/p)`` over axes; ``ord`` may be any real number,
    ``inf`` (max |x|), ``-inf`` (min |x|) or 0 (the count of non-zeros).

    At a zero vector the 2-norm's gradient is taken as 0 (a subgradient) rather than 0/0, as in
    PyTorch; ties of the inf-norm share the gradient evenly.
    """

    name = "vector_norm"
    save_output = True
    flops_per_input = 2  # |x|^p and a sum (one flop per power)

    def output_dtype(self, x, **attrs):
        return float_dtype(x.dtype)

    def check(self, x, *, ord, axes, keepdims):
        if math.isinf(ord):
            _require_nonempty(self.name, x, axes, f"{ord}-norm")

    def forward(self, ctx, xp, x, *, ord, axes, keepdims):
        ctx.input_shape = x.shape
        x = as_float(x)
        size = xp.abs(x)
        if ord == 2:
            return xp.sqrt(xp.sum(size * size, axis=axes, keepdims=keepdims))
        if ord == 1:
            return xp.sum(size, axis=axes, keepdims=keepdims)
        if ord == math.inf:
            return xp.amax(size, axis=axes, keepdims=keepdims)
        if ord == -math.inf:
            return xp.amin(size, axis=axes, keepdims=keepdims)
        if ord == 0:
            count = xp.sum(x != 0, axis=axes, keepdims=keepdims)
            return count.astype(x.dtype)
        # 0 ** negative is inf, and inf ** (1 / negative) is 0: the norm of a vector with a zero
        power, root = x.dtype.type(ord), x.dtype.type(1.0 / ord)  # (bfloat16 stays bfloat16)
        return _quietly(lambda: xp.sum(size**power, axis=axes, keepdims=keepdims) ** root)

    def backward(self, ctx, grad):
        (x,) = ctx.inputs
        ord = ctx.attrs["ord"]
        out = _kept(ctx, ctx.output)
        share = grad if ctx.attrs["keepdims"] else _kept(ctx, grad)
        if ord == 0:
            return (_spread(ctx, grad) * 0.0,)
        if ord == 2:
            return ((_over_norm(share, out)).expand(ctx.input_shape) * x,)
        sign = (x > 0).astype(x.dtype) - (x < 0).astype(x.dtype)
        if ord == 1:
            return (share.expand(ctx.input_shape) * sign,)
        size = x * sign
        if math.isinf(ord):
            winners = size == out
            ties = winners.sum(axis=ctx.attrs["axes"], keepdims=True).astype(grad.dtype)
            return ((share / ties).expand(ctx.input_shape).where(winners, 0.0) * sign,)
        # d/dx sum(|x|^p)^(1/p) = sign(x) |x|^(p-1) / norm^(p-1)
        scale = _over_norm(share, _power(out, ord - 1))
        return (scale.expand(ctx.input_shape) * sign * _power(size, ord - 1),)

    def to_onnx(self, emit, inputs, output, attrs):
        x, order = _in_output_dtype(emit, inputs, output), attrs["ord"]
        axes, keepdims = attrs["axes"], attrs["keepdims"]
        if order == 2:
            emit.reduce("ReduceL2", x, axes, keepdims, output)
        elif order == 1:
            emit.reduce("ReduceL1", x, axes, keepdims, output)
        elif order in (math.inf, -math.inf):
            reduce = "ReduceMax" if order > 0 else "ReduceMin"
            emit.reduce(reduce, emit.node("Abs", [x]), axes, keepdims, output)
        elif order == 0:
            nonzero = emit.node("Not", [emit.node("Equal", [x, emit.scalar(0, x)], dtype="bool")])
            emit.reduce("ReduceSum", emit.cast(nonzero, emit.dtype(x)), axes, keepdims, output)
        else:
            powered = emit.node("Pow", [emit.node("Abs", [x]), emit.scalar(order, x)])
            total = emit.reduce("ReduceSum", powered, axes, keepdims)
            emit.node("Pow", [total, emit.scalar(1.0 / order, x)], output)


def _over_norm(share, divisor):
    """``share / divisor``, taken as 0 where the divisor (a power of the norm) is 0: x is all
    zeros there, and PyTorch gives the subgradient 0 (also for the second derivative)."""
    nonzero = divisor != 0
    return (share / divisor.where(nonzero, 1.0)).where(nonzero, 0.0)


def _power(base, exponent: float):
    """``base ** exponent`` for base >= 0, differentiable, as exp(exponent * log(base)); taken as
    0 where base is 0 (the limit of the norm's gradient there for ord > 1)."""
    positive = base > 0
    safe = base.where(positive, 1.0)
    return (safe.log() * exponent).exp().where(positive, 0.0)


class Scan(Op):
    """A cumulative sum or product along one axis, as ONNX's CumSum defines it:

    - ``exclusive``: element i combines the elements strictly before it (the first is the
      identity: 0 for sums, 1 for products);
    - ``reverse``: accumulate from the end of the axis towards its start.
    """

    autocast = "float32"

    def __init__(self, name: str, function: str, identity: int) -> None:
        self.name, self.function, self.identity = name, function, identity

    def infer(self, x, *, axis, exclusive, reverse) -> ValueSpec:
        return x.with_dtype(accumulator_dtype(x.dtype))

    def forward(self, ctx, xp, x, *, axis, exclusive, reverse):
        if reverse:
            x = xp.flip(x, axis)
        dtype = xp.int64 if x.dtype.kind in INTEGRAL else None  # PyTorch: int64 for integers
        out = getattr(xp, self.function)(x, axis=axis, dtype=dtype)
        if exclusive and out.shape[axis] > 0:
            shifted = xp.empty_like(out)
            head = (slice(None),) * axis
            shifted[head + (0,)] = self.identity
            shifted[head + (slice(1, None),)] = out[head + (slice(None, -1),)]
            out = shifted
        return xp.flip(out, axis) if reverse else out


class CumSum(Scan):
    save_inputs = False

    def backward(self, ctx, grad):
        # each input element feeds every later (earlier, if reversed) output element
        axis, exclusive, reverse = (ctx.attrs[k] for k in ("axis", "exclusive", "reverse"))
        return (grad.cumsum(axis=axis, exclusive=exclusive, reverse=not reverse),)

    def to_onnx(self, emit, inputs, output, attrs):
        axis = emit.constant(np.asarray(attrs["axis"], dtype=np.int64))
        emit.node(
            "CumSum",
            [_in_output_dtype(emit, inputs, output), axis],
            output,
            exclusive=int(attrs["exclusive"]),
            reverse=int(attrs["reverse"]),
        )


class CumProd(Scan):
    """Cumulative product. Its gradient, the sum over later outputs k of ``g[k] * out[k] / x[i]``,
    divides only by non-zero elements. At a zero element it is recomputed from the cumulative
    product with that zero replaced by 1, so first and second derivatives are exact for inputs
    with zeros (third derivatives only where a scanned row holds at most two zeros)."""

    save_output = True

    def backward(self, ctx, grad):
        (x,) = ctx.inputs
        axis, exclusive, reverse = (ctx.attrs[k] for k in ("axis", "exclusive", "reverse"))

        def gather(values):  # sum of values[k] over the outputs k that element i feeds
            return values.cumsum(axis=axis, exclusive=exclusive, reverse=not reverse)

        through_output = gather(grad * ctx.output)
        is_zero = x == 0
        if not bool(is_zero.array.any()):
            return (through_output / x,)
        nonzero = x != 0
        zeros_so_far = is_zero.cumsum(axis=axis, reverse=reverse)

        def others_at(nth: int):
            """The gradient at the nth zero of each row: the scan with that zero set to 1."""
            lifted = x.where((zeros_so_far != nth).where(is_zero, True), 1.0)
            return gather(grad * lifted.cumprod(axis=axis, exclusive=exclusive, reverse=reverse))

        # Every output after the first zero holds it as a factor, so the gradient at the second
        # zero is 0, but its derivative with respect to the first zero is not: lifting the
        # second zero itself keeps that dependence. Later zeros have two zero factors: the
        # first-zero formula gives them 0 with zero first derivatives, as it should.
        at_zero = others_at(1)
        if bool((zeros_so_far.array >= 2).any()):
            at_zero = at_zero.where(zeros_so_far != 2, others_at(2))
        return ((through_output / x.where(nonzero, 1.0)).where(nonzero, at_zero),)


SUM, SUM_TO, MEAN, VAR, STD = Sum(), SumTo(), Mean(), Var(), Std()
MAX = Extremum("max", "amax", "ReduceMax", "maximum")
MIN = Extremum("min", "amin", "ReduceMin", "minimum")
ARGMAX = ArgExtremum("argmax", "argmax", "ArgMax", "maximum")
ARGMIN = ArgExtremum("argmin", "argmin", "ArgMin", "minimum")
PROD, LOGSUMEXP, VECTOR_NORM = Prod(), LogSumExp(), VectorNorm()
ALL, ANY = TruthReduction("all", "all"), TruthReduction("any", "any")
COUNT_NONZERO = CountNonzero()
CUMSUM = CumSum("cumsum", "cumsum", 0)
CUMPROD = CumProd("cumprod", "cumprod", 1)

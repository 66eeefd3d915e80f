"""Writing into a tensor at an index: ``index_put`` (``out = x`` with ``out[index] = values``)
and ``scatter_reduce`` (``out[index]`` combined with ``values`` by product, maximum or minimum).

Together with ``zeros_index_add`` (``ops/index.py``, the sums) they carry PyTorch's scatter
family: ``scatter``, ``index_copy``, ``index_fill``, ``index_put``, ``put``, ``masked_scatter``
and ``fill_diagonal_`` write with ``index_put``; ``scatter_reduce``'s sums and means are
composed from ``zeros_index_add`` in ``functions/scattering.py``.

``index`` attributes are tuples normalised by the public functions, as for ``getitem``: ints,
slices, None, Ellipsis and integer or boolean backend arrays. ``values`` has the shape of
``x[index]`` (``index_put`` also takes a Python number, written everywhere the index selects).
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from ..errors import ArgumentError, BuildingAIError, IndexingError, ShapeError
from .abstract import ValueSpec, bytes_of
from .base import Op
from .families import CopyOp
from .index import describe_index, find_index_problem, flat_positions, has_advanced, on_device
from .index import index_shape as selection_shape


def _needs(value) -> bool:
    """Whether ``value`` is a Tensor that requires grad (a Python number never does)."""
    return getattr(value, "requires_grad", False)


def _index_bytes(index: tuple) -> int:
    return sum(int(part.nbytes) for part in index if hasattr(part, "nbytes"))


def _check_index(op: str, x, values, index: tuple) -> None:
    """Refuse an index that does not fit ``x`` (before forward folds it into flat positions,
    where an out-of-range index would land on a wrong element) and values of another shape
    than the selection."""
    problem = find_index_problem(op, x.shape, index)
    if problem is not None:
        raise problem
    if not hasattr(values, "shape"):
        return
    selected = selection_shape(x.shape, index)
    if tuple(values.shape) != tuple(selected):
        raise ShapeError(
            f"[{op}] values of shape {tuple(values.shape)} do not match the selection "
            f"{describe_index(index)} of shape {tuple(selected)} (tensor shape {tuple(x.shape)})",
            help="expand the values to the selection's shape first",
        )


def _write_positions(xp, out, index: tuple) -> tuple:
    """``(target, where, flat)`` such that ``target[where]`` is ``out[index]``: for the common
    index forms (see ``flat_positions``) a flat view of ``out`` and the flat positions in the
    index's C order (``flat`` True: values are then written flattened), else ``out`` and the
    index itself."""
    if not has_advanced(index):
        return out, index, False
    index = on_device(xp, index)
    positions = flat_positions(xp, out.shape, index)
    if positions is None:
        return out, index, False
    return out.reshape(-1), (positions.reshape(-1),), True


class IndexPut(CopyOp):
    """``out = x`` with ``out[index] = values``. Where an index repeats a position, the value
    written last in the index's C order stays (as PyTorch's CPU kernels do)."""

    name = "index_put"
    save_inputs = False

    def infer(self, x, values, *, index) -> ValueSpec:
        return x

    def cost(self, x, values, *, index) -> tuple:
        _, read, written = super().cost(x, values, index=index)
        return (0, read + _index_bytes(index), written)

    def check(self, x, values, *, index):
        _check_index(self.name, x, values, index)

    def forward(self, ctx, xp, x, values, *, index):
        out = x.copy()  # C-contiguous, so that a flat view of it exists
        target, where, flat = _write_positions(xp, out, index)
        if flat and hasattr(values, "shape"):
            values = values.reshape(-1)
        target[where] = values
        return out

    def backward(self, ctx, grad):
        x, values = ctx.inputs
        index = ctx.attrs["index"]
        grad_x = INDEX_PUT(grad, 0, index=index) if _needs(x) else None  # overwritten: no gradient
        grad_values = grad.getitem(index) if _needs(values) else None
        return grad_x, grad_values

    def to_onnx(self, emit, inputs, output, attrs):
        x, values = inputs
        shape = _fixed_shape(self.name, emit.shapes[x])
        positions = np.arange(math.prod(shape), dtype=np.int64).reshape(shape)[attrs["index"]]
        (updates,) = emit.operands([values], emit.dtype(x))
        updates = emit.node("Expand", [updates, emit.ints(positions.shape)])
        _scatter_flat(emit, x, updates, positions, shape, output, reduction="none")


# The backend ufunc and the ONNX ScatterElements reduction of each of scatter_reduce's reductions
_UFUNCS = {"prod": "multiply", "amax": "maximum", "amin": "minimum"}
_ONNX_REDUCTIONS = {"prod": "mul", "amax": "max", "amin": "min"}


def reduction_identity(reduce: str, dtype: np.dtype):
    """The value that ``reduce`` leaves unchanged in ``dtype`` (1, -inf or the lowest integer,
    inf or the highest integer)."""
    dtype = np.dtype(dtype)
    if reduce == "prod":
        return dtype.type(1)
    if dtype.kind == "b":
        return dtype.type(reduce == "amin")
    if dtype.kind in "iu":
        limits = np.iinfo(dtype)
        return dtype.type(limits.min if reduce == "amax" else limits.max)
    return dtype.type(-np.inf if reduce == "amax" else np.inf)


class ScatterReduce(Op):
    """``out = x``, then ``out[p] = reduce(out[p], v)`` for every value ``v`` that ``index``
    sends to position ``p``; ``reduce`` is ``"prod"``, ``"amax"`` or ``"amin"`` (NaN wins).
    With ``include_self=False`` the positions written start from the reduction's identity, so
    they hold the reduction of the values alone.

    Gradients follow PyTorch: for ``amax``/``amin`` the gradient is shared evenly among every
    element equal to the result (``x`` counted where it equals the result, even when it is
    excluded); for ``prod`` each factor receives the product of the others (zeros handled
    exactly where a position has one zero).
    """

    name = "scatter_reduce"
    save_output = True

    def infer(self, x, values, *, index, reduce, include_self) -> ValueSpec:
        return x

    def cost(self, x, values, *, index, reduce, include_self) -> tuple:
        return (values.numel, bytes_of(x, values) + _index_bytes(index), x.nbytes)

    def check(self, x, values, *, index, reduce, include_self):
        if reduce not in _UFUNCS:
            raise ArgumentError(
                f"[{self.name}] reduce must be one of {', '.join(map(repr, _UFUNCS))}, got "
                f"{reduce!r}",
                help="sums and means are composed from zeros_index_add (scatter_reduce does it)",
            )
        _check_index(self.name, x, values, index)

    def forward(self, ctx, xp, x, values, *, index, reduce, include_self):
        out = x.copy()
        target, where, flat = _write_positions(xp, out, index)
        if not include_self:
            target[where] = reduction_identity(reduce, x.dtype)
        if flat:
            values = values.reshape(-1)
        with warnings.catch_warnings():  # a NaN wins the comparison: that is the result wanted
            warnings.simplefilter("ignore", RuntimeWarning)
            getattr(xp, _UFUNCS[reduce]).at(target, where, values)
        return out

    def backward(self, ctx, grad):
        x, values = ctx.inputs
        attrs = ctx.attrs
        rule = _product_backward if attrs["reduce"] == "prod" else _extremum_backward
        grad_x, grad_values = rule(ctx, grad, _needs(x), _needs(values))
        if grad_x is not None and not attrs["include_self"]:
            grad_x = INDEX_PUT(grad_x, 0, index=attrs["index"])  # x took no part where written
        return grad_x, grad_values

    def to_onnx(self, emit, inputs, output, attrs):
        if emit.opset < 18:
            raise BuildingAIError(
                f"[{self.name}] ONNX export needs opset 18 or later (ScatterElements with "
                "reduction='max', 'min' or 'mul')",
                help="export with opset=18 or later",
            )
        x, values = inputs
        shape = _fixed_shape(self.name, emit.shapes[x])
        positions = np.arange(math.prod(shape), dtype=np.int64).reshape(shape)[attrs["index"]]
        reduce = attrs["reduce"]
        start = x
        if not attrs["include_self"]:
            identity = np.asarray(reduction_identity(reduce, emit.dtype(x)))
            fill = emit.node("Expand", [emit.constant(identity), emit.ints(positions.shape)])
            start = emit.fresh("start")
            _scatter_flat(emit, x, fill, positions, shape, start, reduction="none")
        _scatter_flat(emit, start, values, positions, shape, output, _ONNX_REDUCTIONS[reduce])


def _extremum_backward(ctx, grad, needs_x: bool, needs_values: bool):
    """PyTorch's gradient of amax/amin: ``grad`` shared evenly among the elements (of ``x`` and
    of the values sent there) that equal the result."""
    x, values = ctx.inputs
    index = ctx.attrs["index"]
    result = ctx.output
    x_is_result = (x == result).astype(grad.dtype)
    values_are_result = (values == result.getitem(index)).astype(grad.dtype)
    count = x_is_result + values_are_result.zeros_index_add(x.shape, index)
    shared = grad / count
    grad_x = shared * x_is_result if needs_x else None
    grad_values = shared.getitem(index) * values_are_result if needs_values else None
    return grad_x, grad_values


def _product_backward(ctx, grad, needs_x: bool, needs_values: bool):
    """PyTorch's gradient of prod: each factor gets the product of the others. Dividing the
    result by the factor fails for zeros, so a zero of ``x`` is replaced by one in a second
    product, and so is a value that is the only zero sent to its position."""
    x, values = ctx.inputs
    attrs = ctx.attrs
    index = attrs["index"]
    grad_x = grad_values = None
    if needs_x:
        x_without_zeros = x.where(x != 0, 1)
        product_beside_x = SCATTER_REDUCE(x_without_zeros, values, **attrs)
        grad_x = grad * product_beside_x / x_without_zeros
    if needs_values:
        value_is_zero = values == 0
        zeros_there = value_is_zero.astype(grad.dtype).zeros_index_add(x.shape, index)
        only_zero = value_is_zero & (zeros_there.getitem(index) == 1)
        product_beside_value = SCATTER_REDUCE(x, values.where(~only_zero, 1), **attrs)
        by_division = (grad * ctx.output).getitem(index) / values.where(~value_is_zero, 1)
        grad_values = (grad * product_beside_value).getitem(index).where(only_zero, by_division)
    return grad_x, grad_values


def _fixed_shape(op: str, shape) -> tuple:
    shape = tuple(shape)
    if not all(isinstance(extent, int) for extent in shape):
        raise IndexingError(
            f"[{op}] ONNX export needs a fixed shape for the tensor written into, got {shape}",
            help="make its dimensions fixed in the signature",
        )
    return shape


def _scatter_flat(emit, x, updates, positions, shape, output, reduction: str) -> None:
    """ONNX: ``x`` flattened, ``updates`` written at the constant flat ``positions`` with
    ScatterElements (``reduction``), reshaped back to ``shape``."""
    flat = emit.node("Reshape", [x, emit.ints([-1])])
    updates = emit.node("Reshape", [updates, emit.ints([-1])])
    where = emit.constant(np.asarray(positions, dtype=np.int64).reshape(-1))
    attributes = {} if reduction == "none" else {"reduction": reduction}
    written = emit.node("ScatterElements", [flat, where, updates], axis=0, **attributes)
    emit.node("Reshape", [written, emit.ints(shape)], output)


INDEX_PUT, SCATTER_REDUCE = IndexPut(), ScatterReduce()

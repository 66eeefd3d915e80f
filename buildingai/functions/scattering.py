"""PyTorch's scatter family: writing values into a tensor at an index (``scatter``,
``scatter_reduce``, ``index_add``, ``index_copy``, ``index_fill``, ``index_put``, ``put``,
``masked_scatter``, ``fill_diagonal_``), their in-place forms, and ``logit`` and ``renorm``.

Every write is one of three ops: ``index_put`` (``out[index] = values``), ``zeros_index_add``
(sums) and ``scatter_reduce`` (products, maxima, minima); means divide sums by counts. Each
function turns its own index form into the advanced index those ops take (``scatter``'s index
along ``dim`` becomes one array per axis), so gradients, in-place recording and frozen graphs
come from the op records. An index given as a constant freezes into the graph; one computed
from the inputs' values is refused while freezing.

In-place forms run through the in-place path of ``inplace.py``: they return the tensor, bump
its version counter, refuse a leaf that requires grad while gradients are recorded, and inside
a recorded graph take the out-of-place function's node.
"""

from __future__ import annotations

import math
from numbers import Number

import numpy as np

from ..autograd.dispatch import apply
from ..autograd.tensor import Tensor
from ..backend.device import array_namespace
from ..backend.dtypes import is_floating
from ..errors import ArgumentError, DTypeError, IndexingError, ShapeError
from ..ops.index import find_index_problem, index_shape
from ..ops.promotion import float_dtype
from ..ops.scatter import INDEX_PUT, SCATTER_REDUCE
from ._common import check_scalar_axis, normalize_axis
from .arrangement import _fixed_sizes
from .elementwise import clone, where
from .index import (
    _along_axis,
    _check_gather_shapes,
    _check_range,
    _index_array,
    _normalize_index,
    getitem,
    zeros_index_add,
)
from .inplace import _check_keeps_shape
from .inplace_math import _write
from .matrix_norms import vector_norm

_SCATTER_REDUCTIONS = ("add", "multiply")
_REDUCTIONS = ("sum", "prod", "mean", "amax", "amin")


# ----- operands -----------------------------------------------------------------------------------


def _tensor_operand(value, x: Tensor, op: str, what: str) -> Tensor:
    """``value`` (a Tensor or array) as a Tensor; PyTorch refuses a dtype other than ``x``'s."""
    if not isinstance(value, Tensor):
        value = Tensor(array_namespace(x.array).asarray(value))
    if value.dtype != x.dtype:
        raise DTypeError(
            f"[{op}] {what} has dtype {value.dtype} but the input has {x.dtype}",
            help=f"convert one of them, e.g. {what}.to(x.dtype)",
        )
    return value


def _filled(x: Tensor, shape: tuple, value) -> Tensor:
    """``value`` (a number or a 0-d tensor) as a tensor of ``shape`` in ``x``'s dtype."""
    if isinstance(value, Tensor):
        return value.astype(x.dtype).expand(shape)
    return Tensor(array_namespace(x.array).full(shape, value, dtype=x.dtype))


def _src_or_value(op: str, src, value):
    """``(src, value)`` with PyTorch's overloads: a number in ``src``'s place is the value."""
    if src is not None and value is not None:
        raise ArgumentError(
            f"[{op}] takes src (a tensor) or value (a number), not both",
            help=f"x.{op}(dim, index, src) or x.{op}(dim, index, value=v)",
        )
    if src is None and value is None:
        raise ArgumentError(
            f"[{op}] needs src (a tensor) or value (a number)",
            help=f"x.{op}(dim, index, src) or x.{op}(dim, index, value=v)",
        )
    if isinstance(src, Number):
        return None, src
    return src, value


def _named_sizes(shape) -> dict:
    """``{"the size of axis 0": n, ...}``: sizes named for ``_fixed_sizes``' message."""
    return {f"the size of axis {axis}": size for axis, size in enumerate(shape)}


def _vector_index(index, op: str):
    """A 0-d or 1-D integer index as a 1-D backend array (``index_add``, ``index_copy``...)."""
    array = _index_array(index, op)
    if array.ndim > 1:
        raise ShapeError(
            f"[{op}] index must be 0-d or 1-D, got shape {tuple(array.shape)}",
            help="flatten it with .reshape(-1)",
        )
    return array.reshape(-1)


# ----- scatter: index and src of x's rank ---------------------------------------------------------


def _scatter_positions(op: str, x: Tensor, dim: int, array, src: Tensor | None):
    """``(positions, src)``: the advanced index that sends element ``i`` of ``index`` to
    ``x[..., index[i], ...]`` (along ``dim``), and ``src`` cut to the index's shape (PyTorch
    reads only that leading block). Checks shapes and ranges as PyTorch does."""
    _check_gather_shapes(op, tuple(x.shape), tuple(array.shape), dim)
    if src is not None:
        _check_gather_shapes(op, tuple(src.shape), tuple(array.shape), -1, what="src")
        if tuple(src.shape) != tuple(array.shape):
            src = getitem(src, tuple(slice(0, extent) for extent in array.shape))
    _check_range(op, array, x.shape[dim], dim, x.shape, negative=False)
    return _along_axis(array, dim, array.shape), src


def scatter(
    input: Tensor,  # noqa: A002 - PyTorch's argument name
    dim: int,
    index,
    src=None,
    *,
    value=None,
    reduce: str | None = None,
) -> Tensor:
    """``out[index[i][j]][j] = src[i][j]`` for ``dim=0`` (and so on for other dims), out of
    place; with ``value`` (or a number in place of ``src``) that number is written instead.

    input: (d0, ..., dn); index: integers with as many dimensions, ``index.shape[d] <=
    input.shape[d]`` for ``d != dim`` and ``<= src.shape[d]`` everywhere -> input's shape.
    Where an index repeats a position the last value along ``dim`` stays (PyTorch's CPU
    result). ``reduce="add"`` or ``"multiply"`` combines instead of writing. Gradients: input's
    is zero where written, src gathers the output gradient at every position of the index.
    """
    x = input
    src, value = _src_or_value("scatter", src, value)
    if reduce is not None and reduce not in _SCATTER_REDUCTIONS:
        raise ArgumentError(
            f"[scatter] reduce must be 'add' or 'multiply', got {reduce!r}",
            help="use scatter_reduce for 'sum', 'prod', 'mean', 'amax' and 'amin'",
        )
    if src is not None:
        src = _tensor_operand(src, x, "scatter", "src")
    array = _index_array(index, "scatter")
    if x.ndim == 0:  # one element: PyTorch takes a 0-d or one-element index
        check_scalar_axis(dim, "scatter")
        flat_src = None if src is None else src.reshape(-1)
        one = scatter(x.reshape(1), 0, array.reshape(-1), flat_src, value=value, reduce=reduce)
        return one.reshape(())
    dim = normalize_axis(dim, x.ndim, "scatter")
    if array.size == 0:
        return clone(x)
    positions, src = _scatter_positions("scatter", x, dim, array, src)
    if reduce is None:
        if src is None:
            src = _filled(x, array.shape, value) if isinstance(value, Tensor) else value
        return apply(INDEX_PUT, x, src, index=positions)
    if src is None:
        src = _filled(x, array.shape, value)
    if reduce == "add":
        return x + zeros_index_add(src, x.shape, positions)
    return apply(SCATTER_REDUCE, x, src, index=positions, reduce="prod", include_self=True)


def scatter_reduce(
    input: Tensor,  # noqa: A002 - PyTorch's argument name
    dim: int,
    index,
    src: Tensor,
    reduce: str,
    *,
    include_self: bool = True,
) -> Tensor:
    """Reduce every ``src[i][j]`` into ``out[index[i][j]][j]`` (``dim=0``) with ``reduce``:
    ``"sum"``, ``"prod"``, ``"mean"``, ``"amax"`` or ``"amin"``, out of place.

    input: (d0, ..., dn); index and src as for ``scatter`` -> input's shape. With
    ``include_self=False`` the input's values at the positions written take no part; positions
    no index reaches keep the input's value. Integer means round down, as in PyTorch.
    Gradients follow PyTorch's (``amax``/``amin`` share the gradient evenly among ties).
    """
    x = input
    if reduce not in _REDUCTIONS:
        raise ArgumentError(
            f"[scatter_reduce] reduce must be one of {', '.join(map(repr, _REDUCTIONS))}, got "
            f"{reduce!r}",
            help="'max' and 'min' are spelled 'amax' and 'amin' here",
        )
    src = _tensor_operand(src, x, "scatter_reduce", "src")
    array = _index_array(index, "scatter_reduce")
    if x.ndim == 0:
        check_scalar_axis(dim, "scatter_reduce")
        one = scatter_reduce(x.reshape(1), 0, array.reshape(-1), src.reshape(-1), reduce,
                             include_self=include_self)  # fmt: skip
        return one.reshape(())
    dim = normalize_axis(dim, x.ndim, "scatter_reduce")
    if array.size == 0:
        return clone(x)
    positions, src = _scatter_positions("scatter_reduce", x, dim, array, src)
    include_self = bool(include_self)
    if reduce in ("prod", "amax", "amin"):
        return apply(SCATTER_REDUCE, x, src, index=positions, reduce=reduce,
                     include_self=include_self)  # fmt: skip
    start = x if include_self else apply(INDEX_PUT, x, 0, index=positions)
    total = start + zeros_index_add(src, x.shape, positions)
    if reduce == "sum":
        return total
    ones = Tensor(array_namespace(x.array).ones(array.shape, dtype=x.dtype))
    count = zeros_index_add(ones, x.shape, positions)
    # a position no index reaches keeps its value: divide it by one
    count = count + 1 if include_self else count.clamp(1)
    if x.dtype.kind in "iub":
        return total.div(count, rounding_mode="floor")
    return total / count


# ----- index along one dim: index_add, index_copy, index_fill -------------------------------------


def _slices_at(op: str, x: Tensor, dim: int, array, source: Tensor | None, negative: bool):
    """The advanced index of the slices ``x[..., array, ...]`` along ``dim``, after checking
    ``array``'s range and that ``source`` has the shape of those slices."""
    _check_range(op, array, x.shape[dim], dim, x.shape, negative=negative)
    if source is not None:
        expected = tuple(x.shape[:dim]) + (len(array),) + tuple(x.shape[dim + 1 :])
        if tuple(source.shape) != expected:
            raise ShapeError(
                f"[{op}] source has shape {tuple(source.shape)}, but the {len(array)} slices of "
                f"the input {tuple(x.shape)} along dim {dim} have shape {expected}",
                help="source must have the input's shape with dim's size replaced by the "
                "number of indices",
            )
    return (slice(None),) * dim + (array,)


def _one_element(op: str, x: Tensor, dim: int, source: Tensor | None):
    """A 0-d input read as one element along dim 0 (PyTorch accepts it), and its source."""
    check_scalar_axis(dim, op)
    return x.reshape(1), (None if source is None else source.reshape(-1))


def index_add(
    input: Tensor,  # noqa: A002 - PyTorch's argument name
    dim: int,
    index,
    source: Tensor,
    *,
    alpha=1,
) -> Tensor:
    """``input`` with ``alpha * source[..., i, ...]`` added into ``input[..., index[i], ...]``
    along ``dim`` (repeated indices accumulate), out of place.

    input: (..., n, ...); index: (k,) integers in ``0..n-1``; source: (..., k, ...) -> input's
    shape. For integer inputs ``alpha`` is truncated to an integer, as in PyTorch.
    """
    x = input
    array = _vector_index(index, "index_add")
    source = _tensor_operand(source, x, "index_add", "source")
    if x.ndim == 0:
        one, flat_source = _one_element("index_add", x, dim, source)
        return index_add(one, 0, array, flat_source, alpha=alpha).reshape(())
    dim = normalize_axis(dim, x.ndim, "index_add")
    positions = _slices_at("index_add", x, dim, array, source, negative=False)
    if alpha != 1:
        source = source * (int(alpha) if x.dtype.kind in "iu" else alpha)
    return x + zeros_index_add(source, x.shape, positions)


def index_copy(input: Tensor, dim: int, index, source: Tensor) -> Tensor:  # noqa: A002
    """``input`` with ``input[..., index[i], ...] = source[..., i, ...]`` along ``dim``, out of
    place; where an index repeats, the last slice stays (PyTorch's CPU result).

    input: (..., n, ...); index: (k,) integers in ``0..n-1``; source: (..., k, ...) -> input's
    shape. Gradients: input's is zero on the copied slices, source gathers them.
    """
    x = input
    array = _vector_index(index, "index_copy")
    source = _tensor_operand(source, x, "index_copy", "source")
    if x.ndim == 0:
        one, flat_source = _one_element("index_copy", x, dim, source)
        return index_copy(one, 0, array, flat_source).reshape(())
    dim = normalize_axis(dim, x.ndim, "index_copy")
    positions = _slices_at("index_copy", x, dim, array, source, negative=False)
    return apply(INDEX_PUT, x, source, index=positions)


def index_fill(input: Tensor, dim: int, index, value) -> Tensor:  # noqa: A002
    """``input`` with the slices ``input[..., index[i], ...]`` along ``dim`` set to ``value``
    (a number, or a 0-d tensor that then receives the sum of their gradient), out of place.

    input: (..., n, ...); index: (k,) integers in ``-n..n-1`` -> input's shape.
    """
    x = input
    array = _vector_index(index, "index_fill")
    if isinstance(value, Tensor) and value.ndim != 0:
        raise ShapeError(
            f"[index_fill] value must be a number or a 0-d tensor, got shape {tuple(value.shape)}",
            help="pass value.reshape(()) for a one-element tensor, or use index_copy for slices",
        )
    if x.ndim == 0:
        one, _ = _one_element("index_fill", x, dim, None)
        return index_fill(one, 0, array, value).reshape(())
    dim = normalize_axis(dim, x.ndim, "index_fill")
    _check_range("index_fill", array, x.shape[dim], dim, x.shape, negative=True)
    if array.size:
        # each slice once: PyTorch's gradient for a tensor value counts a repeated index once
        array = array_namespace(array).unique(array % x.shape[dim])
    positions = (slice(None),) * dim + (array,)
    if isinstance(value, Tensor):
        value = _filled(x, index_shape(tuple(x.shape), positions), value)
    return apply(INDEX_PUT, x, value, index=positions)


# ----- index_put, put, masked_scatter -------------------------------------------------------------


def index_put(
    input: Tensor,  # noqa: A002 - PyTorch's argument name
    indices,
    values: Tensor,
    accumulate: bool = False,
) -> Tensor:
    """``input`` with ``out[indices] = values`` (``+=`` with ``accumulate``, where repeated
    positions add up), out of place; ``x[indices] = values`` as a differentiable function.

    indices: a tuple of integer or boolean tensors, one per leading dimension; values: a tensor
    broadcasting to the shape of ``input[indices]`` -> input's shape. Without ``accumulate``
    the last of repeated positions stays (PyTorch's CPU result).
    """
    x = input
    if not isinstance(indices, (tuple, list)):
        raise ArgumentError(
            f"[index_put] indices must be a tuple of tensors, got {type(indices).__name__}",
            help="wrap a single index in a tuple: x.index_put((idx,), values)",
        )
    for position, part in enumerate(indices):
        if part is None:
            raise IndexingError(
                f"[index_put] indices[{position}] is None; every entry must be a tensor",
                help="index every leading dimension with a tensor (torch.arange for all)",
            )
    index, _ = _normalize_index(tuple(indices), "index_put")
    problem = find_index_problem("index_put", tuple(x.shape), index)
    if problem is not None:
        raise problem
    selected = index_shape(tuple(x.shape), index)
    if isinstance(values, Number):
        values = _filled(x, selected, values)
    values = _tensor_operand(values, x, "index_put", "values")
    if tuple(values.shape) != selected:
        try:
            broadcast = np.broadcast_shapes(tuple(values.shape), selected)
        except ValueError:
            broadcast = None
        if broadcast != selected:
            raise ShapeError(
                f"[index_put] values of shape {tuple(values.shape)} cannot be broadcast to the "
                f"indexed shape {selected} (input shape {tuple(x.shape)})",
                help="values must broadcast to the shape of input[indices]",
            )
        values = values.expand(selected)
    if accumulate:
        return x + zeros_index_add(values, x.shape, index)
    return apply(INDEX_PUT, x, values, index=index)


def put(input: Tensor, index, source: Tensor, accumulate: bool = False) -> Tensor:  # noqa: A002
    """``input`` read as 1-D, with ``out[index[i]] = source[i]`` (``+=`` with ``accumulate``),
    out of place; negative indices count from the end.

    input: any shape with n elements; index: integers of any shape in ``-n..n-1``; source: as
    many elements as index -> input's shape.
    """
    x = input
    array = _index_array(index, "put")
    source = _tensor_operand(source, x, "put", "source")
    if source.numel() != array.size:
        raise ShapeError(
            f"[put] source has {source.numel()} elements but index has {array.size} (source "
            f"shape {tuple(source.shape)}, index shape {tuple(array.shape)})",
            help="give one source value per index",
        )
    flat = x.reshape(-1)
    count = flat.shape[0]
    _check_range("put", array, count, 0, (count,), negative=True)
    positions, values = (array.reshape(-1),), source.reshape(-1)
    if accumulate:
        return (flat + zeros_index_add(values, (count,), positions)).reshape(x.shape)
    return apply(INDEX_PUT, flat, values, index=positions).reshape(x.shape)


def masked_scatter(input: Tensor, mask, source: Tensor) -> Tensor:  # noqa: A002
    """``input`` with the positions where ``mask`` is True filled, in row-major order, by the
    leading elements of ``source``, out of place.

    input and mask (boolean) broadcast together to the output's shape; source: at least as
    many elements as ``mask`` has True entries (the rest are unused, with zero gradient).
    """
    x = input
    mask_array = mask.array if isinstance(mask, Tensor) else mask
    if not hasattr(mask_array, "shape"):
        mask_array = np.asarray(mask_array)
    if mask_array.dtype.kind != "b":
        raise DTypeError(
            f"[masked_scatter] the mask must be boolean, got dtype {mask_array.dtype}",
            help="build it with a comparison (x > 0) or convert it with .bool()",
        )
    source = _tensor_operand(source, x, "masked_scatter", "source")
    try:
        shape = np.broadcast_shapes(tuple(x.shape), tuple(mask_array.shape))
    except ValueError:
        raise ShapeError(
            f"[masked_scatter] mask of shape {tuple(mask_array.shape)} cannot be broadcast with "
            f"the input of shape {tuple(x.shape)}",
            help="each dimension must match or be 1; unsqueeze the mask to align it",
        ) from None
    if tuple(x.shape) != shape:
        x = x.expand(shape)
    if tuple(mask_array.shape) != shape:
        # the broadcast mask holds positions: a symbolic size would freeze them for one size
        _fixed_sizes("masked_scatter", **_named_sizes(input.shape))
        mask_array = array_namespace(mask_array).broadcast_to(mask_array, shape)
    selected = int(mask_array.sum())
    if source.numel() < selected:
        raise ShapeError(
            f"[masked_scatter] the mask selects {selected} elements but source has only "
            f"{source.numel()} (source shape {tuple(source.shape)})",
            help="source needs at least as many elements as the mask has True entries",
        )
    values = source.reshape(-1)
    if values.shape[0] != selected:
        values = getitem(values, slice(0, selected))
    return apply(INDEX_PUT, x, values, index=(mask_array,))


# ----- logit and renorm ---------------------------------------------------------------------------


def logit(input: Tensor, eps: float | None = None) -> Tensor:  # noqa: A002
    """``log(p / (1 - p))``, with ``p`` clamped to ``[eps, 1 - eps]`` when ``eps`` is given
    (the gradient is then zero outside). x: (...) -> the same shape; integer inputs give the
    default float dtype."""
    x = input
    dtype = float_dtype(x.dtype)
    p = x if x.dtype == dtype else x.astype(dtype)
    if eps is not None:
        p = p.clamp(eps, 1 - eps)
    else:
        # PyTorch's gradient is NaN outside [0, 1], where the formula's own gradient would be
        # finite: scaling by NaN there (by one inside) keeps the values and makes it so
        inside = (p >= 0) & (p <= 1)
        p = p * where(inside, 1.0, float("nan")).astype(p.dtype)
    # two logarithms, so that the gradient 1 / p + 1 / (1 - p) is inf (not nan) at 0 and 1
    return p.log() - (-p).log1p()


def renorm(input: Tensor, p: float, dim: int, maxnorm: float) -> Tensor:  # noqa: A002
    """Each slice ``input.select(dim, i)`` whose ``p``-norm exceeds ``maxnorm`` scaled down to
    norm ``maxnorm`` (PyTorch's ``maxnorm / (norm + 1e-7)``); the others unchanged.

    input: (..., n, ...) with at least 2 dimensions, floating -> the same shape.
    """
    x = input
    if not p > 0:
        raise ArgumentError(
            f"[renorm] p must be positive, got {p}", help="use p=2 (Euclidean) or any p > 0"
        )
    if maxnorm < 0:
        raise ArgumentError(f"[renorm] maxnorm must be >= 0, got {maxnorm}")
    if x.ndim < 2:
        raise ShapeError(
            f"[renorm] the input needs at least 2 dimensions, got shape {tuple(x.shape)}",
            help="renorm scales the slices along dim: reshape a vector to (1, n) first",
        )
    if not is_floating(x.dtype):
        raise DTypeError(
            f"[renorm] needs a floating input, got {x.dtype}", help="convert it with .float()"
        )
    dim = normalize_axis(dim, x.ndim, "renorm")
    others = tuple(axis for axis in range(x.ndim) if axis != dim)
    norm = vector_norm(x, p, others, keepdim=True)
    factor = where(norm > maxnorm, maxnorm / (norm + 1e-7), 1.0).astype(x.dtype)
    return x * factor


# ----- in place -----------------------------------------------------------------------------------


def scatter_(x: Tensor, dim: int, index, src=None, *, value=None, reduce=None) -> Tensor:
    """``scatter`` written into ``x``: x (*) -> x itself."""

    def compute(previous: Tensor) -> Tensor:
        return scatter(previous, dim, index, src, value=value, reduce=reduce)

    return _write(x, "scatter_", (src, value), compute)


def scatter_add_(x: Tensor, dim: int, index, src: Tensor) -> Tensor:
    """``scatter_add`` written into ``x``: x (*) -> x itself."""

    def compute(previous: Tensor) -> Tensor:
        return previous.scatter_add(dim, index, src)

    return _write(x, "scatter_add_", (src,), compute)


def scatter_reduce_(
    x: Tensor, dim: int, index, src: Tensor, reduce: str, *, include_self: bool = True
) -> Tensor:
    """``scatter_reduce`` written into ``x``: x (*) -> x itself."""

    def compute(previous: Tensor) -> Tensor:
        return scatter_reduce(previous, dim, index, src, reduce, include_self=include_self)

    return _write(x, "scatter_reduce_", (src,), compute)


def index_add_(x: Tensor, dim: int, index, source: Tensor, *, alpha=1) -> Tensor:
    """``index_add`` written into ``x``: x (*) -> x itself."""

    def compute(previous: Tensor) -> Tensor:
        return index_add(previous, dim, index, source, alpha=alpha)

    return _write(x, "index_add_", (source,), compute)


def index_copy_(x: Tensor, dim: int, index, source: Tensor) -> Tensor:
    """``index_copy`` written into ``x``: x (*) -> x itself."""

    def compute(previous: Tensor) -> Tensor:
        return index_copy(previous, dim, index, source)

    return _write(x, "index_copy_", (source,), compute)


def index_fill_(x: Tensor, dim: int, index, value) -> Tensor:
    """``index_fill`` written into ``x``: x (*) -> x itself."""

    def compute(previous: Tensor) -> Tensor:
        return index_fill(previous, dim, index, value)

    return _write(x, "index_fill_", (value,), compute)


def index_put_(x: Tensor, indices, values: Tensor, accumulate: bool = False) -> Tensor:
    """``index_put`` written into ``x``: x (*) -> x itself."""

    def compute(previous: Tensor) -> Tensor:
        return index_put(previous, indices, values, accumulate)

    return _write(x, "index_put_", (values,), compute)


def put_(x: Tensor, index, source: Tensor, accumulate: bool = False) -> Tensor:
    """``put`` written into ``x``: x (*) -> x itself."""

    def compute(previous: Tensor) -> Tensor:
        return put(previous, index, source, accumulate)

    return _write(x, "put_", (source,), compute)


def masked_scatter_(x: Tensor, mask, source: Tensor) -> Tensor:
    """``masked_scatter`` written into ``x`` (the mask must broadcast to ``x``'s shape):
    x (*) -> x itself."""
    forms = ("x.masked_scatter_(mask, source)", "x.masked_scatter(mask, source)")
    _check_keeps_shape(x, "masked_scatter_", forms, mask)

    def compute(previous: Tensor) -> Tensor:
        return masked_scatter(previous, mask, source)

    return _write(x, "masked_scatter_", (source,), compute)


def logit_(x: Tensor, eps: float | None = None) -> Tensor:
    """``logit`` written into ``x`` (a floating tensor): x (*) -> x itself."""
    if not is_floating(x.dtype):  # refused before computing, as PyTorch does
        raise DTypeError(
            f"[logit_] cannot write the floating result into the {x.dtype} tensor in place",
            help="convert first (x = x.float()) or use the out-of-place x.logit()",
        )
    return _write(x, "logit_", (), lambda previous: logit(previous, eps))


def renorm_(x: Tensor, p: float, dim: int, maxnorm: float) -> Tensor:
    """``renorm`` written into ``x``: x (*) -> x itself."""
    return _write(x, "renorm_", (), lambda previous: renorm(previous, p, dim, maxnorm))


def fill_diagonal_(x: Tensor, fill_value, wrap: bool = False) -> Tensor:
    """Set the main diagonal of ``x`` to ``fill_value`` in place; returns ``x``.

    x: (n, m), or (n, n, ..., n) with all sizes equal. For a tall matrix (n > m + 1) with
    ``wrap`` the diagonal starts again every m + 1 rows, as in NumPy and PyTorch.
    """
    if x.ndim < 2:
        raise ShapeError(
            f"[fill_diagonal_] needs at least 2 dimensions, got shape {tuple(x.shape)}",
            help="for a vector, fill it directly: x.fill_(value)",
        )
    shape = tuple(x.shape)
    if x.ndim > 2 and len(set(shape)) != 1:
        raise ShapeError(
            f"[fill_diagonal_] a tensor of more than 2 dimensions must have all sizes equal, got "
            f"shape {shape}"
        )
    _fixed_sizes("fill_diagonal_", **_named_sizes(shape))
    if isinstance(fill_value, Tensor):
        fill_value = fill_value.item()
    # flat positions of the diagonal: one step along every axis at once
    step = sum(math.prod(shape[axis + 1 :]) for axis in range(x.ndim))
    count = min(shape[0], shape[1])
    if wrap and x.ndim == 2 and shape[0] > shape[1] + 1:
        count = -(-math.prod(shape) // step)
    positions = np.unravel_index(np.arange(count) * step, shape)

    def compute(previous: Tensor) -> Tensor:
        return apply(INDEX_PUT, previous, fill_value, index=positions)

    return _write(x, "fill_diagonal_", (), compute)


__all__ = [
    "index_add",
    "index_copy",
    "index_fill",
    "index_put",
    "index_put_",
    "logit",
    "logit_",
    "masked_scatter",
    "put",
    "renorm",
    "scatter",
    "scatter_reduce",
]

TENSOR_METHODS = {
    "scatter": scatter, "scatter_": scatter_, "scatter_add_": scatter_add_,
    "scatter_reduce": scatter_reduce, "scatter_reduce_": scatter_reduce_,
    "index_add": index_add, "index_add_": index_add_,
    "index_copy": index_copy, "index_copy_": index_copy_,
    "index_fill": index_fill, "index_fill_": index_fill_,
    "index_put": index_put, "index_put_": index_put_, "put": put, "put_": put_,
    "masked_scatter": masked_scatter, "masked_scatter_": masked_scatter_,
    "fill_diagonal_": fill_diagonal_, "logit": logit, "logit_": logit_,
    "renorm": renorm, "renorm_": renorm_,
}  # fmt: skip

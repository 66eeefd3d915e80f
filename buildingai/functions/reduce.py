"""Reductions and scans: ``buildingai.sum(x, axis=1)`` and ``x.sum(dim=1, keepdim=True)`` alike.

Every reduction takes ``axis`` (an int, a tuple of ints, or None for all axes) and ``keepdims``,
or PyTorch's spellings ``dim`` and ``keepdim``. ``max``/``min`` follow the spelling: with the
keyword ``axis`` they return values only, as in NumPy; with ``dim`` or a positional dimension
(``x.max(1)``) they return PyTorch's ``(values, indices)`` pair.
"""

from __future__ import annotations

from numbers import Integral
from typing import NamedTuple

from ..autograd.dispatch import apply
from ..autograd.tensor import Tensor
from ..errors import ShapeError
from ..ops import reduce as ops
from ..ops.shape import SQUEEZE
from ..ops.sort import GATHER_ELEMENTS
from ._common import as_shape, check_scalar_axis, normalize_axes, normalize_axis, pick
from .creation import astype
from .elementwise import maximum, minimum


class ValuesIndices(NamedTuple):
    """What ``max``/``min`` return when called with ``dim``, as ``torch.max(x, dim)``: the
    extreme values and their int64 positions along ``dim``."""

    values: Tensor
    indices: Tensor


class MinMax(NamedTuple):
    """What ``aminmax`` returns, as ``torch.aminmax``: the smallest and the largest values."""

    min: Tensor
    max: Tensor


def _axes(x, axis, dim, op: str):
    return normalize_axes(pick("axis", axis, "dim", dim), x.ndim, op)


def _converted(x, dtype):
    """x in ``dtype`` (PyTorch's ``dtype=`` of sum, mean, prod and the scans); x for None."""
    return x if dtype is None else astype(x, dtype)


def _keep(keepdims, keepdim) -> bool:
    return bool(pick("keepdims", keepdims, "keepdim", keepdim, False))


def sum(x, axis=None, keepdims=None, *, dim=None, keepdim=None, dtype=None):  # noqa: A001
    """Sum over ``axis`` (an int, a tuple of ints, or None for all axes); 0 when empty.

    x: (...) -> the shape of x without the reduced axes (kept as size 1 with ``keepdims``).
    ``dtype`` (PyTorch's): x is converted to it first, so the sum accumulates in it.
    """
    x = _converted(x, dtype)
    axes = _axes(x, axis, dim, "sum")
    return apply(ops.SUM, x, axes=axes, keepdims=_keep(keepdims, keepdim))


def sum_to(x, *shape):
    """Sum a (broadcast) tensor down to ``shape``: the adjoint of ``expand``."""
    shape = as_shape(shape)
    if tuple(x.shape) == shape:
        return x
    return apply(ops.SUM_TO, x, shape=shape)


def sum_to_size(x, *size):
    """Sum ``x`` down to ``size``, which must expand to x's shape (PyTorch's
    ``x.sum_to_size``): (2, 3) -> (1, 3), (3,) or (2, 1). x itself when the shape is already
    ``size``; otherwise integers and bools sum to int64, as ``sum``."""
    size = as_shape(size)
    shape = tuple(x.shape)
    # this module's ``all`` is the reduction: count the mismatches instead
    misfits = [w for w, h in zip(reversed(size), reversed(shape)) if w not in (h, 1)]
    if len(size) > len(shape) or misfits:
        raise ShapeError(
            f"[sum_to_size] cannot sum a tensor shaped {shape} to {size}: {size} does not expand "
            f"to {shape}",
            help="every size must equal the tensor's size at that position (counted from the "
            "right) or be 1, with no more dimensions than the tensor",
        )
    return sum_to(x, size)


def mean(x, axis=None, keepdims=None, *, dim=None, keepdim=None, dtype=None):
    """Arithmetic mean over ``axis``; nan for an empty reduction (as NumPy and PyTorch).

    x: (...) -> the shape of x without the reduced axes (kept as size 1 with ``keepdims``).
    Integer inputs give float64, as in NumPy. ``dtype``: x is converted to it first.
    """
    x = _converted(x, dtype)
    axes = _axes(x, axis, dim, "mean")
    return apply(ops.MEAN, x, axes=axes, keepdims=_keep(keepdims, keepdim))


def _correction(op: str, correction, ddof, unbiased) -> float:
    """Resolve PyTorch's ``correction``/``unbiased`` and NumPy's ``ddof`` (default 1)."""
    given = pick("correction", correction, "ddof", ddof)
    if unbiased is not None:
        if given is not None:
            raise TypeError(f"[{op}] got both unbiased={unbiased!r} and correction={given!r}")
        return 1 if unbiased else 0
    return 1 if given is None else given


def _spread_args(op, x, axis, unbiased, keepdims, correction, ddof, dim, keepdim) -> dict:
    if isinstance(axis, bool):  # PyTorch's var(x, unbiased) overload
        axis, unbiased = None, axis if unbiased is None else unbiased
    return {
        "axes": _axes(x, axis, dim, op),
        "keepdims": _keep(keepdims, keepdim),
        "correction": _correction(op, correction, ddof, unbiased),
    }


def var(
    x,
    axis=None,
    unbiased: bool | None = None,
    keepdims=None,
    *,
    correction=None,
    ddof=None,
    dim=None,
    keepdim=None,
):
    """Variance over ``axis``: ``sum((x - mean)^2) / (N - correction)``.

    ``correction`` defaults to 1 (PyTorch's Bessel correction); NumPy's ``ddof`` is the same
    number (pass ``ddof=0`` for NumPy's default), and ``unbiased=False`` means correction 0.
    Positional arguments follow PyTorch: ``x.var(dim, unbiased, keepdim)``.
    """
    attrs = _spread_args("var", x, axis, unbiased, keepdims, correction, ddof, dim, keepdim)
    return apply(ops.VAR, x, **attrs)


def std(
    x,
    axis=None,
    unbiased: bool | None = None,
    keepdims=None,
    *,
    correction=None,
    ddof=None,
    dim=None,
    keepdim=None,
):
    """Standard deviation over ``axis``: the square root of ``var`` (same arguments).

    x: (...) -> the shape of x without the reduced axes (kept as size 1 with ``keepdims``).
    """
    attrs = _spread_args("std", x, axis, unbiased, keepdims, correction, ddof, dim, keepdim)
    return apply(ops.STD, x, **attrs)


def _extremum(op, name: str, x, axis, keepdims, dim, keepdim):
    chosen = pick("axis", axis, "dim", dim)
    if isinstance(chosen, Tensor):
        other = "maximum" if name in ("max", "amax") else "minimum"
        raise TypeError(
            f"[{name}] reduces one tensor over axes and got a tensor as the axis; use "
            f"{other}(a, b) for the element-wise {other} of two tensors"
        )
    axes = normalize_axes(chosen, x.ndim, name)
    return apply(op, x, axes=axes, keepdims=_keep(keepdims, keepdim))


def _extremum_with_indices(arg_op, name: str, x, dim, keepdims, keepdim) -> ValuesIndices:
    """PyTorch's ``max(x, dim)``: the values are gathered at the arg-extreme positions, so the
    gradient goes to that one element (the first of tied extremes), as in PyTorch."""
    if isinstance(dim, bool) or not isinstance(dim, Integral):
        raise ShapeError(
            f"[{name}] with dim= returns (values, indices) along one dimension, got dim={dim!r}",
            help=f"pass one int, or use amax/amin (or {name}(x, axis=...)) to reduce several "
            "axes to values only",
        )
    keep = _keep(keepdims, keepdim)
    axis = normalize_axis(int(dim), x.ndim, name)
    if x.ndim == 0:  # PyTorch: a 0-d tensor is its own extreme, at index 0
        indices = apply(arg_op, x, axis=None, keepdims=False)
        return ValuesIndices(x, indices)
    if x.shape[axis] == 0:
        raise ShapeError(
            f"[{name}] cannot reduce dimension {axis} of size 0 of a tensor shaped "
            f"{tuple(x.shape)}: the {name} of nothing is undefined",
            help="check the input is not empty, or reduce a non-empty dimension",
        )
    indices = apply(arg_op, x, axis=axis, keepdims=True)
    # the ops themselves: the indices are in range and the axis normalised
    values = apply(GATHER_ELEMENTS, x, indices, axis=axis)
    if not keep:
        values = apply(SQUEEZE, values, axes=(axis,))
        indices = apply(SQUEEZE, indices, axes=(axis,))
    return ValuesIndices(values, indices)


def _max_or_min(name, ops_pair, pairwise, x, by_position, keepdim_by_position, keywords: dict):
    """The forms shared by ``max`` and ``min`` (see ``max``). ``ops_pair``: the values-only
    reduction and the arg-extreme op; ``pairwise``: the element-wise ``maximum``/``minimum``."""
    reduce_op, arg_op = ops_pair
    axis, keepdims, dim, keepdim = (keywords[k] for k in ("axis", "keepdims", "dim", "keepdim"))
    if keywords["other"] is not None:  # torch.max(input, other=...)
        return pairwise(x, keywords["other"])
    if isinstance(by_position, Tensor):  # torch.max(input, other)
        return pairwise(x, by_position)
    if isinstance(by_position, tuple | list):  # several axes have no PyTorch meaning: NumPy's
        axis = pick("axis", axis, "positional axes", tuple(by_position))
        keepdims = pick("keepdims", keepdims, "positional keepdims", keepdim_by_position)
        return _extremum(reduce_op, name, x, axis, keepdims, dim, keepdim)
    # PyTorch's positional max(x, dim, keepdim) is its max(x, dim=dim, keepdim=keepdim)
    dim = pick("positional dim", by_position, "dim", dim)
    keepdim = pick("positional keepdim", keepdim_by_position, "keepdim", keepdim)
    if dim is not None and not isinstance(dim, Tensor):
        pick("axis", axis, "dim", dim)  # refuses two different axes
        return _extremum_with_indices(arg_op, name, x, dim, keepdims, keepdim)
    return _extremum(reduce_op, name, x, axis, keepdims, dim, keepdim)


def max(  # noqa: A001
    x,
    dim_or_other=None,
    keepdim_by_position=None,
    /,
    *,
    axis=None,
    keepdims=None,
    dim=None,
    keepdim=None,
    other=None,
):
    """The largest value over ``axis`` (values only, as ``numpy.max``/``torch.amax``).

    The gradient is split evenly among tied maxima: each of k equal largest elements receives
    1/k of it (PyTorch's ``amax`` rule). An empty reduction raises a ShapeError: the maximum
    of nothing is undefined.

    PyTorch's forms: ``max(x, 1)``, ``x.max(1, True)`` and ``max(x, dim=1, keepdim=True)``
    return ``ValuesIndices(values, indices)``, whose gradient goes to the first largest element
    only, as ``torch.max(x, 1)``; ``max(a, b)`` with a tensor ``b`` is ``maximum(a, b)``. Only
    the keyword ``axis=`` (an int, a tuple, or None) is NumPy's axis and gives values only, as
    does a positional tuple of axes.

    x: (...) -> values shaped as x without the reduced axes (kept as size 1 with ``keepdims``).
    """
    keywords = {"axis": axis, "keepdims": keepdims, "dim": dim, "keepdim": keepdim, "other": other}
    pair = (ops.MAX, ops.ARGMAX)
    return _max_or_min("max", pair, maximum, x, dim_or_other, keepdim_by_position, keywords)


def min(  # noqa: A001
    x,
    dim_or_other=None,
    keepdim_by_position=None,
    /,
    *,
    axis=None,
    keepdims=None,
    dim=None,
    keepdim=None,
    other=None,
):
    """The smallest value over ``axis``; see ``max`` for ties, empty tensors and PyTorch's
    ``min(x, 1)`` / ``min(x, dim=1)`` -> ``(values, indices)`` and ``min(a, b)`` forms."""
    keywords = {"axis": axis, "keepdims": keepdims, "dim": dim, "keepdim": keepdim, "other": other}
    pair = (ops.MIN, ops.ARGMIN)
    return _max_or_min("min", pair, minimum, x, dim_or_other, keepdim_by_position, keywords)


def amax(x, axis=None, keepdims=None, *, dim=None, keepdim=None):
    """Same as ``max``: values only, gradient split evenly among ties.

    x: (...) -> the shape of x without the reduced axes (kept as size 1 with ``keepdims``).
    """
    return _extremum(ops.MAX, "amax", x, axis, keepdims, dim, keepdim)


def amin(x, axis=None, keepdims=None, *, dim=None, keepdim=None):
    """Same as ``min``: values only, gradient split evenly among ties.

    x: (...) -> the shape of x without the reduced axes (kept as size 1 with ``keepdims``).
    """
    return _extremum(ops.MIN, "amin", x, axis, keepdims, dim, keepdim)


def aminmax(x, *, dim: int | None = None, keepdim: bool = False) -> MinMax:
    """``MinMax(min, max)`` over ``dim`` (one int, or None for every element) in one call, as
    ``torch.aminmax``; the gradient of each is split evenly among ties, as ``amin``/``amax``.

    x: (...) -> two tensors shaped as x without ``dim`` (kept as size 1 with ``keepdim``).
    """
    if dim is not None and (isinstance(dim, bool) or not isinstance(dim, Integral)):
        raise ShapeError(
            f"[aminmax] reduces over one dimension or all of them, got dim={dim!r}",
            help="pass one int, or use amin/amax to reduce several axes",
        )
    reduced = "every element" if dim is None else f"dimension {dim}"
    if x.ndim and (
        x.numel() == 0 if dim is None else x.shape[normalize_axis(dim, x.ndim, "aminmax")] == 0
    ):
        raise ShapeError(
            f"[aminmax] cannot reduce {reduced} of an empty tensor shaped {tuple(x.shape)}: the "
            "minimum and maximum of nothing are undefined",
            help="check the size first, or reduce over a non-empty dimension",
        )
    return MinMax(
        _extremum(ops.MIN, "aminmax", x, None, keepdim, dim, None),
        _extremum(ops.MAX, "aminmax", x, None, keepdim, dim, None),
    )


def _arg_extremum(op, x, axis, keepdims, dim, keepdim):
    chosen = pick("axis", axis, "dim", dim)
    if chosen is not None and not isinstance(chosen, int):
        raise ShapeError(
            f"[{op.name}] takes one axis or None, got {chosen!r}",
            help="pass a single int, or axis=None for the index into the flattened tensor",
        )
    if chosen is not None and x.ndim == 0:  # PyTorch: axis 0 or -1 of a 0-d tensor
        check_scalar_axis(chosen, op.name)
        chosen = None
    elif chosen is not None:
        chosen = normalize_axis(chosen, x.ndim, op.name)
    return apply(op, x, axis=chosen, keepdims=_keep(keepdims, keepdim))


def argmax(x, axis=None, keepdims=None, *, dim=None, keepdim=None):
    """int64 index of the largest value along ``axis`` (the first one on ties); with
    ``axis=None`` the index into the flattened tensor. No gradient.

    x: (...) -> the shape of x without ``axis`` (kept as size 1 with ``keepdims``); with
    ``axis=None`` a 0-d tensor (all dimensions size 1 with ``keepdims``).
    """
    return _arg_extremum(ops.ARGMAX, x, axis, keepdims, dim, keepdim)


def argmin(x, axis=None, keepdims=None, *, dim=None, keepdim=None):
    """int64 index of the smallest value along ``axis``; see ``argmax``.

    x: (...) -> the shape of x without ``axis`` (kept as size 1 with ``keepdims``); with
    ``axis=None`` a 0-d tensor (all dimensions size 1 with ``keepdims``).
    """
    return _arg_extremum(ops.ARGMIN, x, axis, keepdims, dim, keepdim)


def prod(x, axis=None, keepdims=None, *, dim=None, keepdim=None, dtype=None):
    """Product over ``axis``; 1 when empty. Gradients (first and second) are exact even when
    ``x`` holds zeros. ``dtype``: x is converted to it first.

    x: (...) -> the shape of x without the reduced axes (kept as size 1 with ``keepdims``).
    """
    x = _converted(x, dtype)
    axes = _axes(x, axis, dim, "prod")
    return apply(ops.PROD, x, axes=axes, keepdims=_keep(keepdims, keepdim))


def logsumexp(x, axis=None, keepdims=None, *, dim=None, keepdim=None):
    """``log(sum(exp(x)))`` over ``axis``, computed stably (shifted by the maximum); -inf when
    empty. Its gradient is the softmax of ``x`` over the same axes.

    x: (...) -> the shape of x without the reduced axes (kept as size 1 with ``keepdims``).
    """
    axes = _axes(x, axis, dim, "logsumexp")
    return apply(ops.LOGSUMEXP, x, axes=axes, keepdims=_keep(keepdims, keepdim))


def _scan(op, x, axis, dim, exclusive: bool, reverse: bool):
    chosen = pick("axis", axis, "dim", dim)
    if chosen is None:  # NumPy: scan the flattened tensor
        x = x.reshape(-1)
        chosen = 0
    elif not isinstance(chosen, int):
        raise ShapeError(
            f"[{op.name}] scans along one axis, got {chosen!r}",
            help="pass a single int, or axis=None to scan the flattened tensor",
        )
    if x.ndim == 0:  # PyTorch: a 0-d tensor scans as itself, along axis 0 or -1
        check_scalar_axis(chosen, op.name)
        return apply(op, x.reshape(1), axis=0, exclusive=exclusive, reverse=reverse).reshape(())
    chosen = normalize_axis(chosen, x.ndim, op.name)
    return apply(op, x, axis=chosen, exclusive=bool(exclusive), reverse=bool(reverse))


def cumsum(x, axis=None, *, dim=None, exclusive: bool = False, reverse: bool = False, dtype=None):
    """Cumulative sum along ``axis`` (None: the flattened tensor, as NumPy); ``dtype``: x is
    converted to it first.

    ``exclusive=True`` leaves out each element itself (the first output is 0), ``reverse=True``
    accumulates from the end (both as ONNX's CumSum). The gradient is the reversed cumsum.

    x: (...) -> the same shape; with ``axis=None`` the flattened (x.numel(),).
    """
    x = _converted(x, dtype)
    return _scan(ops.CUMSUM, x, axis, dim, exclusive, reverse)


def cumprod(x, axis=None, *, dim=None, exclusive: bool = False, reverse: bool = False, dtype=None):
    """Cumulative product along ``axis``, with ``exclusive``/``reverse``/``dtype`` as in
    ``cumsum``. The gradient is exact for inputs with zeros.

    x: (...) -> the same shape; with ``axis=None`` the flattened (x.numel(),).
    """
    x = _converted(x, dtype)
    return _scan(ops.CUMPROD, x, axis, dim, exclusive, reverse)


def all(x, axis=None, keepdims=None, *, dim=None, keepdim=None):  # noqa: A001 - NumPy's name
    """Whether every element over ``axis`` is non-zero (bool; True when empty).

    x: (...) -> the shape of x without the reduced axes (kept as size 1 with ``keepdims``).
    """
    axes = _axes(x, axis, dim, "all")
    return apply(ops.ALL, x, axes=axes, keepdims=_keep(keepdims, keepdim))


def any(x, axis=None, keepdims=None, *, dim=None, keepdim=None):  # noqa: A001 - NumPy's name
    """Whether some element over ``axis`` is non-zero (bool; False when empty).

    x: (...) -> the shape of x without the reduced axes (kept as size 1 with ``keepdims``).
    """
    axes = _axes(x, axis, dim, "any")
    return apply(ops.ANY, x, axes=axes, keepdims=_keep(keepdims, keepdim))


def count_nonzero(x, axis=None, keepdims=None, *, dim=None, keepdim=None):
    """The int64 number of non-zero elements over ``axis``.

    x: (...) -> the shape of x without the reduced axes (kept as size 1 with ``keepdims``).
    """
    axes = _axes(x, axis, dim, "count_nonzero")
    return apply(ops.COUNT_NONZERO, x, axes=axes, keepdims=_keep(keepdims, keepdim))


__all__ = ["ValuesIndices", "MinMax", "sum", "sum_to", "mean", "var", "std", "max", "min", "amax", "amin",
           "argmax", "argmin", "prod", "logsumexp", "cumsum", "cumprod", "all", "any",
           "count_nonzero", "aminmax"]  # fmt: skip

TENSOR_METHODS = {
    "sum": sum, "sum_to": sum_to, "sum_to_size": sum_to_size, "mean": mean, "var": var, "std": std,
    "max": max, "min": min, "amax": amax, "amin": amin, "argmax": argmax, "argmin": argmin,
    "prod": prod, "logsumexp": logsumexp, "cumsum": cumsum, "cumprod": cumprod,
    "all": all, "any": any, "count_nonzero": count_nonzero, "aminmax": aminmax,
}  # fmt: skip

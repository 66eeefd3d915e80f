"""Statistics, as PyTorch spells them: order statistics (``median``, ``quantile`` and their
NaN-ignoring forms), ``nansum``/``nanmean``, ``var_mean``/``std_mean``, running scans
(``logcumsumexp``, ``cummax``, ``cummin``), distances (``cdist``, ``dist``) and counts
(``histc``, ``bincount``).

The differentiable ones are composed of recorded ops, so their gradients and frozen graphs come
from those: an order statistic gathers the input at positions read off a sort, so its gradient
reaches the chosen element; a running extreme gathers it at positions found by a doubling scan.
Counts are computed with the array library and carry no gradient.
"""

from __future__ import annotations

import math
from numbers import Integral, Real

import numpy as np

from ..autograd.dispatch import apply
from ..autograd.mode import no_grad
from ..autograd.tensor import Tensor
from ..backend.device import array_namespace
from ..errors import ArgumentError, DTypeError, ShapeError
from ..ops import sort as sort_ops
from ..ops.abstract import SymbolicSizeError
from ._common import check_scalar_axis, normalize_axis
from .creation import arange, astype, full
from .elementwise import abs as absolute
from .elementwise import ceil, clamp, floor, isnan, maximum, minimum, sqrt, where
from .elementwise import round as round_half_to_even
from .index import masked_fill, zeros_index_add
from .linalg import matmul
from .matrix_norms import vector_norm
from .positions import computed_from
from .reduce import ValuesIndices, amax, logsumexp, mean, std, var
from .reduce import sum as total
from .shape import concatenate, movedim, stack
from .sorting import argsort, sort

_INT64 = np.dtype(np.int64)


def _is_float(x: Tensor) -> bool:
    return x.dtype.kind == "f"


def _require_float(x: Tensor, op: str, name: str = "input") -> None:
    if not _is_float(x):
        raise DTypeError(
            f"[{op}] {name} must have a floating-point dtype, got {x.dtype}",
            help=f"convert it first: {name}.double() (or .float())",
        )


def _one_axis(x: Tensor, dim, op: str) -> int:
    if isinstance(dim, bool) or not isinstance(dim, Integral):
        raise ShapeError(f"[{op}] works along one dimension, got dim={dim!r}", help="pass one int")
    if x.ndim == 0:
        check_scalar_axis(int(dim), op)
        return 0
    return normalize_axis(int(dim), x.ndim, op)


def _gather(x: Tensor, index: Tensor, axis: int) -> Tensor:
    """``x`` at a tensor of positions along ``axis`` (PyTorch's gather): differentiable in
    ``x``, and a frozen graph recomputes the positions."""
    return apply(sort_ops.GATHER_ELEMENTS, x, index, axis=axis)


# ----- median ---------------------------------------------------------------------------------


def _median_along(x: Tensor, axis: int, ignore_nan: bool, op: str) -> ValuesIndices:
    """The lower median along ``axis`` of x (..., n, ...), n >= 1: values and int64 indices
    shaped (..., 1, ...), the values gathered so that the gradient reaches that one element."""
    extent = x.shape[axis]
    if extent == 0:
        raise ShapeError(
            f"[{op}] cannot reduce dimension {axis} of size 0 of a tensor shaped "
            f"{tuple(x.shape)}: the median of nothing is undefined",
            help="check the input is not empty, or reduce a non-empty dimension",
        )
    order = argsort(x, axis)  # stable, NaN last: ties keep their input order, as PyTorch's
    present = total(~isnan(x), axis=axis, keepdims=True)  # the values that are not NaN
    if ignore_nan:  # the lower median of those; position 0 (a NaN) where there are none
        position = clamp((present - 1) // 2, 0)
    else:  # the lower median, or where a NaN is present the first NaN: NaN propagates
        position = where(present < extent, present, (extent - 1) // 2)
    indices = _gather(order, position, axis)
    return ValuesIndices(_gather(x, indices, axis), indices)


def _median_of_all(x: Tensor, ignore_nan: bool, op: str) -> Tensor:
    """The lower median of every element (0-d). PyTorch shares this one's gradient evenly among
    the elements equal to it (the NaN elements, for NaN), so the result is the median plus the
    mean offset of those elements from it: zero in value, and it carries that gradient."""
    flat = x.reshape(-1)
    if flat.shape[0] == 0:
        if not _is_float(x):
            raise ShapeError(f"[{op}] the median of an empty {x.dtype} tensor is undefined")
        return full((), math.nan, dtype=x.dtype)
    with no_grad():
        chosen = _median_along(flat, 0, ignore_nan, op).values  # (1,)
    if not _is_float(x):
        return chosen.reshape(())
    ties = (flat == chosen) | (isnan(flat) & isnan(chosen))
    offsets = where(ties, flat - chosen, 0.0)
    return (chosen + total(offsets, axis=0, keepdims=True) / total(ties)).reshape(())


def _median(x: Tensor, dim, keepdim: bool, ignore_nan: bool, op: str):
    if dim is None:
        if keepdim:
            raise ArgumentError(
                f"[{op}] keepdim needs a dim: without one the median is of every element",
                help=f"pass dim, e.g. {op}(x, -1, keepdim=True)",
            )
        return _median_of_all(x, ignore_nan, op)
    axis = _one_axis(x, dim, op)
    if x.ndim == 0:  # a 0-d tensor is its own median, at index 0
        picked = _median_along(x.reshape(1), 0, ignore_nan, op)
        return ValuesIndices(picked.values.reshape(()), picked.indices.reshape(()))
    picked = _median_along(x, axis, ignore_nan, op)
    if keepdim:
        return picked
    return ValuesIndices(picked.values.squeeze(axis), picked.indices.squeeze(axis))


def median(input: Tensor, dim: int | None = None, keepdim: bool = False):  # noqa: A002
    """The lower median (of an even count, the smaller of the middle two), as ``torch.median``;
    NaN wherever a NaN takes part.

    Without ``dim``: of every element, a 0-d tensor (NaN when empty); its gradient is shared
    evenly among the elements equal to it. With ``dim``: ``ValuesIndices(values, indices)``
    x (..., n, ...) -> (..., ...) (size 1 kept with ``keepdim``), indices int64; the gradient
    goes to the element at ``indices``.
    """
    return _median(input, dim, keepdim, ignore_nan=False, op="median")


def nanmedian(input: Tensor, dim: int | None = None, keepdim: bool = False):  # noqa: A002
    """``median`` of the elements that are not NaN (NaN where all are), as ``torch.nanmedian``;
    same shapes, indices and gradients."""
    return _median(input, dim, keepdim, ignore_nan=True, op="nanmedian")


# ----- quantile -------------------------------------------------------------------------------

_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile_levels(x: Tensor, q, op: str) -> Tensor:
    """``q`` as a tensor of x's dtype, checked: a number or a 0-d / 1-D tensor in [0, 1]."""
    if isinstance(q, Tensor):
        if q.ndim > 1:
            raise ShapeError(
                f"[{op}] q must be a number or a 1-D tensor, got shape {tuple(q.shape)}",
                help="flatten it: q.reshape(-1)",
            )
        if q.dtype != x.dtype:
            raise DTypeError(
                f"[{op}] q has dtype {q.dtype} but the input has {x.dtype}",
                help="convert q: q.to(input.dtype)",
            )
        levels = q
    elif isinstance(q, Real) and not isinstance(q, bool):
        levels = Tensor(array_namespace(x.array).asarray(q, dtype=x.dtype))
    else:
        raise TypeError(f"[{op}] q must be a number or a tensor, got {type(q).__name__}")
    values = levels.array
    if values.size and not bool(((values >= 0) & (values <= 1)).all()):
        raise ArgumentError(
            f"[{op}] q must be in [0, 1], got {values.tolist()}",
            help="quantiles are fractions: the median is q=0.5",
        )
    return levels


def _lerp(start: Tensor, end: Tensor, weight) -> Tensor:
    """PyTorch's lerp, which starts from the nearer end: ``start + w (end - start)`` for
    w < 0.5, else ``end - (end - start) (1 - w)`` (which differ with infinities)."""
    with np.errstate(invalid="ignore"):  # inf - inf between infinite values: NaN, as PyTorch's
        difference = end - start
        if isinstance(weight, float):
            return start + weight * difference if weight < 0.5 else end - difference * (1 - weight)
        return where(weight < 0.5, start + weight * difference, end - difference * (1 - weight))


def _quantile(op: str, x: Tensor, q, dim, keepdim: bool, interpolation: str, ignore_nan: bool):
    _require_float(x, op)
    if x.numel() == 0:
        raise ShapeError(f"[{op}] the input is empty: it has no quantiles")
    if interpolation not in _INTERPOLATIONS:
        raise ArgumentError(
            f"[{op}] interpolation must be one of {', '.join(_INTERPOLATIONS)}, got "
            f"{interpolation!r}"
        )
    levels = _quantile_levels(x, q, op)
    # the reduced values as rows (R, n), and the shape each quantile takes
    if dim is None:
        rows = x.reshape(1, -1)
        reduced_shape = (1,) * x.ndim if keepdim else ()
    else:
        axis = _one_axis(x, dim, op)
        moved = movedim(x, axis, -1) if x.ndim else x.reshape(1)
        reduced_shape = tuple(moved.shape[:-1])
        if keepdim and x.ndim:
            reduced_shape = reduced_shape[:axis] + (1,) + reduced_shape[axis:]
        rows = moved.reshape(-1, moved.shape[-1])
    ordered = sort(rows, -1).values  # NaN last
    extent = rows.shape[-1]
    levels_row = levels.reshape(1, -1)  # (1, Q)
    # ranks (R, Q): where each quantile falls in its sorted row
    if ignore_nan:  # among the values that are not NaN; rank 0 (a NaN) where there are none
        present = total(~isnan(ordered), axis=-1, keepdims=True).astype(x.dtype)
        ranks = levels_row * (present - 1)
        ranks = masked_fill(ranks, ranks < 0, 0)
    else:  # a row with a NaN (sorted last) takes its last value: NaN
        has_nan = isnan(ordered.narrow(-1, extent - 1, 1))
        ranks = masked_fill(levels_row * (extent - 1), has_nan, extent - 1)
    if interpolation == "lower":
        ranks = floor(ranks)
    elif interpolation == "higher":
        ranks = ceil(ranks)
    elif interpolation == "nearest":
        ranks = round_half_to_even(ranks)  # as torch.round
    below = ranks.astype(_INT64)
    values = _gather(ordered, below, -1)
    if interpolation in ("linear", "midpoint"):
        weights = 0.5 if interpolation == "midpoint" else ranks - below.astype(x.dtype)
        above = _gather(ordered, ceil(ranks).astype(_INT64), -1)
        values = _lerp(values, above, weights)
    count = levels_row.shape[1]
    out = movedim(values, -1, 0).reshape((count,) + reduced_shape)  # (Q, ...)
    return out.reshape(reduced_shape) if levels.ndim == 0 else out


def quantile(
    input: Tensor,  # noqa: A002 - PyTorch's name
    q,
    dim: int | None = None,
    keepdim: bool = False,
    *,
    interpolation: str = "linear",
) -> Tensor:
    """The ``q``-th quantiles of ``input`` along ``dim`` (None: of every element), as
    ``torch.quantile``; NaN where a NaN takes part.

    q: a number or a 1-D tensor (Q,) in [0, 1]. x (..., n, ...) -> (..., ...), with (Q, ...)
    in front for a tensor q (size 1 kept with ``keepdim``). Quantile q falls at rank
    ``q (n - 1)`` of the sorted values; between two of them ``interpolation`` takes ``linear``
    (interpolated), ``lower``, ``higher``, ``nearest`` (ties to even) or ``midpoint``. The
    gradient goes to the sorted values used (and to a tensor q, through the rank).
    """
    return _quantile("quantile", input, q, dim, keepdim, interpolation, ignore_nan=False)


def nanquantile(
    input: Tensor,  # noqa: A002 - PyTorch's name
    q,
    dim: int | None = None,
    keepdim: bool = False,
    *,
    interpolation: str = "linear",
) -> Tensor:
    """``quantile`` of the elements that are not NaN (NaN where all are), as
    ``torch.nanquantile``; same shapes and gradients."""
    return _quantile("nanquantile", input, q, dim, keepdim, interpolation, ignore_nan=True)


# ----- NaN-ignoring reductions, var_mean / std_mean ------------------------------------------


def nansum(input: Tensor, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:  # noqa: A002
    """The sum over ``dim`` (an int, a tuple, or None for all) counting NaN as zero; ``dtype``:
    the input is converted to it first. x (...) -> x without ``dim`` (size 1 with ``keepdim``).
    The gradient is 0 at the NaN elements."""
    x = input if dtype is None else astype(input, dtype)
    if _is_float(x):
        x = masked_fill(x, isnan(x), 0)
    return total(x, dim=dim, keepdim=keepdim)


def nanmean(input: Tensor, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:  # noqa: A002
    """The mean over ``dim`` of the elements that are not NaN (NaN where there are none): the
    ``nansum`` over their count. Floating-point input only; shapes as ``nansum``. Where every
    element is NaN the gradient is 0 (PyTorch's is NaN there)."""
    _require_float(input, "nanmean")
    summed = nansum(input, dim, keepdim, dtype=dtype)
    present = total(~isnan(input), dim=dim, keepdim=keepdim).astype(summed.dtype)
    # a count of 0 divides by 1 and is replaced, so no 0 / 0 reaches the value or the gradient
    return where(present > 0, summed / clamp(present, 1), math.nan)


def _spread_and_mean(spread, op: str, x: Tensor, dim, unbiased, keepdim, correction) -> tuple:
    if isinstance(dim, bool):  # PyTorch's var_mean(x, unbiased) overload
        if unbiased is not None:
            raise TypeError(f"[{op}] got unbiased twice ({dim!r} by position and {unbiased!r})")
        dim, unbiased = None, dim
    keepdim = bool(keepdim)
    spread_value = spread(x, dim, unbiased, keepdim, correction=correction)
    return spread_value, mean(x, dim, keepdim)


def var_mean(
    input: Tensor,  # noqa: A002 - PyTorch's name
    dim=None,
    unbiased: bool | None = None,
    keepdim: bool = False,
    *,
    correction=None,
) -> tuple:
    """``(var, mean)`` over ``dim`` (an int, a tuple, or None for all), as ``torch.var_mean``;
    ``correction`` (default 1) or ``unbiased`` as in ``var``. Each x (...) -> x without ``dim``
    (size 1 with ``keepdim``)."""
    return _spread_and_mean(var, "var_mean", input, dim, unbiased, keepdim, correction)


def std_mean(
    input: Tensor,  # noqa: A002 - PyTorch's name
    dim=None,
    unbiased: bool | None = None,
    keepdim: bool = False,
    *,
    correction=None,
) -> tuple:
    """``(std, mean)`` over ``dim``, as ``torch.std_mean``; arguments as ``var_mean``."""
    return _spread_and_mean(std, "std_mean", input, dim, unbiased, keepdim, correction)


# ----- running scans --------------------------------------------------------------------------


def _doubling_scan(x: Tensor, axis: int, combine, op: str) -> Tensor:
    """The inclusive scan of an associative ``combine`` along ``axis`` (Hillis and Steele):
    after the step of offset s, position i combines the up to 2s elements ending at i, so
    ceil(log2 n) steps of whole-tensor ops make the scan."""
    extent = x.shape[axis]
    if type(extent) is not int:  # a symbolic size while freezing: the step count would be fixed
        raise SymbolicSizeError(
            f"[{op}] the number of scan steps depends on the size along dim {axis}, which is "
            "symbolic",
            help="give that dimension a fixed size in the TensorSpec",
        )
    out = x
    offset = 1
    while offset < extent:
        combined = combine(
            out.narrow(axis, offset, extent - offset), out.narrow(axis, 0, extent - offset)
        )
        out = concatenate([out.narrow(axis, 0, offset), combined], axis)
        offset *= 2
    return out


def _log_add_exp(a: Tensor, b: Tensor) -> Tensor:
    """``log(exp(a) + exp(b))``, stable for any magnitudes and infinities (logsumexp)."""
    return logsumexp(stack([a, b]), axis=0)


def logcumsumexp(input: Tensor, dim: int) -> Tensor:  # noqa: A002 - PyTorch's name
    """``log(cumsum(exp(x)))`` along ``dim``, computed stably (each step adds in log space, so
    no exp overflows or underflows). Same shape as ``input``; floating-point only."""
    _require_float(input, "logcumsumexp")
    axis = _one_axis(input, dim, "logcumsumexp")
    if input.ndim == 0:
        return _doubling_scan(input.reshape(1), 0, _log_add_exp, "logcumsumexp").reshape(())
    return _doubling_scan(input, axis, _log_add_exp, "logcumsumexp")


def _running_extreme(x: Tensor, dim, pairwise, op: str) -> ValuesIndices:
    """Running maximum (``pairwise`` = maximum) or minimum along ``dim`` with PyTorch's
    indices: the last position where the running extreme was reached (a later tie wins), and
    from a NaN on, the last NaN. The values gather x there, so the gradient goes to it."""
    axis = _one_axis(x, dim, op)
    if x.ndim == 0:
        picked = _running_extreme(x.reshape(1), 0, pairwise, op)
        return ValuesIndices(picked.values.reshape(()), picked.indices.reshape(()))
    extent = x.shape[axis]
    with no_grad():
        running = _doubling_scan(x, axis, pairwise, op)  # NaN propagates
        reached = x == running
        if _is_float(x):
            reached = reached | isnan(x)
        shape = [1] * x.ndim
        shape[axis] = extent
        positions = arange(extent).reshape(shape)
        indices = _doubling_scan(where(reached, positions, 0), axis, maximum, op)
    return ValuesIndices(_gather(x, indices, axis), indices)


def cummax(input: Tensor, dim: int) -> ValuesIndices:  # noqa: A002 - PyTorch's name
    """``ValuesIndices`` of the running maximum along ``dim``, as ``torch.cummax``: values
    shaped like ``input`` and int64 indices of where each was reached (the last of ties; from a
    NaN on, NaN at the last NaN). The gradient goes to the element at each index."""
    return _running_extreme(input, dim, maximum, "cummax")


def cummin(input: Tensor, dim: int) -> ValuesIndices:  # noqa: A002 - PyTorch's name
    """``ValuesIndices`` of the running minimum along ``dim``, as ``torch.cummin``; see
    ``cummax``."""
    return _running_extreme(input, dim, minimum, "cummin")


# ----- distances ------------------------------------------------------------------------------

_CDIST_MODES = (
    "use_mm_for_euclid_dist_if_necessary",
    "use_mm_for_euclid_dist",
    "donot_use_mm_for_euclid_dist",
)


def _check_cdist(x1: Tensor, x2: Tensor, p, compute_mode: str) -> None:
    for name, x in (("x1", x1), ("x2", x2)):
        if x.ndim < 2:
            raise ShapeError(
                f"[cdist] {name} must have at least 2 dimensions (..., points, features), got "
                f"shape {tuple(x.shape)}",
                help=f"add a points axis: {name}.unsqueeze(0)",
            )
        _require_float(x, "cdist", name)
    if x1.dtype != x2.dtype:
        raise DTypeError(
            f"[cdist] x1 has dtype {x1.dtype} but x2 has {x2.dtype}",
            help="convert one of them: x2.to(x1.dtype)",
        )
    if x1.shape[-1] != x2.shape[-1]:
        raise ShapeError(
            f"[cdist] x1 {tuple(x1.shape)} and x2 {tuple(x2.shape)} must have the same number "
            f"of features (last dimension): {x1.shape[-1]} != {x2.shape[-1]}"
        )
    if isinstance(p, bool) or not isinstance(p, Real) or not p >= 0:
        raise ArgumentError(f"[cdist] p must be a number >= 0 (or inf), got {p!r}")
    if compute_mode not in _CDIST_MODES:
        raise ArgumentError(
            f"[cdist] {compute_mode!r} is not a compute_mode; use one of {', '.join(_CDIST_MODES)}"
        )


def _euclidean_by_matmul(x1: Tensor, x2: Tensor) -> Tensor:
    """``|a - b| = sqrt(|a|^2 + |b|^2 - 2 a.b)`` for every pair with one matmul. Rounding can
    leave the square slightly below 0: it reads as distance 0, whose gradient is taken as 0
    (as PyTorch's) rather than 1 / (2 sqrt(0))."""
    squared = (
        total(x1 * x1, axis=-1, keepdims=True)
        + total(x2 * x2, axis=-1, keepdims=True).mT
        - 2 * matmul(x1, x2.mT)
    )
    positive = squared > 0
    return where(positive, sqrt(where(positive, squared, 1.0)), 0.0)


def _largest_difference(difference: Tensor) -> Tensor:
    """max |d| over the last axis. PyTorch's cdist gives each tied largest |d| the whole
    gradient (a norm shares it), so the result is the maximum plus the offsets of the tied
    elements from it: zero in value, and they carry that gradient."""
    size = absolute(difference)
    with no_grad():
        largest = amax(size, axis=-1, keepdims=True)
    offsets = where(size == largest, size - largest, 0.0)
    return (largest + total(offsets, axis=-1, keepdims=True)).squeeze(-1)


def cdist(
    x1: Tensor,
    x2: Tensor,
    p: float = 2.0,
    compute_mode: str = "use_mm_for_euclid_dist_if_necessary",
) -> Tensor:
    """The p-norm distance between each row of ``x1`` and each row of ``x2``, as
    ``torch.cdist``: x1 (..., P, M), x2 (..., R, M) -> (..., P, R), the leading dimensions
    broadcast. ``p`` in [0, inf]: 0 counts differing features, inf takes the largest.

    For p = 2 the distances come from one matmul (``|a|^2 + |b|^2 - 2 a.b``) when
    ``compute_mode`` asks for it, by default when P or R exceeds 25, as PyTorch does; else from
    the differences. The gradient is 0 at distance 0, as PyTorch's.
    """
    _check_cdist(x1, x2, p, compute_mode)
    many_points = x1.shape[-2] > 25 or x2.shape[-2] > 25
    if p == 2 and (
        compute_mode == "use_mm_for_euclid_dist"
        or (compute_mode == "use_mm_for_euclid_dist_if_necessary" and many_points)
    ):
        return _euclidean_by_matmul(x1, x2)
    difference = x1.unsqueeze(-2) - x2.unsqueeze(-3)  # (..., P, R, M)
    if p == math.inf and difference.shape[-1] > 0:
        return _largest_difference(difference)
    if p == math.inf:  # no features: every distance is 0
        return total(absolute(difference), axis=-1)
    return vector_norm(difference, p, dim=-1)


def dist(input: Tensor, other: Tensor, p: float = 2) -> Tensor:  # noqa: A002 - PyTorch's name
    """The p-norm of ``input - other`` (broadcast together) over every element: a 0-d tensor,
    as ``torch.dist``. Gradients as ``vector_norm``'s (0 at distance 0)."""
    _require_float(input, "dist")
    if isinstance(other, Tensor):
        _require_float(other, "dist", "other")
    return vector_norm(input - other, p)


# ----- counts ---------------------------------------------------------------------------------


def histc(input: Tensor, bins: int = 100, min: float = 0, max: float = 0) -> Tensor:  # noqa: A002
    """The histogram of ``input``'s elements in ``bins`` equal bins over [min, max] (both in
    the input's dtype): a (bins,) tensor of counts in that dtype, as ``torch.histc``.

    With ``min == max`` the range is the data's smallest and largest element (widened by 1 on
    each side if those are equal). Elements outside the range and NaN are left out; the last
    bin includes ``max``. No gradient.
    """
    _require_float(input, "histc")
    if isinstance(bins, bool) or not isinstance(bins, Integral) or bins <= 0:
        raise ArgumentError(f"[histc] bins must be a positive int, got {bins!r}")
    array = input.array
    xp = array_namespace(array)
    values = array.reshape(-1)
    scalar = array.dtype.type
    low, high = scalar(min), scalar(max)
    if low == high and values.size:
        low, high = values.min(), values.max()
    if low == high:
        low, high = low - 1, high + 1
    if not (math.isfinite(float(low)) and math.isfinite(float(high))):
        raise ArgumentError(
            f"[histc] the range [{float(low)}, {float(high)}] is not finite",
            help="pass finite min and max, or remove NaN and inf from the input",
        )
    if not low < high:
        raise ArgumentError(f"[histc] max ({float(high)}) must be larger than min ({float(low)})")
    inside = values[(values >= low) & (values <= high)]
    # PyTorch's arithmetic, in the input's dtype: the bin of the upper edge is the last one
    position = ((inside - low) * bins / (high - low)).astype(_INT64)
    position = xp.minimum(position, bins - 1)
    counts = xp.bincount(position, minlength=bins).astype(array.dtype)
    return computed_from(counts, array)


def bincount(input: Tensor, weights: Tensor | None = None, minlength: int = 0) -> Tensor:  # noqa: A002
    """How often each value 0, 1, ..., occurs in the 1-D non-negative integers ``input``: a
    tensor (max(input) + 1,), at least ``minlength`` long, int64; with ``weights`` (shaped like
    ``input``) their sum per value instead, in the weights' float dtype (float64 for integer
    weights). The weighted counts are differentiable in ``weights``."""
    array = input.array
    if array.ndim != 1 or array.dtype.kind not in "iu":
        raise DTypeError(
            f"[bincount] input must be a 1-D tensor of integers, got shape "
            f"{tuple(array.shape)} and dtype {array.dtype}",
            help="flatten it (x.reshape(-1)) and convert it with .long()",
        )
    if array.size and int(array.min()) < 0:
        raise ArgumentError(
            f"[bincount] input must be non-negative, got {int(array.min())}",
            help="shift the values (x - x.min()) so that they start at 0",
        )
    if isinstance(minlength, bool) or not isinstance(minlength, Integral) or minlength < 0:
        raise ArgumentError(f"[bincount] minlength must be an int >= 0, got {minlength!r}")
    length = max(int(array.max()) + 1 if array.size else 0, int(minlength))
    if weights is None:
        counts = array_namespace(array).bincount(array, minlength=length).astype(_INT64)
        return computed_from(counts, array)
    if tuple(weights.shape) != tuple(array.shape):
        raise ShapeError(
            f"[bincount] weights shaped {tuple(weights.shape)} must match input shaped "
            f"{tuple(array.shape)}"
        )
    if not _is_float(weights):
        weights = astype(weights, np.float64)
    return zeros_index_add(weights, (length,), (array,))


__all__ = ["median", "nanmedian", "quantile", "nanquantile", "nansum", "nanmean", "var_mean",
           "std_mean", "logcumsumexp", "cummax", "cummin", "cdist", "dist", "histc",
           "bincount"]  # fmt: skip

TENSOR_METHODS = {
    "median": median, "nanmedian": nanmedian, "quantile": quantile, "nanquantile": nanquantile,
    "nansum": nansum, "nanmean": nanmean, "logcumsumexp": logcumsumexp, "cummax": cummax,
    "cummin": cummin, "dist": dist, "histc": histc, "bincount": bincount,
}  # fmt: skip

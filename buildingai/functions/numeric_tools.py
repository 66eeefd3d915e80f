"""Numeric tools PyTorch lists beside its reductions, with PyTorch's names: covariance and
correlation (``cov``, ``corrcoef``), trapezoid-rule integrals (``trapezoid`` / ``trapz``,
``cumulative_trapezoid``), ``vander``, ``mode``, ``msort``, ``ger`` and ``combinations``.

Each is composed of recorded ops, so gradients of any order, frozen graphs and every device come
from those. ``mode`` reads its positions off a stable sort with tensor ops as well; the index
lists of ``combinations`` depend only on the input's length and are built with NumPy.
"""

from __future__ import annotations

import itertools
import math
import warnings
from numbers import Integral, Real

import numpy as np

from ..autograd.dispatch import apply
from ..autograd.mode import no_grad
from ..autograd.tensor import Tensor
from ..errors import ArgumentError, DTypeError, ShapeError
from ..ops import sort as sort_ops
from ..ops.abstract import SymbolicSizeError
from ..ops.checks import REQUIRE
from ..ops.promotion import is_float_dtype, promote_types
from ._common import check_scalar_axis, normalize_axis
from .arrangement import diagonal, diff
from .creation import arange, astype, ones_like, zeros
from .elementwise import clamp, sqrt, where
from .index import index_select
from .linalg import matmul, outer
from .reduce import ValuesIndices, argmax, cumprod, cumsum
from .reduce import sum as total
from .shape import broadcast_shapes, concatenate, flip
from .sorting import argsort, sort
from .statistics import cummax

_INT64 = np.dtype(np.int64)


def _integer(value, op: str, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, Integral):
        raise TypeError(f"[{op}] {name} must be an int, got {type(value).__name__} {value!r}")
    return int(value)


def _axis(x: Tensor, dim, op: str) -> int:
    """``dim`` of a tensor with at least one dimension, as a non-negative int."""
    dim = _integer(dim, op, "dim")
    if x.ndim == 0:
        raise ShapeError(
            f"[{op}] needs a tensor with at least 1 dimension, got a 0-d tensor",
            help="reshape it to one sample first: y.reshape(1)",
        )
    return normalize_axis(dim, x.ndim, op)


def _gather(x: Tensor, index: Tensor, axis: int) -> Tensor:
    """``x`` at a tensor of positions along ``axis``: differentiable in ``x``, and a frozen
    graph recomputes the positions."""
    return apply(sort_ops.GATHER_ELEMENTS, x, index, axis=axis)


def _along(x: Tensor, axis: int, part: slice) -> Tensor:
    return x[(slice(None),) * axis + (part,)]


# ----- covariance and correlation -------------------------------------------------------------


def _check_variables(x: Tensor, op: str) -> None:
    if x.ndim > 2:
        raise ShapeError(
            f"[{op}] expects at most 2 dimensions (variables, observations), got shape "
            f"{tuple(x.shape)}",
            help="flatten the variables first: x.reshape(-1, x.shape[-1])",
        )


def _non_negative(values):
    return values >= 0


def _non_zero(values):
    return values != 0


def _require(values: Tensor, name: str, condition, wanted: str, fix: str) -> None:
    """Refuse ``values`` unless ``condition`` holds for each; an op, so that a frozen graph
    checks the values of every run, not only those it was traced with."""
    apply(REQUIRE, values, family="cov", name=name, condition=condition, wanted=wanted, fix=fix)


def _observation_weights(fweights, aweights, observations: int) -> Tensor | None:
    """The product of ``fweights`` and ``aweights`` (N,), checked as PyTorch checks them; None
    without weights. The sign checks are ops, so a frozen graph makes them on every run."""
    weights = None
    for name, given in (("fweights", fweights), ("aweights", aweights)):
        if given is None:
            continue
        if not isinstance(given, Tensor):
            raise TypeError(f"[cov] {name} must be a tensor, got {type(given).__name__}")
        if given.ndim > 1:
            raise ShapeError(
                f"[cov] {name} must have at most 1 dimension, got shape {tuple(given.shape)}",
                help=f"pass one weight per observation: {name}.reshape(-1)",
            )
        wanted_kind = "integral" if name == "fweights" else "floating-point"
        fits = given.dtype.kind in "iu" if name == "fweights" else is_float_dtype(given.dtype)
        if not fits:
            fix = ".long()" if name == "fweights" else ".double() (or .float())"
            raise DTypeError(
                f"[cov] {name} must have an {wanted_kind} dtype, got {given.dtype}",
                help=f"convert it first: {name}{fix}",
            )
        if given.numel() != observations:
            raise ShapeError(
                f"[cov] {name} has {given.numel()} elements but the input has {observations} "
                "observations (columns)",
                help="pass one weight per observation (column) of the input",
            )
        _require(given, name, _non_negative, "non-negative", f"make every one of {name} >= 0")
        given = given.reshape(observations)
        weights = given if weights is None else weights * given
    return weights


def _covariance(rows: Tensor, weights, aweights, correction: int) -> Tensor:
    """The (V, V) covariance of rows (V, N), with the observation weights (N,) or None."""
    observations = rows.shape[1]
    if weights is None:
        mean = total(rows, axis=1) / observations
        centered = rows - mean.unsqueeze(1)
        degrees = observations - correction
        if degrees <= 0:
            warnings.warn(
                f"[cov] degrees of freedom is <= 0 ({observations} observations, correction "
                f"{correction}): the result is inf or NaN. Pass a correction smaller than the "
                "number of observations.",
                UserWarning,
                stacklevel=3,
            )
            degrees = 0
        return matmul(centered, centered.mT) / degrees
    weight_sum = total(weights)
    fix = "give at least one observation a positive weight"
    _require(weight_sum, "the sum of the weights", _non_zero, "non-zero", fix)
    mean = total(rows * weights, axis=1) / weight_sum
    centered = rows - mean.unsqueeze(1)
    degrees = weight_sum
    if correction != 0 and aweights is not None:
        degrees = weight_sum - correction * total(weights * aweights.reshape(-1)) / weight_sum
    elif correction != 0:
        degrees = weight_sum - correction
    degrees = where(degrees > 0, degrees, 0)  # as PyTorch: divide by 0, not by a negative
    return matmul(centered, (centered * weights).mT) / degrees


def cov(
    input: Tensor,  # noqa: A002 - PyTorch's name
    *,
    correction: int = 1,
    fweights: Tensor | None = None,
    aweights: Tensor | None = None,
) -> Tensor:
    """The covariance matrix of the variables in the rows of ``input``, each observed in its
    columns, as ``torch.cov``: (V, N) -> (V, V); a 1-D (N,) or 0-d input is one variable and
    gives a 0-d tensor (so does a (1, N) input: PyTorch squeezes the result).

    ``correction``: the degrees of freedom subtracted (1: Bessel's, 0: the maximum-likelihood
    estimate); at or below 0 degrees left the division is by 0 (inf or NaN), with a warning when
    no weights are given. ``fweights`` (N,) integer counts and ``aweights`` (N,) floating
    importances weight the observations; their product weights the mean and the sum, and with
    ``aweights`` the correction is ``correction * sum(w * aweights) / sum(w)``. Integer inputs
    give the default float dtype. Differentiable in ``input`` and ``aweights``; a frozen graph
    needs a fixed N, and checks the weights' signs and sum on every run.
    """
    _check_variables(input, "cov")
    if input.dtype == np.bool_:
        raise DTypeError("[cov] a bool input has no covariance", help="convert it: x.float()")
    correction = _integer(correction, "cov", "correction")
    rows = input if input.ndim == 2 else input.reshape(1, -1)  # (V, N)
    observations = rows.shape[1]
    weights = _observation_weights(fweights, aweights, observations)
    # no observations, or no degrees of freedom left: NaN and inf are the answer
    with np.errstate(divide="ignore", invalid="ignore"):
        out = _covariance(rows, weights, aweights, correction)
    return out.reshape(()) if out.shape[0] == 1 else out


def corrcoef(input: Tensor) -> Tensor:  # noqa: A002 - PyTorch's name
    """Pearson's correlation coefficients of the variables in the rows of ``input``, as
    ``torch.corrcoef``: the covariance divided by the standard deviations of both variables,
    clipped to [-1, 1]. (V, N) -> (V, V); a 1-D or 0-d input (or (1, N)) -> 0-d: 1, or NaN for
    a constant variable. A constant variable's row and column are NaN."""
    _check_variables(input, "corrcoef")
    covariance = cov(input)
    with np.errstate(divide="ignore", invalid="ignore"):  # a constant variable gives NaN
        if covariance.ndim == 0:
            return covariance / covariance
        deviations = sqrt(diagonal(covariance))
        correlation = covariance / deviations.unsqueeze(1) / deviations.unsqueeze(0)
    return clamp(correlation, -1, 1)  # rounding can leave |r| a little above 1


# ----- trapezoid-rule integrals ---------------------------------------------------------------


def _spacing(dx, op: str, allow_bool: bool) -> float:
    """A constant sample spacing as a float: a real number, or a 0-d real tensor read as one
    (as PyTorch reads it: no gradient reaches it, and a frozen graph cannot read it)."""
    if isinstance(dx, Tensor) and dx.ndim == 0 and dx.dtype.kind in "biuf":
        dx = dx.item()
    if (isinstance(dx, bool) and not allow_bool) or not isinstance(dx, Real):
        raise TypeError(
            f"[{op}] dx must be a real number (the spacing of the samples), got "
            f"{type(dx).__name__} {dx!r}"
        )
    return float(dx)


def _spacings(y: Tensor, x, axis: int, op: str) -> Tensor:
    """The differences of the sample positions ``x`` along ``axis``, shaped to broadcast with
    the (..., n - 1, ...) pairs of ``y``: a 1-D x lies along ``axis``, a lower-rank x is padded
    with leading dimensions, as PyTorch's (which then broadcasts the two)."""
    if not isinstance(x, Tensor):
        raise TypeError(
            f"[{op}] x must be a tensor of sample positions, got {type(x).__name__}: pass "
            "buildingai.tensor(x), or dx=... for evenly spaced samples"
        )
    if x.dtype == np.bool_:
        raise DTypeError(f"[{op}] x is bool; sample positions are numbers", help="x.float()")
    if x.ndim == 1:
        if x.shape[0] != y.shape[axis]:
            raise ShapeError(
                f"[{op}] x has {x.shape[0]} sample positions but y has {y.shape[axis]} samples "
                f"along dim {axis} (y shaped {tuple(y.shape)})",
                help="pass one x value per sample, or the dim the samples lie along",
            )
        shape = [1] * y.ndim
        shape[axis] = x.shape[0]
        x = x.reshape(shape)
    elif x.ndim < y.ndim:
        x = x.reshape((1,) * (y.ndim - x.ndim) + tuple(x.shape))
    spacings = diff(x, dim=axis)
    pairs = list(y.shape)
    pairs[axis] = max(pairs[axis] - 1, 0)
    try:
        broadcast_shapes(tuple(spacings.shape), tuple(pairs))
    except ShapeError as error:
        raise ShapeError(
            f"[{op}] x shaped {tuple(x.shape)} does not fit y shaped {tuple(y.shape)}: the "
            f"spacings of x along dim {axis} {tuple(spacings.shape)} do not broadcast with the "
            f"{tuple(pairs)} pairs of samples",
            help="pass x as a 1-D tensor of y.shape[dim] positions, or shaped like y",
        ) from error
    return spacings


def _check_samples(y: Tensor, op: str) -> None:
    if y.dtype == np.bool_:
        raise DTypeError(f"[{op}] y is bool; the samples must be numbers", help="y.float()")


def trapezoid(y: Tensor, x: Tensor | None = None, *, dx=None, dim: int = -1) -> Tensor:
    """The integral of the samples ``y`` along ``dim`` by the trapezoid rule, as
    ``torch.trapezoid``: (..., n, ...) -> (..., ...). The samples lie at the positions ``x``
    (a tensor: 1-D of n, or broadcasting with y) or ``dx`` apart (default 1); give one of the
    two. Fewer than two samples integrate to 0 (in y's dtype for n = 0). Integer samples give
    the default float dtype."""
    return _trapezoid("trapezoid", y, x, dx, dim, allow_bool=False)


def trapz(y: Tensor, x: Tensor | None = None, *, dx=None, dim: int = -1) -> Tensor:
    """``trapezoid``, by its older name ``torch.trapz``; (..., n, ...) -> (..., ...)."""
    return _trapezoid("trapz", y, x, dx, dim, allow_bool=True)


def _trapezoid(op: str, y: Tensor, x, dx, dim, allow_bool: bool) -> Tensor:
    if x is not None and dx is not None:
        raise TypeError(f"[{op}] takes the sample positions x or their spacing dx, not both")
    axis = _axis(y, dim, op)
    if y.shape[axis] == 0:  # nothing to integrate: 0, as NumPy and PyTorch
        return zeros(y.shape[:axis] + y.shape[axis + 1 :], dtype=y.dtype, device=y.device)
    _check_samples(y, op)
    if x is not None:
        spacings = _spacings(y, x, axis, op)
        pair_sums = _along(y, axis, slice(1, None)) + _along(y, axis, slice(None, -1))
        return total(spacings * pair_sums, axis=axis) / 2.0
    spacing = 1.0 if dx is None else _spacing(dx, op, allow_bool)
    # every sample counts fully but the two ends, which count half
    ends = _along(y, axis, 0) + _along(y, axis, -1)
    return (total(y, axis=axis) - ends * 0.5) * spacing


def cumulative_trapezoid(y: Tensor, x: Tensor | None = None, *, dx=None, dim: int = -1) -> Tensor:
    """The running integrals of ``y`` along ``dim`` by the trapezoid rule, as
    ``torch.cumulative_trapezoid``: (..., n, ...) -> (..., max(n - 1, 0), ...), entry i the
    integral up to sample i + 1. ``x`` or ``dx`` as in ``trapezoid``."""
    op = "cumulative_trapezoid"
    if x is not None and dx is not None:
        raise TypeError(f"[{op}] takes the sample positions x or their spacing dx, not both")
    axis = _axis(y, dim, op)
    _check_samples(y, op)
    pair_sums = _along(y, axis, slice(None, -1)) + _along(y, axis, slice(1, None))
    if x is not None:
        areas = _spacings(y, x, axis, op) * pair_sums / 2.0
    else:
        spacing = 1.0 if dx is None else _spacing(dx, op, allow_bool=False)
        areas = spacing / 2.0 * pair_sums
    return cumsum(areas, axis=axis)


# ----- vander, ger, msort, combinations -------------------------------------------------------


def vander(x: Tensor, N: int | None = None, increasing: bool = False) -> Tensor:  # noqa: N803
    """The Vandermonde matrix of ``x``, as ``torch.vander``: x (n,) -> (n, N), column j holding
    ``x ** (N - 1 - j)`` (``x ** j`` when ``increasing``); N defaults to n. Integer and bool
    inputs give int64. The powers are running products, so the gradient is exact at 0."""
    if x.ndim != 1:
        raise ShapeError(
            f"[vander] x must be a 1-D tensor, got shape {tuple(x.shape)}",
            help="flatten it first: x.reshape(-1)",
        )
    columns = x.shape[0] if N is None else _integer(N, "vander", "N")
    if columns < 0:
        raise ArgumentError(f"[vander] N must be non-negative, got {columns}")
    dtype = promote_types(x.dtype, _INT64)
    column = astype(x, dtype).unsqueeze(1)  # (n, 1)
    powers = ones_like(column)  # x ** 0
    if columns == 0:
        return powers[:, :0]
    if columns > 1:
        powers = concatenate([powers, cumprod(column.expand(-1, columns - 1), axis=1)], axis=1)
    return powers if increasing else flip(powers, 1)


def ger(input: Tensor, vec2: Tensor) -> Tensor:  # noqa: A002 - PyTorch's name
    """The outer product, by PyTorch's older name: input (n,), vec2 (m,) -> (n, m)."""
    for name, vector in (("input", input), ("vec2", vec2)):
        if vector.ndim != 1:
            raise ShapeError(
                f"[ger] {name} must be a 1-D tensor, got shape {tuple(vector.shape)}",
                help="flatten it first: .reshape(-1)",
            )
    return outer(input, vec2)


def msort(input: Tensor) -> Tensor:  # noqa: A002 - PyTorch's name
    """``input`` sorted along its first dimension, ascending (NaN last): ``sort(input,
    dim=0).values``. Same shape as ``input``; the gradient goes back to each value's place."""
    return sort(input, 0).values


def combinations(input: Tensor, r: int = 2, with_replacement: bool = False) -> Tensor:  # noqa: A002
    """Every length-``r`` combination of the elements of ``input``, in lexicographic order of
    their positions, as ``torch.combinations`` (Python's ``itertools.combinations``, or
    ``combinations_with_replacement``): (n,) -> (C, r) with C = comb(n, r) (comb(n + r - 1, r)
    with replacement); r = 0 gives an empty (0,) tensor. Differentiable in ``input``; a frozen
    graph needs a fixed n."""
    if input.ndim != 1:
        raise ShapeError(
            f"[combinations] expects a 1-D tensor, got shape {tuple(input.shape)}",
            help="flatten it first: x.reshape(-1)",
        )
    r = _integer(r, "combinations", "r")
    if r < 0:
        raise ArgumentError(f"[combinations] r must be non-negative, got {r}")
    count = input.shape[0]
    if type(count) is not int:  # a symbolic length while freezing: the index list is fixed
        raise SymbolicSizeError(
            "[combinations] the number of combinations depends on the input's length, which is "
            "symbolic",
            help="give the input a fixed length in the TensorSpec",
        )
    if r == 0:
        return index_select(input, 0, np.zeros(0, dtype=_INT64))
    choose = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    total_count = math.comb(count + r - 1, r) if with_replacement else math.comb(count, r)
    positions = np.fromiter(
        itertools.chain.from_iterable(choose(range(count), r)), dtype=_INT64, count=total_count * r
    )
    return index_select(input, 0, positions).reshape(total_count, r)


# ----- mode -----------------------------------------------------------------------------------


def _mode_along(x: Tensor, axis: int) -> ValuesIndices:
    """The most frequent value along ``axis`` of x (..., n, ...), n >= 1, and its index, shaped
    (..., 1, ...). Equal values form runs in a stable sort, so the longest run's last element
    is the value's last occurrence; the first longest run holds the smallest such value."""
    extent = x.shape[axis]
    if type(extent) is not int:  # a symbolic size while freezing: the scan's steps are fixed
        raise SymbolicSizeError(
            f"[mode] counting equal values scans dim {axis}, whose size is symbolic",
            help="give that dimension a fixed size in the TensorSpec",
        )
    with no_grad():
        order = argsort(x, axis)  # stable, NaN last
        ordered = _gather(x, order, axis)
        # NaN != NaN, so each NaN is a run of its own, as in PyTorch's count
        differs = _along(ordered, axis, slice(1, None)) != _along(ordered, axis, slice(None, -1))
        edge = ones_like(_along(ordered, axis, slice(0, 1)), dtype=np.bool_)
        starts = concatenate([edge, differs], axis)
        ends = concatenate([differs, edge], axis)
        shape = [1] * x.ndim
        shape[axis] = extent
        positions = arange(extent, device=x.device).reshape(shape)
        run_start = cummax(where(starts, positions, 0), axis).values
        lengths = where(ends, positions - run_start + 1, 0)
        longest = argmax(lengths, axis, keepdims=True)  # the first of equal lengths
        indices = _gather(order, longest, axis)
    return ValuesIndices(_gather(x, indices, axis), indices)


def mode(input: Tensor, dim: int = -1, keepdim: bool = False) -> ValuesIndices:  # noqa: A002
    """``ValuesIndices(values, indices)`` of the most frequent value along ``dim``, as
    ``torch.mode``: x (..., n, ...) -> (..., ...) (size 1 kept with ``keepdim``), indices int64.

    Of equally frequent values the smallest wins; the index is its last occurrence (PyTorch's
    CPU index for rows of up to 16 elements; for longer rows PyTorch's unstable sort may report
    another occurrence of the same value). Each NaN counts as a value of its own (NaN != NaN)
    and sorts last; PyTorch's CPU sort compares NaN with ``<``, so where a NaN would win or
    splits a run of equal values its answer depends on where the NaNs sit. The gradient goes to
    the element at ``indices``. A frozen graph needs a fixed n.
    """
    dim = _integer(dim, "mode", "dim")
    if input.ndim == 0:  # a 0-d tensor is its own mode, at index 0
        check_scalar_axis(dim, "mode")
        picked = _mode_along(input.reshape(1), 0)
        return ValuesIndices(picked.values.reshape(()), picked.indices.reshape(()))
    axis = normalize_axis(dim, input.ndim, "mode")
    if input.shape[axis] == 0:
        raise ShapeError(
            f"[mode] cannot reduce dimension {axis} of size 0 of a tensor shaped "
            f"{tuple(input.shape)}: the mode of nothing is undefined",
            help="check the input is not empty, or reduce a non-empty dimension",
        )
    picked = _mode_along(input, axis)
    if keepdim:
        return picked
    return ValuesIndices(picked.values.squeeze(axis), picked.indices.squeeze(axis))


__all__ = ["cov", "corrcoef", "trapezoid", "trapz", "cumulative_trapezoid", "vander", "mode",
           "msort", "ger", "combinations"]  # fmt: skip

TENSOR_METHODS = {
    "cov": cov, "corrcoef": corrcoef, "mode": mode, "msort": msort, "ger": ger,
}  # fmt: skip

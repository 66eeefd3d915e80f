"""Matrix norms and singular values, as ``torch.linalg`` spells them (``buildingai.linalg``).

``matrix_norm`` reduces two axes: ``"fro"`` (the 2-norm of the elements), ``"nuc"`` (the sum
of the singular values), 2 / -2 (the largest / smallest singular value), 1 / -1 (the largest /
smallest column sum of |x|) and inf / -inf (the largest / smallest row sum). ``linalg_norm`` is
``torch.linalg.norm``: a matrix norm for a 2-D input or two axes, a vector norm otherwise.
Every one is composed from primitives (``svdvals``, ``vector_norm``, ``abs``, sums, extrema),
so gradients follow their rules; singular-value norms have first and second derivatives.
"""

from __future__ import annotations

import math
from numbers import Integral, Real

from ..autograd.dispatch import apply
from ..autograd.tensor import Tensor
from ..errors import ShapeError
from ..ops import reduce as reduce_ops
from ..ops import singular_values as ops
from ._common import normalize_axes, normalize_axis, pick
from .elementwise import abs as absolute
from .reduce import amax, amin
from .reduce import sum as total
from .shape import movedim

MATRIX_ORDERS = ("fro", "nuc", 2, -2, 1, -1, math.inf, -math.inf)


def svdvals(x: Tensor) -> Tensor:
    """The singular values of each matrix, largest first (``torch.linalg.svdvals``).

    x: (..., m, n) float32 or float64 -> (..., min(m, n)).
    """
    return apply(ops.SVDVALS, x)


def vector_norm(x: Tensor, ord=2, dim=None, keepdim: bool = False) -> Tensor:
    """``torch.linalg.vector_norm``: the p-norm of the elements over ``dim`` (all when None),
    never a matrix norm. x: (...) -> the shape of x without ``dim`` (kept as size 1 with
    ``keepdim``)."""
    if isinstance(ord, bool) or not isinstance(ord, Real):
        raise ValueError(
            f"[vector_norm] ord must be a number, inf or -inf, got {ord!r} (matrix_norm takes "
            "'fro' and 'nuc')"
        )
    axes = normalize_axes(dim, x.ndim, "vector_norm")
    return apply(reduce_ops.VECTOR_NORM, x, ord=float(ord), axes=axes, keepdims=bool(keepdim))


def _matrix_axes(x: Tensor, dim, op: str) -> tuple[int, int]:
    if x.ndim < 2:
        raise ShapeError(
            f"[{op}] needs at least 2 dimensions for a matrix norm, got a tensor shaped "
            f"{tuple(x.shape)}",
            help="use vector_norm for vectors",
        )
    if not isinstance(dim, (tuple, list)) or len(dim) != 2:
        raise ShapeError(
            f"[{op}] a matrix norm reduces two axes: dim must be a pair, got {dim!r}",
            help="pass dim=(-2, -1) (the default) or another pair of axes",
        )
    rows, columns = (normalize_axis(int(axis), x.ndim, op) for axis in dim)
    if rows == columns:
        raise ShapeError(f"[{op}] dim {tuple(dim)} names axis {rows} twice")
    return rows, columns


def matrix_norm(x: Tensor, ord="fro", dim=(-2, -1), keepdim: bool = False) -> Tensor:
    """``torch.linalg.matrix_norm``: the ``ord`` norm of the matrices spanned by the two axes
    ``dim`` (rows, columns); see the module docstring for the orders.

    x: (..., m, n) -> (...) (the two axes kept as size 1 with ``keepdim``).
    """
    rows, columns = _matrix_axes(x, dim, "matrix_norm")
    if isinstance(ord, bool) or ord not in MATRIX_ORDERS:
        raise ValueError(
            f"[matrix_norm] unsupported ord {ord!r}: use 'fro', 'nuc', 2, -2, 1, -1, inf or -inf"
        )
    if ord == "fro":
        return vector_norm(x, 2, (rows, columns), keepdim)
    if ord in ("nuc", 2, -2):
        values = svdvals(movedim(x, (rows, columns), (-2, -1)))  # (..., k)
        if ord == "nuc":
            out = total(values, axis=-1)
        else:
            out = (amax if ord == 2 else amin)(values, axis=-1)
        if keepdim:
            for axis in sorted((rows, columns)):
                out = out.unsqueeze(axis)
        return out
    # 1: largest column sum (sum over the rows axis); inf: largest row sum
    summed, extreme = (rows, columns) if abs(ord) == 1 else (columns, rows)
    sums = total(absolute(x), axis=summed, keepdims=True)
    pick_extreme = amax if ord > 0 else amin
    out = pick_extreme(sums, axis=extreme, keepdims=True)
    if not keepdim:
        out = out.squeeze(tuple(sorted((rows, columns))))
    return out


def linalg_norm(x: Tensor, ord=None, dim=None, keepdim: bool = False) -> Tensor:
    """``torch.linalg.norm`` (and ``numpy.linalg.norm``): with ``dim`` a pair, or a 2-D input
    and no ``dim``, a matrix norm (``ord`` None means ``"fro"``); with ``dim`` an int, or a 1-D
    input, a vector norm (None means 2); with neither ``ord`` nor ``dim``, the 2-norm of all
    elements, whatever the rank.

    x: (...) -> the shape of x without the reduced axes (kept as size 1 with ``keepdim``).
    """
    if isinstance(dim, Integral):
        dim = (int(dim),)
    matrix = (dim is not None and len(dim) == 2) or (
        dim is None and ord is not None and x.ndim == 2
    )
    if matrix:
        matrix_dim = (-2, -1) if dim is None else dim
        return matrix_norm(x, "fro" if ord is None else ord, matrix_dim, keepdim)
    if dim is None and ord is not None and x.ndim != 1:
        raise ShapeError(
            f"[norm] with ord={ord!r} and no dim, the input must be 1-D or 2-D, got shape "
            f"{tuple(x.shape)}",
            help="pass dim: an int for a vector norm, a pair of axes for a matrix norm",
        )
    if isinstance(ord, str):
        raise ValueError(
            f"[norm] ord {ord!r} is a matrix norm: it needs a 2-D input or dim=(rows, columns)"
        )
    return vector_norm(x, 2 if ord is None else ord, dim, keepdim)


def norm(x, p=None, axis=None, keepdims=None, *, ord=None, dim=None, keepdim=None) -> Tensor:
    """``torch.norm`` / ``x.norm(p, dim)``: the vector p-norm over ``axis`` (None: all
    elements, whatever the rank); ``p`` may be any real number, inf, -inf, 0 or ``"fro"`` (the
    2-norm, the default), and ``"nuc"`` is the nuclear matrix norm of a 2-D input (or over a
    pair of axes).

    The keyword ``ord=`` asks for ``numpy.linalg.norm`` / ``torch.linalg.norm`` instead
    (``linalg_norm``): ``norm(x, ord=2)`` of a matrix is its largest singular value.

    x: (...) -> the shape of x without the reduced axes (kept as size 1 with ``keepdims``).
    """
    axis = pick("axis", axis, "dim", dim)
    keep = bool(pick("keepdims", keepdims, "keepdim", keepdim, False))
    if ord is not None:
        if p is not None:
            raise TypeError(
                f"[norm] got both p={p!r} (torch.norm's vector norm) and ord={ord!r} "
                "(linalg.norm's matrix or vector norm): pass one of them"
            )
        return linalg_norm(x, ord, axis, keep)
    if p is None or p == "fro":
        p = 2
    if p == "nuc":  # over every axis when none is given, so only a 2-D input passes (PyTorch)
        return matrix_norm(x, "nuc", tuple(range(x.ndim)) if axis is None else axis, keep)
    if isinstance(p, str):
        raise ValueError(f"[norm] unsupported p {p!r}: use a number, inf, -inf, 'fro' or 'nuc'")
    axes = normalize_axes(axis, x.ndim, "norm")
    return apply(reduce_ops.VECTOR_NORM, x, ord=float(p), axes=axes, keepdims=keep)


__all__ = ["norm", "svdvals", "matrix_norm", "vector_norm", "linalg_norm"]

TENSOR_METHODS = {"norm": norm}

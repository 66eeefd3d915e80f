"""Matrix-shaped helpers PyTorch model code calls: ``tril``/``triu`` (causal masks) and
``Tensor.t()`` (the transpose of a matrix)."""

from __future__ import annotations

from numbers import Integral

from ..autograd.dispatch import apply
from ..autograd.tensor import Tensor
from ..errors import ShapeError
from ..ops import sort as ops
from .inplace_math import _write
from .shape import swapaxes


def _triangle(op, x: Tensor, diagonal) -> Tensor:
    if x.ndim < 2:
        raise ShapeError(
            f"[{op.name}] needs a tensor with at least 2 dimensions, got shape {tuple(x.shape)}",
            help="the triangle is taken over the last two dimensions; reshape to (..., m, n)",
        )
    if isinstance(diagonal, bool) or not isinstance(diagonal, Integral):
        raise TypeError(f"[{op.name}] diagonal must be an int, got {diagonal!r}")
    return apply(op, x, diagonal=int(diagonal))


def tril(x: Tensor, diagonal: int = 0) -> Tensor:
    """The lower triangle of the last two axes: elements on and below diagonal ``diagonal``
    (0: the main diagonal, 1: one above it, -1: one below); the rest are zero.
    x: (..., m, n) -> (..., m, n)."""
    return _triangle(ops.TRIL, x, diagonal)


def triu(x: Tensor, diagonal: int = 0) -> Tensor:
    """The upper triangle of the last two axes: elements on and above diagonal ``diagonal``;
    the rest are zero. x: (..., m, n) -> (..., m, n)."""
    return _triangle(ops.TRIU, x, diagonal)


def t(x: Tensor) -> Tensor:
    """The transpose of a matrix, as ``torch.t``: (m, n) -> (n, m); a 0-d or 1-D tensor is
    returned as it is."""
    if x.ndim > 2:
        raise ShapeError(
            f"[t] expects a tensor with at most 2 dimensions, got shape {tuple(x.shape)}",
            help="use x.transpose(a, b) or x.permute(...) to swap dimensions of larger tensors",
        )
    if x.ndim < 2:
        return x
    return swapaxes(x, 0, 1)


def tril_(x: Tensor, diagonal: int = 0) -> Tensor:
    """``x = tril(x, diagonal)`` in place; returns ``x``."""
    return _write(x, "tril_", (), lambda values: tril(values, diagonal))


def triu_(x: Tensor, diagonal: int = 0) -> Tensor:
    """``x = triu(x, diagonal)`` in place; returns ``x``."""
    return _write(x, "triu_", (), lambda values: triu(values, diagonal))


__all__ = ["tril", "triu", "t"]

TENSOR_METHODS = {"tril": tril, "triu": triu, "t": t, "tril_": tril_, "triu_": triu_}

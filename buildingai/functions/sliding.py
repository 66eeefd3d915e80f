"""``Tensor.unfold(dimension, size, step)``: every window of ``size`` elements at each ``step``
along one dimension, as PyTorch's method (the record is ``ops/unfold.py``'s ``unfold_axis``).
A method only: ``nn.functional.unfold`` is the image's im2col, a different operation."""

from __future__ import annotations

import operator

from ..autograd.dispatch import apply
from ..autograd.tensor import Tensor
from ..errors import ShapeError
from ..ops.unfold import UNFOLD_AXIS
from ._common import normalize_axis

__all__: list[str] = []


def unfold_windows(x: Tensor, dimension: int, size: int, step: int) -> Tensor:
    """x (..., L, ...) -> (..., n, ..., size): dimension ``dimension`` holds the n = (L - size)
    // step + 1 windows, a new last dimension their elements; ``[..., i, ..., k]`` is
    ``x[..., i * step + k, ...]``. ``torch.arange(1., 8).unfold(0, 2, 2)`` -> ``[[1, 2], [3,
    4], [5, 6]]``. A copy (PyTorch returns a view)."""
    if x.ndim == 0:
        raise ShapeError(
            "[unfold] a 0-d tensor has no dimension to take windows along",
            help="reshape it first: x.reshape(1)",
        )
    axis = normalize_axis(operator.index(dimension), x.ndim, "unfold")
    return apply(UNFOLD_AXIS, x, axis=axis, size=operator.index(size), step=operator.index(step))


TENSOR_METHODS = {"unfold": unfold_windows}

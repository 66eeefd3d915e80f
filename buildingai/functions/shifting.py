"""``roll``: shift elements cyclically along dimensions, as ``torch.roll`` (and ``numpy.roll``).

A composite of slices and one concatenation per rolled dimension, so its gradient (the opposite
roll) comes from theirs.
"""

from __future__ import annotations

from ..autograd.tensor import Tensor
from ..errors import ShapeError
from ._common import normalize_axis
from .shape import concatenate


def _as_tuple(value) -> tuple:
    return tuple(value) if isinstance(value, (tuple, list)) else (value,)


def roll(input: Tensor, shifts, dims=None) -> Tensor:  # noqa: A002 - PyTorch's name
    """Shift the elements of ``input`` by ``shifts`` places along ``dims``; what falls off the
    end comes back at the start. Same shape as ``input``.

    ``shifts`` and ``dims`` are ints or tuples of the same length; without ``dims`` the tensor
    is rolled as if flattened, then given its shape back. ``roll([1, 2, 3, 4], 1)`` ->
    ``[4, 1, 2, 3]``.
    """
    shifts = _as_tuple(shifts)
    if dims is None:
        if len(shifts) != 1:
            raise ShapeError(
                f"[roll] without dims, shifts must be one number, got {shifts}",
                help="pass dims= with one dimension per shift",
            )
        return roll(input.reshape(-1), shifts, 0).reshape(tuple(input.shape))
    dims = _as_tuple(dims)
    if len(shifts) != len(dims):
        raise ShapeError(
            f"[roll] shifts {shifts} and dims {dims} must have the same length",
            help="give one shift per dimension",
        )
    out = input
    for shift, dim in zip(shifts, dims):
        axis = normalize_axis(int(dim), input.ndim, "roll")
        extent = out.shape[axis]
        if extent == 0 or int(shift) % extent == 0:
            continue
        cut = extent - int(shift) % extent  # elements from `cut` on move to the front
        before = (slice(None),) * axis
        out = concatenate([out[before + (slice(cut, None),)], out[before + (slice(0, cut),)]], axis)
    return out


__all__ = ["roll"]

TENSOR_METHODS = {"roll": roll}

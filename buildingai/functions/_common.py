"""Argument helpers shared by the public functions: axis normalisation and PyTorch aliases."""

from __future__ import annotations

from ..errors import ShapeError, tensor_with_dimensions


def normalize_axis(axis: int, ndim: int, op: str) -> int:
    """A non-negative axis index, or a ShapeError naming the op."""
    if type(axis) is int and 0 <= axis < ndim:  # the commonest answer, the cheapest test
        return axis
    if not -ndim <= axis < max(ndim, 1):
        raise ShapeError(
            f"[{op}] axis {axis} is out of range for {tensor_with_dimensions(ndim)}",
            help=f"use an axis in [{-ndim}, {ndim - 1}]"
            if ndim
            else "a 0-d (scalar) tensor has no axes: use axis 0, or reshape it first (x.reshape(1))",
        )
    return axis % ndim if ndim else 0


def check_scalar_axis(axis: int, op: str) -> None:
    """A 0-d tensor takes axis 0 or -1 where an op treats it as one element (as in PyTorch)."""
    if axis not in (0, -1):
        raise ShapeError(
            f"[{op}] axis {axis} is out of range for a 0-d tensor",
            help="a 0-d (scalar) tensor takes axis 0 or -1 here, as in PyTorch",
        )


def dimensioned_axis(axis: int, ndim: int, op: str) -> int:
    """``normalize_axis`` for ops that cut along an axis, which a 0-d tensor does not have."""
    if ndim == 0:
        raise ShapeError(
            f"[{op}] needs a tensor with at least 1 dimension, got a 0-d tensor",
            help="reshape it to one element first: x.reshape(1)",
        )
    return normalize_axis(axis, ndim, op)


def normalize_axes(axis, ndim: int, op: str) -> tuple[int, ...] | None:
    """``None`` (every axis) or a sorted tuple of distinct non-negative axes."""
    if axis is None:
        return None
    if ndim == 0:  # a 0-d tensor has nothing to reduce; axis 0 and -1 are accepted, as in PyTorch
        for a in (axis,) if isinstance(axis, int) else axis:
            check_scalar_axis(a, op)
        return ()
    if isinstance(axis, int):
        return (normalize_axis(axis, ndim, op),)
    axes = tuple(sorted(normalize_axis(a, ndim, op) for a in axis))
    if len(set(axes)) != len(axes):
        raise ShapeError(f"[{op}] repeated axis in {tuple(axis)}")
    return axes


def pick(numpy_name, numpy_value, torch_name, torch_value, default=None):
    """Accept the NumPy spelling (``axis``/``keepdims``) or the PyTorch one (``dim``/``keepdim``)."""
    if numpy_value is not None and torch_value is not None and numpy_value != torch_value:
        raise TypeError(f"got both {numpy_name}={numpy_value!r} and {torch_name}={torch_value!r}")
    if numpy_value is not None:
        return numpy_value
    if torch_value is not None:
        return torch_value
    return default


def as_shape(shape) -> tuple[int, ...]:
    """Accept ``f(2, 3)``, ``f((2, 3))`` and ``f([2, 3])`` alike."""
    if len(shape) == 1 and not isinstance(shape[0], int):
        shape = shape[0]
    if type(shape) is tuple:
        for size in shape:  # plain ints, the commonest call: the tuple as it is
            if type(size) is not int:
                break
        else:
            return shape
    # ints pass as they are: while freezing, a size can be an int that carries its expression
    return tuple(s if isinstance(s, int) and not isinstance(s, bool) else int(s) for s in shape)

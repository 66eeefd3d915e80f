"""Argument handling shared by the convolution and pooling functions: sizes given as an int or
a tuple, and inputs with or without a batch dimension."""

from __future__ import annotations

from ...autograd.tensor import Tensor
from ...errors import ShapeError


def _pair(value, name: str, op: str) -> tuple[int, int]:
    """``3`` -> ``(3, 3)``; ``(2, 3)`` stays; ``(3,)`` -> ``(3, 3)``; anything else is refused."""
    if isinstance(value, int) and not isinstance(value, bool):
        return (value, value)
    values = tuple(value)
    if len(values) == 1:
        values = values * 2
    if len(values) != 2 or not (isinstance(values[0], int) and isinstance(values[1], int)):
        raise ShapeError(
            f"[{op}] {name} must be an int or a pair of ints, got {value!r}",
            help=f"e.g. {name}=1 or {name}=(1, 2)",
        )
    return values


def _triple(value, name: str, op: str) -> tuple[int, int, int]:
    """``3`` -> ``(3, 3, 3)``; ``(1, 2, 3)`` stays; ``(3,)`` -> ``(3, 3, 3)``; anything else is
    refused."""
    if isinstance(value, int) and not isinstance(value, bool):
        return (value,) * 3
    values = tuple(value)
    if len(values) == 1:
        values = values * 3
    if len(values) != 3 or not all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        raise ShapeError(
            f"[{op}] {name} must be an int or a triple of ints, got {value!r}",
            help=f"e.g. {name}=1 or {name}=(1, 2, 2) for (depth, height, width)",
        )
    return values


def _single(value, name: str, op: str) -> int:
    """``3`` -> ``3``; ``(3,)`` -> ``3``; anything else is refused."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    values = tuple(value)
    if len(values) != 1 or not isinstance(values[0], int):
        raise ShapeError(f"[{op}] {name} must be an int or a 1-tuple, got {value!r}")
    return values[0]


def _batched(x: Tensor, spatial: int, op: str) -> tuple[Tensor, bool]:
    """Accept (N, C, *spatial) or the unbatched (C, *spatial); return the batched form and
    whether a batch axis was added."""
    if x.ndim == spatial + 1:
        return x.unsqueeze(0), True
    if x.ndim != spatial + 2:
        layout = {1: "(N, C, L)", 2: "(N, C, H, W)", 3: "(N, C, D, H, W)"}[spatial]
        raise ShapeError(
            f"[{op}] expected a {spatial + 2}-D input {layout} (or {spatial + 1}-D unbatched), "
            f"got {tuple(x.shape)}"
        )
    return x, False

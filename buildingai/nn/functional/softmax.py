"""``softmax``, ``log_softmax`` and ``softmin`` with PyTorch's signatures, including what a call
without ``dim`` means there.

PyTorch picks the dimension of such a call by the input's rank, dimension 0 for 0-, 1- and 3-D
inputs and 1 otherwise, and warns that the choice is deprecated; a (C, H, W) or (N, C, H, W)
input is normalised over its channels, not its last dimension. The same call here takes the
same dimension with the same warning, so a ported model computes what it did. (``buildingai.
softmax(x)``, BuildingAI's own spelling, keeps its documented default: the last axis.)
"""

from __future__ import annotations

import warnings

from ...autograd.tensor import Tensor
from ...functions import nn as functions
from ...functions._common import pick

__all__ = ["log_softmax", "softmax", "softmin"]


def implicit_dim(name: str, ndim: int, stacklevel: int = 2) -> int:
    """The dimension PyTorch's ``name`` takes when called without one, with its warning
    (``stacklevel`` counted from this function, as ``warnings.warn``'s)."""
    warnings.warn(
        f"Implicit dimension choice for {name} has been deprecated. Change the call to include "
        "dim=X as an argument.",
        UserWarning,
        stacklevel=stacklevel,
    )
    return 0 if ndim in (0, 1, 3) else 1


def _dim(name: str, input: Tensor, dim, axis, stacklevel: int) -> int:  # noqa: A002
    chosen = pick("axis", axis, "dim", dim)
    return implicit_dim(name, input.ndim, stacklevel + 1) if chosen is None else chosen


def softmax(
    input: Tensor,  # noqa: A002 - PyTorch's name
    dim: int | None = None,
    _stacklevel: int = 3,
    dtype=None,
    *,
    axis: int | None = None,
) -> Tensor:
    """``exp(x) / sum(exp(x))`` along ``dim``; without one, PyTorch's implicit dimension (see
    the module's docstring). ``dtype`` casts the input first. Same shape as ``input``."""
    axis = _dim("softmax", input, dim, axis, _stacklevel)
    return functions.softmax(input, axis, dtype=dtype)


def log_softmax(
    input: Tensor,  # noqa: A002
    dim: int | None = None,
    _stacklevel: int = 3,
    dtype=None,
    *,
    axis: int | None = None,
) -> Tensor:
    """``log(softmax(x))`` along ``dim``, computed stably; the dimension is chosen as
    ``softmax``'s."""
    axis = _dim("log_softmax", input, dim, axis, _stacklevel)
    return functions.log_softmax(input, axis, dtype=dtype)


def softmin(
    input: Tensor,  # noqa: A002
    dim: int | None = None,
    _stacklevel: int = 3,
    dtype=None,
    *,
    axis: int | None = None,
) -> Tensor:
    """``softmax(-x)`` along ``dim``: the smallest values get the largest weights. The
    dimension is chosen as ``softmax``'s."""
    axis = _dim("softmin", input, dim, axis, _stacklevel)
    if dtype is not None:
        input = input.to(dtype)  # noqa: A001 - cast before negating, as PyTorch
    return functions.softmax(-input, axis)

"""Random tensors shaped like another: ``rand_like``, ``randn_like``, ``randint_like``.

Each draws as ``rand``, ``randn`` and ``randint`` do, from the default generator unless one is
given, with the shape of ``input`` and, unless given, its dtype and device (as in PyTorch).
"""

from __future__ import annotations

import numpy as np

from ..autograd.tensor import Tensor
from ..backend.dtypes import as_dtype
from .creation import astype, rand, randint, randn

_INT64 = np.dtype(np.int64)


def _dtype_and_device(input: Tensor, dtype, device) -> dict:  # noqa: A002 - PyTorch's name
    return {
        "dtype": input.dtype if dtype is None else dtype,
        "device": input.device if device is None else device,
    }


def rand_like(
    input: Tensor,  # noqa: A002 - PyTorch's name
    *,
    generator=None,
    dtype=None,
    device=None,
    requires_grad: bool = False,
    memory_format=None,
) -> Tensor:
    """Uniform samples in [0, 1), shaped like ``input``. ``memory_format`` is accepted for
    PyTorch's signature: every BuildingAI tensor is row-major."""
    where = _dtype_and_device(input, dtype, device)
    return rand(tuple(input.shape), generator=generator, requires_grad=requires_grad, **where)


def randn_like(
    input: Tensor,  # noqa: A002 - PyTorch's name
    *,
    generator=None,
    dtype=None,
    device=None,
    requires_grad: bool = False,
    memory_format=None,
) -> Tensor:
    """Standard normal samples, shaped like ``input``. ``memory_format`` is accepted for
    PyTorch's signature: every BuildingAI tensor is row-major."""
    where = _dtype_and_device(input, dtype, device)
    return randn(tuple(input.shape), generator=generator, requires_grad=requires_grad, **where)


def randint_like(
    input: Tensor,  # noqa: A002 - PyTorch's name
    low: int = 0,
    high: int | None = None,
    *,
    generator=None,
    dtype=None,
    device=None,
    requires_grad: bool = False,
    memory_format=None,
) -> Tensor:
    """Integers uniform in [low, high), shaped like ``input``: ``randint_like(x, high)`` or
    ``randint_like(x, low, high)``. The dtype is ``input``'s unless given, as in PyTorch, so a
    float32 ``input`` gives float32 whole numbers."""
    if high is None:
        low, high = 0, low
    where = _dtype_and_device(input, dtype, device)
    drawn = randint(low, high, tuple(input.shape), device=where["device"], generator=generator)
    out = drawn if as_dtype(where["dtype"]) == _INT64 else astype(drawn, where["dtype"])
    return out.requires_grad_() if requires_grad else out


__all__ = ["rand_like", "randint_like", "randn_like"]

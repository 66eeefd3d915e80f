"""Random draws that read tensors: ``multinomial``, ``bernoulli`` and ``normal``, as PyTorch's.

Each is an effectful op record (``ops/random.py``, ``ops/multinomial.py``), so a compiled or
frozen step draws again on every run, from the ``Generator`` given (the default one otherwise).
``bernoulli`` and ``normal`` outputs require grad when their inputs do, with a zero gradient as
in PyTorch; ``multinomial`` returns int64 category positions.
"""

from __future__ import annotations

import numpy as np

from ..autograd.dispatch import apply
from ..autograd.tensor import Tensor
from ..backend.random import Generator
from ..errors import BuildingAIError
from ..ops.multinomial import MULTINOMIAL
from ..ops.random import BERNOULLI, NORMAL
from .creation import full_like, randn, tensor


def multinomial(
    input: Tensor,  # noqa: A002 - PyTorch's name
    num_samples: int,
    replacement: bool = False,
    *,
    generator: Generator | None = None,
) -> Tensor:
    """Draw ``num_samples`` category positions per row, each with probability proportional to
    its weight (weights need not sum to 1).

    input: (C,) or (N, C) non-negative weights -> (num_samples,) or (N, num_samples) int64.
    Without ``replacement`` the positions in a row are distinct (each next draw among the
    categories not drawn yet); a zero weight is never drawn. ``generator`` defaults to the
    default generator (``buildingai.manual_seed``).
    """
    if not isinstance(input, Tensor):
        raise TypeError(f"[multinomial] expects a Tensor of weights, got {type(input).__name__}")
    if isinstance(num_samples, bool) or not isinstance(num_samples, (int, np.integer)):
        raise TypeError(f"[multinomial] num_samples must be an int, got {num_samples!r}")
    if num_samples <= 0:
        raise BuildingAIError(
            f"[multinomial] num_samples must be positive, got {num_samples}",
            help="ask for at least one sample",
        )
    return apply(MULTINOMIAL, input, num_samples=int(num_samples),
                 replacement=bool(replacement), generator=generator)  # fmt: skip


def bernoulli(
    input: Tensor,  # noqa: A002 - PyTorch's name
    p: float | None = None,
    *,
    generator: Generator | None = None,
) -> Tensor:
    """1 with probability ``input`` (or ``p`` when given), else 0, element-wise: same shape and
    dtype as ``input``."""
    if not isinstance(input, Tensor):
        raise TypeError(
            f"[bernoulli] expects a Tensor of probabilities, got {type(input).__name__}"
        )
    if p is not None:
        input = full_like(input, p)  # PyTorch's bernoulli(x, p): x's shape and dtype
    return apply(BERNOULLI, input, generator=generator)


def normal(mean=0.0, std=1.0, size=None, *, generator=None, dtype=None, device=None) -> Tensor:
    """Samples of N(mean, std^2), as ``torch.normal``.

    ``normal(mean, std)`` with a Tensor among them: one sample per element of their broadcast
    shape, in its dtype. ``normal(mean, std, size)`` with two numbers: ``size`` samples (float32
    unless ``dtype`` is given). The gradient is zero, as PyTorch's; ``prob.Normal(mean,
    std).rsample()`` is the reparameterised draw."""
    if not isinstance(mean, Tensor) and not isinstance(std, Tensor):
        if size is None:
            raise TypeError("[normal] with a number for mean and for std, pass size=(...)")
        return randn(size, dtype=dtype, device=device, generator=generator) * std + mean
    like = mean if isinstance(mean, Tensor) else std
    mean, std = (
        v if isinstance(v, Tensor) else tensor(v, dtype=like.dtype, device=like.device)
        for v in (mean, std)
    )
    return apply(NORMAL, mean, std, generator=generator)


__all__ = ["bernoulli", "multinomial", "normal"]

TENSOR_METHODS = {"multinomial": multinomial, "bernoulli": bernoulli}

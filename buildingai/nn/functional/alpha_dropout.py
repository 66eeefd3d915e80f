"""Alpha dropout, the dropout of self-normalising networks (Klambauer et al., 2017), with
PyTorch's signatures and formula: dropped values are set to SELU's negative saturation, then an
affine map restores zero mean and unit variance. ``feature_alpha_dropout`` drops whole
channels."""

from __future__ import annotations

import math

from ...autograd.tensor import Tensor
from ...backend.random import Generator
from ...functions.nn import _check_probability, dropout_mask
from .activation import in_place

__all__ = ["alpha_dropout", "feature_alpha_dropout"]

_SATURATION = 1.7580993408473766  # -SELU's limit at -inf: scale * alpha


def _alpha_dropout(name: str, x: Tensor, p: float, training: bool, inplace: bool, mask_shape,
                   generator: Generator | None) -> Tensor:  # fmt: skip
    p = _check_probability(p)
    if not training or p == 0.0 or x.numel() == 0:
        return x
    if p == 1.0:
        compute = lambda t: t * 0.0  # noqa: E731 - zeros, with a zero gradient
    else:
        keep = dropout_mask(mask_shape, p, generator, x.device).to(x.dtype)
        scale = 1.0 / math.sqrt((_SATURATION**2 * p + 1.0) * (1.0 - p))
        # kept: scale * x + scale * saturation * p; dropped: -scale * saturation * (1 - p)
        shift = (keep - (1.0 - p)) * (_SATURATION * scale)
        compute = lambda t: t * (keep * scale) + shift  # noqa: E731
    return in_place(name, x, compute) if inplace else compute(x)


def alpha_dropout(
    input: Tensor,  # noqa: A002 - PyTorch's name
    p: float = 0.5,
    training: bool = False,
    inplace: bool = False,
    *,
    generator: Generator | None = None,
) -> Tensor:
    """Each element dropped with probability ``p`` to SELU's saturation, then all scaled and
    shifted so a zero-mean unit-variance input keeps those statistics. The identity unless
    ``training`` (off by default, as PyTorch's). Any shape -> the same shape."""
    return _alpha_dropout("alpha_dropout", input, p, training, inplace, input.shape, generator)


def feature_alpha_dropout(
    input: Tensor,  # noqa: A002
    p: float = 0.5,
    training: bool = False,
    inplace: bool = False,
    *,
    generator: Generator | None = None,
) -> Tensor:
    """``alpha_dropout`` of whole channels: one draw per (sample, channel) of (N, C, *)."""
    mask_shape = tuple(input.shape[:2]) + (1,) * (input.ndim - 2)
    return _alpha_dropout(
        "feature_alpha_dropout", input, p, training, inplace, mask_shape, generator
    )

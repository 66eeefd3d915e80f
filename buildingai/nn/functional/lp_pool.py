"""Power-average pooling, ``lp_pool1d``, ``lp_pool2d`` and ``lp_pool3d``, with PyTorch's
signatures: the
p-norm of each window, ``(sum of x^p)^(1/p)``, computed as PyTorch does (an average pool of
x^p, times the window's size, to the power 1/p), so p = 1 is sum pooling and a large p nears
max pooling."""

from __future__ import annotations

from ...autograd.tensor import Tensor
from ...functions.elementwise import relu
from ._args import _pair, _single, _triple
from .pool import avg_pool1d, avg_pool2d
from .pool3d import avg_pool3d

__all__ = ["lp_pool1d", "lp_pool2d", "lp_pool3d"]


def _root(averages: Tensor, window: int, norm_type: float) -> Tensor:
    """``(window * averages)^(1/p)``, through PyTorch's ``sign(out) * relu(|out|)`` (which is
    ``out``, with its gradient): a negative average, from negative inputs and odd p, gives NaN
    there and here."""
    return (averages.sign() * relu(averages.abs())).mul(window).pow(1.0 / norm_type)


def lp_pool1d(
    input: Tensor,  # noqa: A002 - PyTorch's name
    norm_type: float,
    kernel_size: int,
    stride=None,
    ceil_mode: bool = False,
) -> Tensor:
    """(N, C, L) or (C, L) -> (N, C, Lo): each window's p-norm, p = ``norm_type``."""
    averages = avg_pool1d(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    size = _single(kernel_size, "kernel_size", "lp_pool1d")
    return _root(averages, size, norm_type)


def lp_pool2d(
    input: Tensor,  # noqa: A002
    norm_type: float,
    kernel_size,
    stride=None,
    ceil_mode: bool = False,
) -> Tensor:
    """(N, C, H, W) or (C, H, W) -> (N, C, Ho, Wo): each window's p-norm, p = ``norm_type``."""
    kh, kw = _pair(kernel_size, "kernel_size", "lp_pool2d")
    averages = avg_pool2d(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    return _root(averages, kh * kw, norm_type)


def lp_pool3d(
    input: Tensor,  # noqa: A002
    norm_type: float,
    kernel_size,
    stride=None,
    ceil_mode: bool = False,
) -> Tensor:
    """(N, C, D, H, W) or (C, D, H, W) -> (N, C, Do, Ho, Wo): each window's p-norm,
    p = ``norm_type``."""
    kd, kh, kw = _triple(kernel_size, "kernel_size", "lp_pool3d")
    averages = avg_pool3d(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    return _root(averages, kd * kh * kw, norm_type)

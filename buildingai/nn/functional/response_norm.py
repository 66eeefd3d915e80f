"""``local_response_norm``, AlexNet's normalisation across neighbouring channels, with
PyTorch's signature and formula: x / (k + alpha * mean of x^2 over ``size`` channels around
it)^beta, the window zero-padded at the first and last channels."""

from __future__ import annotations

from ...autograd.tensor import Tensor
from ...errors import ShapeError
from .pool import avg_pool2d

__all__ = ["local_response_norm"]


def local_response_norm(
    input: Tensor,  # noqa: A002 - PyTorch's name
    size: int,
    alpha: float = 1e-4,
    beta: float = 0.75,
    k: float = 1.0,
) -> Tensor:
    """input (N, C, *) with at least 3 dimensions -> the same shape. The mean of squares runs
    over channels c - size // 2 to c + (size - 1) // 2, as PyTorch's."""
    if input.ndim < 3:
        raise ShapeError(
            f"[local_response_norm] expects an input (N, C, *) of 3 or more dimensions, got "
            f"{tuple(input.shape)}",
            help="add a batch dimension with x.unsqueeze(0)",
        )
    n, c = input.shape[:2]
    # the squares as one-channel images (N, 1, C, rest), averaged over windows along C
    squares = (input * input).reshape(n, 1, c, -1)
    squares = squares.pad(((0, 0), (0, 0), (size // 2, (size - 1) // 2), (0, 0)))
    means = avg_pool2d(squares, (size, 1), stride=1).reshape(tuple(input.shape))
    return input / (means * alpha + k).pow(beta)

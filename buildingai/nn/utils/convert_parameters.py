"""All parameters as one flat vector and back, as ``torch.nn.utils.parameters_to_vector`` /
``vector_to_parameters`` (for second-order methods, evolution strategies, weight averaging)."""

from __future__ import annotations

from collections.abc import Iterable

from ...autograd import Tensor, no_grad
from ...errors import ShapeError
from ...functions import concatenate, reshape


def parameters_to_vector(parameters: Iterable[Tensor]) -> Tensor:
    """Every parameter flattened and joined in order: P tensors -> (sum of their sizes,).
    Differentiable: a gradient of the vector flows back to the parameters."""
    flat = [reshape(p, (-1,)) for p in parameters]
    if not flat:
        raise ShapeError(
            "[parameters_to_vector] got no parameters", help="pass model.parameters() of a model"
        )
    return concatenate(flat, axis=0)


def vector_to_parameters(vector: Tensor, parameters: Iterable[Tensor]) -> None:
    """Copy consecutive slices of ``vector`` (N,) into ``parameters``, in order, in place.

    Each parameter keeps its own memory (PyTorch makes it a view of ``vector``); the copy is
    outside autograd, as PyTorch's. N must equal the parameters' total size.
    """
    if not isinstance(vector, Tensor) or vector.ndim != 1:
        raise ShapeError(
            f"[vector_to_parameters] expects a 1-D Tensor, got "
            f"{tuple(vector.shape) if isinstance(vector, Tensor) else type(vector).__name__}",
            help="pass the vector parameters_to_vector returned (or one of its size)",
        )
    parameters = list(parameters)
    needed = sum(p.numel() for p in parameters)
    if needed != vector.shape[0]:
        raise ShapeError(
            f"[vector_to_parameters] the vector has {vector.shape[0]} elements, the parameters "
            f"{needed}",
            help="the vector must hold exactly one value per parameter element",
        )
    start = 0
    with no_grad():
        for p in parameters:
            size = p.numel()
            p.copy_(reshape(vector[start : start + size], p.shape))
            start += size


__all__ = ["parameters_to_vector", "vector_to_parameters"]

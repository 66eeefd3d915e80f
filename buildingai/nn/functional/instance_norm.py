"""Instance normalisation: each sample's channel normalised over its own positions, as in
``torch.nn.functional.instance_norm``."""

from __future__ import annotations

import math

from ...autograd.tensor import Tensor
from ...errors import ArgumentError, ShapeError
from .norm import (
    _channel_affine,
    _check_channel_parameters,
    _update_running_stats,
    batch_norm,
    standardize,
)


def instance_norm(
    input: Tensor,  # noqa: A002 - PyTorch's argument name
    running_mean: Tensor | None = None,
    running_var: Tensor | None = None,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    use_input_stats: bool = True,
    momentum: float = 0.1,
    eps: float = 1e-5,
) -> Tensor:
    """Normalise every channel of every sample of input (N, C, *) over its positions ``*``
    (mean and biased variance), then scale by ``weight`` and shift by ``bias`` (C,).

    ``use_input_stats=True`` uses each instance's own statistics and, when running statistics
    are given, blends their batch averages into them in place (the variance unbiased), as
    PyTorch does. ``use_input_stats=False`` normalises with ``running_mean`` and
    ``running_var`` instead (evaluation of a layer that tracks them). Returns input's shape.
    """
    if input.ndim < 3:
        raise ShapeError(
            f"[instance_norm] expects input (N, C, *positions) with at least one position "
            f"dimension, got shape {tuple(input.shape)}",
            help="add the batch dimension (x.unsqueeze(0)) to a single (C, L) sample",
        )
    _check_channel_parameters("instance_norm", input, running_mean, running_var, weight, bias)
    if not use_input_stats:
        if running_mean is None or running_var is None:
            raise ArgumentError(
                "[instance_norm] running_mean and running_var are required when "
                "use_input_stats=False",
                help="pass the running statistics, or use_input_stats=True",
            )
        return batch_norm(input, running_mean, running_var, weight, bias, False, momentum, eps)
    if math.prod(input.shape[2:]) <= 1:
        raise ArgumentError(
            f"[instance_norm] expected more than 1 spatial element when training, got input "
            f"size {tuple(input.shape)}",
            help="a single position has no spread to normalise by",
        )
    positions = tuple(range(2, input.ndim))
    out = standardize(input, positions, eps)
    # the statistics blended in: the batch's average of each instance's own
    _update_running_stats(
        input,
        running_mean,
        running_var,
        momentum,
        lambda batch: batch.mean(axis=positions).mean(axis=0),
        lambda batch: batch.var(axis=positions, correction=1).mean(axis=0),
    )
    return _channel_affine(out, weight, bias)


__all__ = ["instance_norm"]

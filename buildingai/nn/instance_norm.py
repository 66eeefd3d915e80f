"""InstanceNorm1d/2d/3d: per-sample, per-channel normalisation (style transfer, GANs), with
PyTorch's arguments, defaults (no affine map, no running statistics) and state-dict names."""

from __future__ import annotations

import warnings

from ..autograd.tensor import Tensor
from ..errors import ShapeError
from .functional.instance_norm import instance_norm
from .norm import _RunningStatsNorm


class _InstanceNorm(_RunningStatsNorm):
    """Shared code of InstanceNorm1d/2d/3d; subclasses give the number of position axes."""

    _positions = 1

    def __init__(
        self,
        num_features: int,
        eps: float = 1e-5,
        momentum: float | None = 0.1,
        affine: bool = False,
        track_running_stats: bool = False,
        device=None,
        dtype=None,
        *,
        bias: bool = True,
    ) -> None:
        super().__init__(
            num_features, eps, momentum, affine, track_running_stats, device, dtype, bias=bias
        )

    def forward(self, x: Tensor) -> Tensor:
        """x: (N, C, *positions) or (C, *positions) -> the same shape."""
        name = type(self).__name__
        unbatched = self._positions + 1
        if x.ndim not in (unbatched, unbatched + 1):
            raise ShapeError(
                f"[{name}] expected {unbatched}D or {unbatched + 1}D input, got {x.ndim}D input "
                f"of shape {tuple(x.shape)}",
                help="the input is (N, C, *positions), or (C, *positions) for one sample",
            )
        channel_axis = x.ndim - unbatched
        if x.shape[channel_axis] != self.num_features:
            if self.affine:
                raise ShapeError(
                    f"[{name}] expected {self.num_features} channels in dimension "
                    f"{channel_axis}, got input of shape {tuple(x.shape)}",
                    help=f"the layer was built for num_features={self.num_features}",
                )
            warnings.warn(
                f"{name}: the input's size at dim={channel_axis} ({x.shape[channel_axis]}) does "
                f"not match num_features ({self.num_features}), which is not used because "
                "affine=False",
                stacklevel=2,
            )
        # Each instance's own statistics in training, or whenever no running ones are kept.
        use_input_stats = self.training or not self.track_running_stats
        momentum = 0.0 if self.momentum is None else self.momentum
        batched = x if x.ndim == unbatched + 1 else x.unsqueeze(0)
        out = instance_norm(
            batched,
            self.running_mean,
            self.running_var,
            self.weight,
            self.bias,
            use_input_stats,
            momentum,
            self.eps,
        )
        return out if x.ndim == unbatched + 1 else out.squeeze(0)


class InstanceNorm1d(_InstanceNorm):
    """Instance normalisation of (N, C, L) or (C, L) inputs: each sample's channel over L."""

    _positions = 1


class InstanceNorm2d(_InstanceNorm):
    """Instance normalisation of (N, C, H, W) or (C, H, W) inputs: each sample's channel over
    H and W."""

    _positions = 2


class InstanceNorm3d(_InstanceNorm):
    """Instance normalisation of (N, C, D, H, W) or (C, D, H, W) inputs."""

    _positions = 3


__all__ = ["InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d"]

"""Normalisation layers: LayerNorm, RMSNorm, BatchNorm1d/2d/3d and GroupNorm.

Parameter and buffer names, shapes and defaults are PyTorch's (``weight``, ``bias``,
``running_mean``, ``running_var``, ``num_batches_tracked``), so state dicts move both ways.
"""

from __future__ import annotations

from ..autograd.mode import no_grad
from ..autograd.tensor import Tensor
from ..errors import ShapeError
from . import functional as F
from . import init
from ._utils import full_array
from .functional.norm import _shape_tuple
from .module import Module
from .parameter import Parameter


class _AffineNorm(Module):
    """A normalisation with an optional learned per-feature scale ``weight`` (starting at ones)
    and shift ``bias`` (starting at zeros)."""

    def _register_affine(
        self, shape: tuple[int, ...], affine: bool, bias: bool, dtype, device
    ) -> None:
        """``weight`` and ``bias`` of ``shape`` (registered as None when absent: no ``affine``,
        or no ``bias``)."""
        if affine:
            self.weight = Parameter(full_array(shape, 1.0, dtype, device))
            if bias:
                self.bias = Parameter(full_array(shape, 0.0, dtype, device))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)

    def reset_parameters(self) -> None:
        """Weight back to ones, bias back to zeros."""
        if self.weight is not None:
            init.ones_(self.weight)
        if self.bias is not None:
            init.zeros_(self.bias)


class LayerNorm(_AffineNorm):
    """Layer normalisation over the trailing ``normalized_shape`` dimensions, with a learned
    per-element ``weight`` (ones) and ``bias`` (zeros) when ``elementwise_affine``.

    x: (*, *normalized_shape) -> same shape.
    """

    def __init__(
        self,
        normalized_shape,
        eps: float = 1e-5,
        elementwise_affine: bool = True,
        bias: bool = True,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__()
        self.normalized_shape = _shape_tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        self._register_affine(self.normalized_shape, elementwise_affine, bias, dtype, device)

    def forward(self, x: Tensor) -> Tensor:
        return F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (
            f"{self.normalized_shape}, eps={self.eps}, "
            f"elementwise_affine={self.elementwise_affine}, bias={self.bias is not None}"
        )


class RMSNorm(Module):
    """Root-mean-square normalisation ``x / sqrt(mean(x^2) + eps) * weight`` over the trailing
    ``normalized_shape`` dimensions; ``eps=None`` uses the dtype's machine epsilon.

    x: (*, *normalized_shape) -> same shape.
    """

    def __init__(
        self,
        normalized_shape,
        eps: float | None = None,
        elementwise_affine: bool = True,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__()
        self.normalized_shape = _shape_tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(full_array(self.normalized_shape, 1.0, dtype, device))
        else:
            self.register_parameter("weight", None)

    def reset_parameters(self) -> None:
        """Weight back to ones."""
        if self.weight is not None:
            init.ones_(self.weight)

    def forward(self, x: Tensor) -> Tensor:
        return F.rms_norm(x, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self) -> str:
        return (
            f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"
        )


class _RunningStatsNorm(_AffineNorm):
    """A per-channel normalisation of (N, C, *) inputs that can keep running statistics:
    PyTorch's ``num_features``, ``eps``, ``momentum``, ``affine`` and ``track_running_stats``
    arguments and its buffers ``running_mean`` (C,), ``running_var`` (C,) and
    ``num_batches_tracked`` () (registered as None without ``track_running_stats``).

    Shared by BatchNorm and InstanceNorm, which differ only in their defaults and forward."""

    def __init__(
        self,
        num_features: int,
        eps: float,
        momentum: float | None,
        affine: bool,
        track_running_stats: bool,
        device,
        dtype,
        *,
        bias: bool,
    ) -> None:
        super().__init__()
        self.num_features = num_features
        self.eps = eps
        self.momentum = momentum
        self.affine = affine
        self.track_running_stats = track_running_stats
        shape = (num_features,)
        self._register_affine(shape, affine, bias, dtype, device)
        if track_running_stats:
            self.register_buffer("running_mean", Tensor(full_array(shape, 0.0, dtype, device)))
            self.register_buffer("running_var", Tensor(full_array(shape, 1.0, dtype, device)))
            count = full_array((), 0, "int64", device)
            self.register_buffer("num_batches_tracked", Tensor(count))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)

    def reset_running_stats(self) -> None:
        """Running mean to zeros, running variance to ones, batch count to zero."""
        if self.track_running_stats:
            with no_grad():
                self.running_mean.zero_()
                self.running_var.fill_(1.0)
                self.num_batches_tracked.zero_()

    def reset_parameters(self) -> None:
        """Reset the running statistics, weight to ones and bias to zeros."""
        self.reset_running_stats()
        super().reset_parameters()

    def extra_repr(self) -> str:
        return (
            f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
            f"affine={self.affine}, bias={self.bias is not None}, "
            f"track_running_stats={self.track_running_stats}"
        )


class _BatchNorm(_RunningStatsNorm):
    """Shared code of BatchNorm1d/2d/3d; subclasses name the input ranks they accept."""

    _input_ranks: tuple[int, ...] = ()

    def __init__(
        self,
        num_features: int,
        eps: float = 1e-5,
        momentum: float | None = 0.1,
        affine: bool = True,
        track_running_stats: bool = True,
        device=None,
        dtype=None,
        *,
        bias: bool = True,
    ) -> None:
        super().__init__(
            num_features, eps, momentum, affine, track_running_stats, device, dtype, bias=bias
        )

    def forward(self, x: Tensor) -> Tensor:
        if x.ndim not in self._input_ranks:
            expected = " or ".join(f"{rank}D" for rank in self._input_ranks)
            raise ShapeError(
                f"[{type(self).__name__}] expected {expected} input, got {x.ndim}D input of "
                f"shape {tuple(x.shape)}",
                help="the input is (N, C) or (N, C, L) for BatchNorm1d, (N, C, H, W) for "
                "BatchNorm2d and (N, C, D, H, W) for BatchNorm3d",
            )
        if x.shape[1] != self.num_features:
            raise ShapeError(
                f"[{type(self).__name__}] expected {self.num_features} channels in dimension 1, "
                f"got input of shape {tuple(x.shape)}",
                help=f"the layer was built for num_features={self.num_features}",
            )
        # momentum=None: a cumulative average, each batch weighted 1 / batches seen so far
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            with no_grad():
                self.num_batches_tracked.add_(1)
            if self.momentum is None:
                factor = 1.0 / float(self.num_batches_tracked.item())
        # Batch statistics when training, or when there are no running statistics to use.
        use_batch = self.training or (self.running_mean is None and self.running_var is None)
        keep_stats = not self.training or self.track_running_stats
        return F.batch_norm(
            x,
            self.running_mean if keep_stats else None,
            self.running_var if keep_stats else None,
            self.weight,
            self.bias,
            use_batch,
            factor,
            self.eps,
        )


class BatchNorm1d(_BatchNorm):
    """Batch normalisation of (N, C) or (N, C, L) inputs per channel C."""

    _input_ranks = (2, 3)


class BatchNorm2d(_BatchNorm):
    """Batch normalisation of (N, C, H, W) inputs per channel C."""

    _input_ranks = (4,)


class BatchNorm3d(_BatchNorm):
    """Batch normalisation of (N, C, D, H, W) inputs per channel C."""

    _input_ranks = (5,)


class GroupNorm(_AffineNorm):
    """Group normalisation: the channels of (N, C, *) split into ``num_groups`` groups, each
    normalised per sample; learned per-channel ``weight`` (ones) and ``bias`` (zeros) when
    ``affine``."""

    def __init__(
        self,
        num_groups: int,
        num_channels: int,
        eps: float = 1e-5,
        affine: bool = True,
        device=None,
        dtype=None,
        *,
        bias: bool = True,
    ) -> None:
        super().__init__()
        if num_groups <= 0 or num_channels % num_groups:
            raise ValueError(
                f"num_channels ({num_channels}) must be divisible by num_groups ({num_groups})"
            )
        self.num_groups = num_groups
        self.num_channels = num_channels
        self.eps = eps
        self.affine = affine
        self._register_affine((num_channels,), affine, bias, dtype, device)

    def forward(self, x: Tensor) -> Tensor:
        return F.group_norm(x, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (
            f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, "
            f"bias={self.bias is not None}"
        )


__all__ = ["LayerNorm", "RMSNorm", "BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "GroupNorm"]

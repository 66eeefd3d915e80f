"""Folding an evaluation-mode BatchNorm into the convolution or linear layer before it
(``torch.nn.utils.fusion``): ``bn(conv(x)) == fused_conv(x)``, one layer instead of two at
inference.

In eval mode BatchNorm is the per-channel affine map y = (x - mean) * scale + beta with
scale = gamma / sqrt(var + eps), so the layer's weight is scaled by ``scale`` along its output
channels and its bias becomes (b - mean) * scale + beta.
"""

from __future__ import annotations

import copy
from typing import TypeVar

from ...autograd.tensor import Tensor
from ...errors import ArgumentError, ShapeError
from ...functions.creation import ones_like, zeros_like
from ..module import Module
from ..parameter import Parameter

__all__ = [
    "fuse_conv_bn_eval",
    "fuse_conv_bn_weights",
    "fuse_linear_bn_eval",
    "fuse_linear_bn_weights",
]

ConvT = TypeVar("ConvT", bound=Module)
LinearT = TypeVar("LinearT", bound=Module)


def _check_eval_with_statistics(layer: Module, bn: Module, function: str) -> None:
    if layer.training or bn.training:
        raise ArgumentError(
            f"[{function}] fusion is only for eval mode: {type(layer).__name__}.training="
            f"{layer.training}, {type(bn).__name__}.training={bn.training}",
            help="call .eval() on both modules first",
        )
    if bn.running_mean is None or bn.running_var is None:
        raise ArgumentError(
            f"[{function}] {type(bn).__name__} has no running statistics to fold",
            help="build the BatchNorm with track_running_stats=True",
        )


def fuse_conv_bn_eval(conv: ConvT, bn: Module, transpose: bool = False) -> ConvT:
    """A new convolution (a deep copy of ``conv``) computing ``bn(conv(x))`` for the
    eval-mode ``conv`` and ``bn``: x (N, C_in, *) -> (N, C_out, *). ``transpose=True`` for a
    transposed convolution, whose weight holds the output channels in dimension 1."""
    _check_eval_with_statistics(conv, bn, "fuse_conv_bn_eval")
    fused_conv = copy.deepcopy(conv)
    fused_conv.weight, fused_conv.bias = fuse_conv_bn_weights(
        fused_conv.weight,
        fused_conv.bias,
        bn.running_mean,
        bn.running_var,
        bn.eps,
        bn.weight,
        bn.bias,
        transpose,
    )
    return fused_conv


def fuse_conv_bn_weights(
    conv_w: Tensor,
    conv_b: Tensor | None,
    bn_rm: Tensor,
    bn_rv: Tensor,
    bn_eps: float,
    bn_w: Tensor | None,
    bn_b: Tensor | None,
    transpose: bool = False,
) -> tuple[Parameter, Parameter]:
    """The weight and bias of a convolution computing BatchNorm(conv(x)) in eval mode:
    conv_w (C_out, C_in/groups, *k) (or (C_in, C_out/groups, *k) with ``transpose``),
    conv_b / bn_* (C_out,) -> (weight like conv_w, bias (C_out,)), as Parameters of
    conv_w's and conv_b's dtypes (a missing conv_b counts as zeros, which do not train)."""
    weight_dtype = conv_w.dtype
    bias_dtype = conv_b.dtype if conv_b is not None else weight_dtype
    if conv_b is None:
        conv_b = zeros_like(bn_rm)
    if bn_w is None:
        bn_w = ones_like(bn_rm)
    if bn_b is None:
        bn_b = zeros_like(bn_rm)
    bn_var_rsqrt = (bn_rv + bn_eps).rsqrt()
    # the per-channel scale along the output channels: (C_out, 1, 1...) or (1, C_out, 1...)
    spread = [1] * (conv_w.ndim - 2)
    shape = [1, -1, *spread] if transpose else [-1, 1, *spread]
    fused_w = (conv_w * (bn_w * bn_var_rsqrt).reshape(shape)).to(weight_dtype)
    fused_b = ((conv_b - bn_rm) * bn_var_rsqrt * bn_w + bn_b).to(bias_dtype)
    return (
        Parameter(fused_w.detach(), requires_grad=conv_w.requires_grad),
        Parameter(fused_b.detach(), requires_grad=conv_b.requires_grad),
    )


def fuse_linear_bn_eval(linear: LinearT, bn: Module) -> LinearT:
    """A new Linear (a deep copy of ``linear``) computing ``bn(linear(x))`` for the eval-mode
    ``linear`` and ``bn``: x (N, in) -> (N, out). ``bn.num_features`` must be
    ``linear.out_features`` or 1."""
    _check_eval_with_statistics(linear, bn, "fuse_linear_bn_eval")
    if linear.out_features != bn.num_features and bn.num_features != 1:
        raise ShapeError(
            f"[fuse_linear_bn_eval] to fuse, linear.out_features == bn.num_features or "
            f"bn.num_features == 1, got linear.out_features={linear.out_features} and "
            f"bn.num_features={bn.num_features}"
        )
    fused_linear = copy.deepcopy(linear)
    fused_linear.weight, fused_linear.bias = fuse_linear_bn_weights(
        fused_linear.weight,
        fused_linear.bias,
        bn.running_mean,
        bn.running_var,
        bn.eps,
        bn.weight,
        bn.bias,
    )
    return fused_linear


def fuse_linear_bn_weights(
    linear_w: Tensor,
    linear_b: Tensor | None,
    bn_rm: Tensor,
    bn_rv: Tensor,
    bn_eps: float,
    bn_w: Tensor | None,
    bn_b: Tensor | None,
) -> tuple[Parameter, Parameter]:
    """The weight and bias of a Linear computing BatchNorm(linear(x)) in eval mode:
    linear_w (out, in), linear_b / bn_* (out,) or bn_* (1,) -> (weight (out, in), bias (out,)),
    as Parameters of linear_w's and linear_b's dtypes (a missing linear_b counts as zeros,
    which do not train)."""
    weight_dtype = linear_w.dtype
    bias_dtype = linear_b.dtype if linear_b is not None else weight_dtype
    if linear_b is None:
        linear_b = zeros_like(bn_rm)
    if bn_w is None:
        bn_w = ones_like(bn_rm)
    if bn_b is None:
        bn_b = zeros_like(bn_rm)
    bn_scale = bn_w * (bn_rv + bn_eps).rsqrt()
    fused_w = linear_w * bn_scale.unsqueeze(-1).to(weight_dtype)
    fused_b = ((linear_b - bn_rm) * bn_scale + bn_b).to(bias_dtype)
    return (
        Parameter(fused_w.detach(), requires_grad=linear_w.requires_grad),
        Parameter(fused_b.detach(), requires_grad=linear_b.requires_grad),
    )

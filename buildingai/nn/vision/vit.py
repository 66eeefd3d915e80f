"""The Vision Transformer encoder (Dosovitskiy et al., 2021): images cut into patches, each
patch a token, then a stack of pre-norm Transformer encoder layers."""

from __future__ import annotations

import numpy as np

from ... import functions
from ...autograd.tensor import Tensor
from ...backend import device as _device
from ...backend.dtypes import as_dtype, get_default_dtype
from ...errors import ArgumentError, ShapeError
from .. import init
from ..containers import ModuleList
from ..conv import Conv2d
from ..dropout import Dropout
from ..module import Module
from ..norm import LayerNorm
from ..parameter import Parameter
from ..transformer import TransformerEncoderLayer


def _pair(value, name: str) -> tuple[int, int]:
    pair = (value, value) if isinstance(value, int) else tuple(value)
    if len(pair) != 2 or not all(isinstance(v, int) and v >= 1 for v in pair):
        raise ArgumentError(
            f"[VisionTransformer] {name} must be a positive int or a pair (height, width), "
            f"got {value!r}"
        )
    return pair


def _zeros_parameter(shape: tuple[int, ...], dtype, device) -> Parameter:
    array = np.zeros(shape, get_default_dtype() if dtype is None else as_dtype(dtype))
    if device is not None:
        array = _device.to_device(array, _device.Device(device))
    return Parameter(array)


class VisionTransformer(Module):
    """ViT encoder: images (N, channels, H, W) -> token features (N, T, dim).

    The image (``image_size``: int or (H, W)) is cut into non-overlapping ``patch_size``
    patches, each projected to ``dim`` by ``patch_embed`` (a Conv2d whose kernel and stride are
    the patch size). With ``class_token`` a learned token is put first, so
    T = (H / p_h) * (W / p_w) + 1 (without it T is the patch count). Learned
    ``pos_embedding`` (1, T, dim) is added, then ``dropout``, then ``depth`` pre-norm
    ``TransformerEncoderLayer`` s (``heads`` heads, feed-forward width ``mlp_dim``, GELU,
    ``dropout`` inside) and a final ``norm`` (LayerNorm). Layer norms use eps 1e-6, as ViT.

    Attributes: ``dim`` and ``out_channels`` (the feature size, so any head built for an
    encoder's ``out_channels`` fits), ``num_patches``, ``num_tokens``, ``grid`` (patch rows,
    columns). Sub-modules: ``patch_embed``, ``dropout``, ``layers.0`` ..., ``norm``; parameters
    ``class_token`` (1, 1, dim) and ``pos_embedding`` (1, T, dim).
    """

    def __init__(
        self,
        image_size,
        patch_size,
        dim: int,
        depth: int,
        heads: int,
        mlp_dim: int,
        channels: int = 3,
        dropout: float = 0.0,
        class_token: bool = True,
        *,
        dtype=None,
        device=None,
    ) -> None:
        super().__init__()
        image_size = _pair(image_size, "image_size")
        patch_size = _pair(patch_size, "patch_size")
        if image_size[0] % patch_size[0] or image_size[1] % patch_size[1]:
            raise ArgumentError(
                f"[VisionTransformer] image_size {image_size} is not divisible by patch_size "
                f"{patch_size}",
                help="choose a patch size that tiles the image exactly (e.g. 4 or 8 for 32x32)",
            )
        if not isinstance(depth, int) or depth < 1:
            raise ArgumentError(f"[VisionTransformer] depth must be at least 1, got {depth!r}")
        if dim % heads:
            raise ArgumentError(
                f"[VisionTransformer] dim={dim} is not divisible by heads={heads}",
                help="each head gets dim / heads features; pick heads dividing dim",
            )
        options = {"dtype": dtype, "device": device}
        self.image_size = image_size
        self.patch_size = patch_size
        self.dim = dim
        self.out_channels = dim
        self.depth = depth
        self.heads = heads
        self.mlp_dim = mlp_dim
        self.channels = channels
        self.grid = (image_size[0] // patch_size[0], image_size[1] // patch_size[1])
        self.num_patches = self.grid[0] * self.grid[1]
        self.num_tokens = self.num_patches + (1 if class_token else 0)

        self.patch_embed = Conv2d(channels, dim, patch_size, stride=patch_size, **options)
        if class_token:
            self.class_token = _zeros_parameter((1, 1, dim), dtype, device)
        else:
            self.register_parameter("class_token", None)
        self.pos_embedding = _zeros_parameter((1, self.num_tokens, dim), dtype, device)
        self.dropout = Dropout(dropout)
        # Built one by one (not deep copies of one layer) so each starts from its own draw.
        self.layers = ModuleList(
            TransformerEncoderLayer(
                dim,
                heads,
                dim_feedforward=mlp_dim,
                dropout=dropout,
                activation="gelu",
                layer_norm_eps=1e-6,
                batch_first=True,
                norm_first=True,
                **options,
            )  # fmt: skip
            for _ in range(depth)
        )
        self.norm = LayerNorm(dim, eps=1e-6, **options)
        self._reset_parameters()

    def _reset_parameters(self) -> None:
        # ViT's initialisation: positions N(0, 0.02^2), class token zero, the patch projection
        # LeCun-normal (truncated, std sqrt(1 / fan_in)); the encoder layers keep their own.
        init.normal_(self.pos_embedding, 0.0, 0.02)
        if self.class_token is not None:
            init.zeros_(self.class_token)
        fan_in = self.channels * self.patch_size[0] * self.patch_size[1]
        std = (1.0 / fan_in) ** 0.5
        init.trunc_normal_(self.patch_embed.weight, 0.0, std, -2 * std, 2 * std)
        init.zeros_(self.patch_embed.bias)

    def forward(self, images: Tensor) -> Tensor:
        expected = (self.channels, *self.image_size)
        if images.ndim != 4 or tuple(images.shape[1:]) != expected:
            raise ShapeError(
                f"[VisionTransformer] expected images (N, {expected[0]}, {expected[1]}, "
                f"{expected[2]}), got shape {tuple(images.shape)}",
                help="the learned positions fix the image size: resize the images, or build "
                f"the model with image_size={tuple(images.shape[-2:])} (channels-last images "
                "go through ImagePreprocessor(channels_last=True) first)",
            )
        batch = images.shape[0]
        x = self.patch_embed(images)  # (N, dim, H / p, W / p)
        x = x.flatten(2).transpose(1, 2)  # (N, num_patches, dim), patches in row-major order
        if self.class_token is not None:
            first = self.class_token.expand(batch, 1, self.dim)  # (N, 1, dim)
            x = functions.concatenate([first, x], axis=1)  # (N, T, dim)
        x = self.dropout(x + self.pos_embedding)
        for layer in self.layers:
            x = layer(x)
        return self.norm(x)  # (N, T, dim)

    def extra_repr(self) -> str:
        return (
            f"image_size={self.image_size}, patch_size={self.patch_size}, dim={self.dim}, "
            f"depth={self.depth}, heads={self.heads}, mlp_dim={self.mlp_dim}, "
            f"channels={self.channels}, class_token={self.class_token is not None}"
        )


__all__ = ["VisionTransformer"]

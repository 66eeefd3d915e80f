"""``ImagePreprocessor``: raw image batches to the normalised float tensors encoders expect."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ...autograd.tensor import Tensor
from ...backend import device as _device
from ...backend.dtypes import as_dtype, get_default_dtype, is_floating
from ...errors import ArgumentError, DTypeError, ShapeError
from ..module import Module

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)


def _constant(values, dtype, device) -> Tensor:
    array = np.asarray(values, dtype=get_default_dtype() if dtype is None else as_dtype(dtype))
    if device is not None:
        array = _device.to_device(array, _device.Device(device))
    return Tensor(array)


class ImagePreprocessor(Module):
    """Images in, encoder input out: layout, scale and per-channel normalisation.

    images: (N, C, H, W), or (N, H, W, C) with ``channels_last=True``; an unbatched image
    (C, H, W) / (H, W, C) works too. -> (N, C, H, W) floats (unbatched: (C, H, W)).

    1. ``channels_last``: move the channel axis from last to second (NHWC -> NCHW; a view).
    2. uint8 images are scaled to [0, 1] (divided by 255) in the module's float dtype; float
       images are taken to be in [0, 1] already and are not scaled.
    3. ``normalize``: ``(x - mean) / std`` per channel. ``mean`` and ``std`` (one value per
       channel; ImageNet's by default) are buffers, not parameters: saved in ``state_dict``,
       moved and cast by ``to``, never trained.
    """

    def __init__(
        self,
        normalize: bool = True,
        mean: Sequence[float] = IMAGENET_MEAN,
        std: Sequence[float] = IMAGENET_STD,
        channels_last: bool = False,
        *,
        dtype=None,
        device=None,
    ) -> None:
        super().__init__()
        self.normalize = normalize
        self.channels_last = channels_last
        # 255 as a (not saved) buffer: its dtype, which follows `to`, is the float dtype uint8
        # images become; 255 is exact in every float dtype, so x / 255 is correctly rounded.
        self.register_buffer("pixel_max", _constant(255.0, dtype, device), persistent=False)
        if normalize:
            mean, std = tuple(float(m) for m in mean), tuple(float(s) for s in std)
            if len(mean) != len(std) or not mean:
                raise ArgumentError(
                    f"[ImagePreprocessor] mean and std need one value per channel: got "
                    f"{len(mean)} mean(s) and {len(std)} std(s)",
                    help="e.g. mean=(0.5,), std=(0.5,) for grayscale images",
                )
            if not all(s > 0 for s in std):
                raise ArgumentError(
                    f"[ImagePreprocessor] every std must be positive, got std={std}",
                    help="std divides the centred pixels; a zero std would give inf",
                )
            self.register_buffer("mean", _constant(mean, dtype, device))
            self.register_buffer("std", _constant(std, dtype, device))
        else:
            self.register_buffer("mean", None)
            self.register_buffer("std", None)

    def forward(self, images: Tensor) -> Tensor:
        if images.ndim not in (3, 4):
            layout = "(N, H, W, C)" if self.channels_last else "(N, C, H, W)"
            raise ShapeError(
                f"[ImagePreprocessor] expected images {layout} (or one unbatched image), got "
                f"shape {tuple(images.shape)}",
                help="a grayscale batch (N, H, W) needs a channel axis: images.unsqueeze(1)",
            )
        x = images
        if self.channels_last:
            x = x.permute(0, 3, 1, 2) if x.ndim == 4 else x.permute(2, 0, 1)
        if x.dtype == np.uint8:
            x = x.astype(self.pixel_max.dtype) / self.pixel_max
        elif not is_floating(x.dtype):
            raise DTypeError(
                f"[ImagePreprocessor] expected uint8 images (0..255) or floats in [0, 1], got "
                f"{x.dtype}",
                help="convert first: images.astype(buildingai.uint8) for 8-bit pixel values, or "
                "to float divided by the maximum value",
            )
        if self.normalize:
            channels = x.shape[-3]
            if channels != self.mean.shape[0]:
                raise ShapeError(
                    f"[ImagePreprocessor] images have {channels} channels (shape "
                    f"{tuple(images.shape)}, channels_last={self.channels_last}) but mean and "
                    f"std have {self.mean.shape[0]}",
                    help="give one mean and std per channel, or set channels_last to match the "
                    "image layout",
                )
            x = (x - self.mean.reshape(-1, 1, 1)) / self.std.reshape(-1, 1, 1)
        return x

    def extra_repr(self) -> str:
        text = f"normalize={self.normalize}"
        if self.normalize:
            mean = tuple(round(float(m), 4) for m in self.mean.numpy())
            std = tuple(round(float(s), 4) for s in self.std.numpy())
            text += f", mean={mean}, std={std}"
        return text + f", channels_last={self.channels_last}"


__all__ = ["ImagePreprocessor", "IMAGENET_MEAN", "IMAGENET_STD"]

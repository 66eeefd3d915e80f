"""Image transforms on NumPy arrays, composable with ``Compose``.

Layout: ``ToTensor`` turns an ``(H, W, C)`` (or ``(H, W)``) uint8 image into a ``(C, H, W)``
float32 array in [0, 1]; every other transform reads the last two axes as height and width, so it
works on ``(C, H, W)`` and ``(H, W)`` arrays alike. Results stay NumPy arrays (cheap to move
between processes); the DataLoader's collate turns batches into Tensors.

Randomness: a random transform draws from its ``generator`` (a ``buildingai.Generator``) when one
is given, else from NumPy's global generator (``np.random``), which every DataLoader worker seeds
with its own reproducible seed. Pass a generator for a stream that does not depend on workers.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..backend.random import Generator
from ..errors import BuildingAIError, DTypeError, ShapeError


def _random_source(generator: Generator | None):
    """The NumPy generator to draw from: the explicit one, or NumPy's global (worker-seeded)."""
    return np.random if generator is None else generator.backend_generator()


def _uniform(generator: Generator | None) -> float:
    source = _random_source(generator)
    return float(source.random()) if generator is not None else float(source.random_sample())


def _integer(generator: Generator | None, high: int) -> int:
    """A uniform integer in [0, high]."""
    source = _random_source(generator)
    if generator is not None:
        return int(source.integers(0, high + 1))
    return int(source.randint(0, high + 1))


def _check_image(name: str, image: np.ndarray, min_ndim: int = 2) -> None:
    if not isinstance(image, np.ndarray) or image.ndim < min_ndim:
        shape = getattr(image, "shape", type(image).__name__)
        raise ShapeError(
            f"[{name}] expects a NumPy array with height and width as its last two axes, "
            f"got {shape}",
            help="convert images with ToTensor() first: (H, W, C) uint8 -> (C, H, W) float32",
        )


class Compose:
    """Apply transforms one after another: ``Compose([ToTensor(), Normalize(m, s)])``."""

    def __init__(self, transforms: Sequence[Callable[[Any], Any]]) -> None:
        self.transforms = list(transforms)

    def __call__(self, image: Any) -> Any:
        for transform in self.transforms:
            image = transform(image)
        return image

    def __repr__(self) -> str:
        inner = "".join(f"\n    {transform!r}," for transform in self.transforms)
        return f"Compose([{inner}\n])"


class ToTensor:
    """``(H, W, C)`` or ``(H, W)`` image -> ``(C, H, W)`` float32 array.

    uint8 values are scaled to [0, 1] (divided by 255); floating images keep their values. The
    name follows torchvision; the result is a NumPy array in tensor layout.
    """

    def __call__(self, image: np.ndarray) -> np.ndarray:
        image = np.asarray(image)
        if image.ndim == 2:
            image = image[:, :, None]
        if image.ndim != 3:
            raise ShapeError(
                f"[ToTensor] expects an (H, W, C) or (H, W) image, got shape {image.shape}",
                help="for a batch of images apply the transform per item in the Dataset",
            )
        chw = image.transpose(2, 0, 1)
        if image.dtype == np.uint8:
            return np.multiply(chw, np.float32(1 / 255), dtype=np.float32)
        if image.dtype.kind == "f":
            return np.ascontiguousarray(chw, dtype=np.float32)
        raise DTypeError(
            f"[ToTensor] expects uint8 or floating images, got {image.dtype}",
            help="convert first, e.g. image.astype(np.uint8)",
        )

    def __repr__(self) -> str:
        return "ToTensor()"


class Normalize:
    """``(image - mean[c]) / std[c]`` per channel of a ``(C, H, W)`` float image.

    ``mean`` and ``std`` are sequences of ``C`` numbers (or single numbers for every channel).
    """

    def __init__(self, mean: Sequence[float] | float, std: Sequence[float] | float) -> None:
        self.mean = np.atleast_1d(np.asarray(mean, dtype=np.float32))
        self.std = np.atleast_1d(np.asarray(std, dtype=np.float32))
        if self.mean.ndim != 1 or self.std.ndim != 1 or self.mean.shape != self.std.shape:
            raise ShapeError(
                f"[Normalize] mean and std must be equally long 1-D sequences, got shapes "
                f"{self.mean.shape} and {self.std.shape}",
                help="one value per channel, e.g. Normalize((0.1307,), (0.3081,))",
            )
        if np.any(self.std == 0):
            raise BuildingAIError(
                f"[Normalize] std must be non-zero, got {self.std.tolist()}",
                help="std is the per-channel standard deviation of the training images",
            )
        # Stored as a multiply-add: (x - mean) / std == x * (1/std) - mean/std
        self._scale = (1.0 / self.std)[:, None, None]
        self._shift = (self.mean / self.std)[:, None, None]

    def __call__(self, image: np.ndarray) -> np.ndarray:
        _check_image("Normalize", image, min_ndim=3)
        channels = image.shape[-3]
        if len(self.mean) not in (1, channels):
            raise ShapeError(
                f"[Normalize] image of shape {image.shape} has {channels} channels but mean/std "
                f"have {len(self.mean)} values",
                help="give one mean and one std per channel",
            )
        dtype = image.dtype if image.dtype.kind == "f" else np.float32
        out = np.multiply(image, self._scale, dtype=dtype)
        out -= self._shift
        return out

    def __repr__(self) -> str:
        return f"Normalize(mean={self.mean.tolist()}, std={self.std.tolist()})"


def _pair(size: int | Sequence[int], name: str) -> tuple[int, int]:
    if isinstance(size, numbers.Integral):
        return int(size), int(size)
    if len(size) == 2:
        return int(size[0]), int(size[1])
    raise BuildingAIError(f"[{name}] size must be an int or (height, width), got {size!r}")


class RandomCrop:
    """Crop a random ``size`` window (the same for every channel) out of the last two axes.

    ``padding`` pads the borders first: an int for all four sides, ``(left/right, top/bottom)``
    or ``(left, top, right, bottom)``, with ``fill`` (``padding_mode="constant"``) or by
    ``"edge"``/``"reflect"``/``"symmetric"`` padding. ``pad_if_needed`` pads images smaller
    than ``size``. CIFAR-style augmentation: ``RandomCrop(32, padding=4)``.
    """

    def __init__(
        self,
        size: int | Sequence[int],
        padding: int | Sequence[int] | None = None,
        pad_if_needed: bool = False,
        fill: float = 0,
        padding_mode: str = "constant",
        generator: Generator | None = None,
    ) -> None:
        self.size = _pair(size, "RandomCrop")
        if padding_mode not in ("constant", "edge", "reflect", "symmetric"):
            raise BuildingAIError(
                f"[RandomCrop] unknown padding_mode {padding_mode!r}",
                help="use 'constant', 'edge', 'reflect' or 'symmetric'",
            )
        self.padding = self._sides(padding)
        self.pad_if_needed = pad_if_needed
        self.fill = fill
        self.padding_mode = padding_mode
        self.generator = generator

    @staticmethod
    def _sides(padding) -> tuple[int, int, int, int]:
        """(left, top, right, bottom)."""
        if padding is None:
            return (0, 0, 0, 0)
        if isinstance(padding, numbers.Integral):
            return (int(padding),) * 4
        if len(padding) == 2:
            return (int(padding[0]), int(padding[1])) * 2
        if len(padding) == 4:
            return tuple(int(p) for p in padding)
        raise BuildingAIError(
            f"[RandomCrop] padding must be an int, 2 or 4 ints, got {padding!r}",
            help="(left, top, right, bottom), or one value for all sides",
        )

    def _pad(self, image: np.ndarray, left: int, top: int, right: int, bottom: int) -> np.ndarray:
        widths = [(0, 0)] * (image.ndim - 2) + [(top, bottom), (left, right)]
        if self.padding_mode == "constant":
            return np.pad(image, widths, mode="constant", constant_values=self.fill)
        return np.pad(image, widths, mode=self.padding_mode)

    def __call__(self, image: np.ndarray) -> np.ndarray:
        _check_image("RandomCrop", image)
        if any(self.padding):
            image = self._pad(image, *self.padding)
        height, width = image.shape[-2:]
        crop_height, crop_width = self.size
        if self.pad_if_needed and (height < crop_height or width < crop_width):
            extra_h, extra_w = max(0, crop_height - height), max(0, crop_width - width)
            image = self._pad(image, extra_w, extra_h, extra_w, extra_h)
            height, width = image.shape[-2:]
        if height < crop_height or width < crop_width:
            raise ShapeError(
                f"[RandomCrop] crop {self.size} is larger than the (padded) image "
                f"{(height, width)} of shape {image.shape}",
                help="use a smaller size, padding=..., or pad_if_needed=True",
            )
        top = _integer(self.generator, height - crop_height)
        left = _integer(self.generator, width - crop_width)
        return image[..., top : top + crop_height, left : left + crop_width]

    def __repr__(self) -> str:
        return f"RandomCrop(size={self.size}, padding={self.padding})"


class RandomHorizontalFlip:
    """Mirror the image left-right (last axis) with probability ``p``."""

    def __init__(self, p: float = 0.5, generator: Generator | None = None) -> None:
        if not 0.0 <= p <= 1.0:
            raise BuildingAIError(f"[RandomHorizontalFlip] p must be in [0, 1], got {p}")
        self.p = p
        self.generator = generator

    def __call__(self, image: np.ndarray) -> np.ndarray:
        _check_image("RandomHorizontalFlip", image)
        if _uniform(self.generator) < self.p:
            return image[..., ::-1]
        return image

    def __repr__(self) -> str:
        return f"RandomHorizontalFlip(p={self.p})"


class Lambda:
    """Wrap any function as a transform: ``Lambda(lambda x: x * 2)``."""

    def __init__(self, function: Callable[[Any], Any]) -> None:
        if not callable(function):
            raise BuildingAIError(f"[Lambda] needs a callable, got {type(function).__name__}")
        self.function = function

    def __call__(self, image: Any) -> Any:
        return self.function(image)

    def __repr__(self) -> str:
        return f"Lambda({getattr(self.function, '__name__', 'function')})"


__all__ = [
    "Compose",
    "Lambda",
    "Normalize",
    "RandomCrop",
    "RandomHorizontalFlip",
    "ToTensor",
]

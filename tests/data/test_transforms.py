"""Image transforms on NumPy arrays, compared with torchvision-style references."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import buildingai as bai
from buildingai.data.transforms import (
    Compose,
    Lambda,
    Normalize,
    RandomCrop,
    RandomHorizontalFlip,
    ToTensor,
)
from buildingai.errors import BuildingAIError, DTypeError, ShapeError

rng = np.random.default_rng(0)
IMAGE = rng.integers(0, 256, (5, 7, 3), dtype=np.uint8)


def test_to_tensor():
    out = ToTensor()(IMAGE)
    assert out.shape == (3, 5, 7) and out.dtype == np.float32
    expected = torch.from_numpy(IMAGE).permute(2, 0, 1).float() / 255
    np.testing.assert_allclose(out, expected.numpy(), rtol=1e-6)
    assert ToTensor()(IMAGE[:, :, 0]).shape == (1, 5, 7)
    floats = ToTensor()(np.ones((2, 2, 1), np.float64) * 3)
    assert floats.dtype == np.float32 and floats.max() == 3.0
    with pytest.raises(ShapeError, match=r"\[ToTensor\] expects an \(H, W, C\) or \(H, W\)"):
        ToTensor()(np.zeros((1, 2, 3, 4), np.uint8))
    with pytest.raises(DTypeError, match="expects uint8 or floating images, got int32"):
        ToTensor()(np.zeros((2, 2), np.int32))


def test_normalize():
    image = ToTensor()(IMAGE)
    mean, std = (0.4, 0.5, 0.6), (0.2, 0.25, 0.3)
    expected = (image - np.array(mean)[:, None, None]) / np.array(std)[:, None, None]
    np.testing.assert_allclose(Normalize(mean, std)(image), expected, rtol=1e-5, atol=1e-6)
    assert Normalize(0.5, 0.5)(image).shape == image.shape  # one value for every channel
    with pytest.raises(ShapeError, match="has 3 channels but mean/std have 2 values"):
        Normalize((0.1, 0.2), (1, 1))(image)
    with pytest.raises(ShapeError, match="equally long 1-D sequences"):
        Normalize((0.1, 0.2), (1,))
    with pytest.raises(BuildingAIError, match="std must be non-zero"):
        Normalize(0.0, 0.0)
    with pytest.raises(ShapeError, match=r"\[Normalize\] expects a NumPy array"):
        Normalize(0.0, 1.0)(np.zeros((4, 4)))


def test_random_crop_with_padding_matches_a_window_of_the_padded_image():
    image = ToTensor()(IMAGE)
    crop = RandomCrop(5, padding=2, generator=bai.Generator(0))
    padded = np.pad(image, ((0, 0), (2, 2), (2, 2)))
    outputs = [crop(image) for _ in range(30)]
    for out in outputs:
        assert out.shape == (3, 5, 5)
        windows = np.lib.stride_tricks.sliding_window_view(padded, (5, 5), axis=(1, 2))
        assert np.any(np.all(windows == out[:, None, None], axis=(0, 3, 4)))
    assert len({out.tobytes() for out in outputs}) > 5  # several different windows
    again = RandomCrop(5, padding=2, generator=bai.Generator(0))
    assert all(np.array_equal(again(image), out) for out in outputs)


def test_random_crop_modes_and_errors():
    image = np.arange(16, dtype=np.float32).reshape(1, 4, 4)
    full = RandomCrop((4, 4))(image)
    np.testing.assert_array_equal(full, image)
    edge = RandomCrop(6, padding=1, padding_mode="edge")(image)
    np.testing.assert_array_equal(edge, np.pad(image, ((0, 0), (1, 1), (1, 1)), mode="edge"))
    assert RandomCrop(6, pad_if_needed=True)(image).shape == (1, 6, 6)
    assert RandomCrop(3, padding=(1, 0, 0, 0))(image[0]).shape == (3, 3)  # (H, W) works too
    with pytest.raises(ShapeError, match=r"crop \(5, 5\) is larger than the \(padded\) image"):
        RandomCrop(5)(image)
    with pytest.raises(BuildingAIError, match="unknown padding_mode 'wrap'"):
        RandomCrop(2, padding_mode="wrap")
    with pytest.raises(BuildingAIError, match="padding must be an int, 2 or 4 ints"):
        RandomCrop(2, padding=(1, 2, 3))
    with pytest.raises(ShapeError, match=r"\[RandomCrop\] expects a NumPy array"):
        RandomCrop(2)(np.zeros(3))


def test_random_horizontal_flip():
    image = np.arange(6, dtype=np.float32).reshape(1, 2, 3)
    np.testing.assert_array_equal(RandomHorizontalFlip(p=1.0)(image), image[..., ::-1])
    np.testing.assert_array_equal(RandomHorizontalFlip(p=0.0)(image), image)
    flip = RandomHorizontalFlip(generator=bai.Generator(1))
    flips = [bool(flip(image)[0, 0, 0] == 2) for _ in range(200)]
    assert 70 < sum(flips) < 130
    with pytest.raises(BuildingAIError, match=r"p must be in \[0, 1\]"):
        RandomHorizontalFlip(p=1.5)


def test_global_stream_is_seedable():
    crop = Compose([RandomCrop(4, padding=2), RandomHorizontalFlip()])
    image = ToTensor()(IMAGE)
    np.random.seed(3)
    first = [crop(image) for _ in range(5)]
    np.random.seed(3)
    assert all(np.array_equal(a, crop(image)) for a in first)


def test_compose_and_lambda():
    pipeline = Compose([ToTensor(), Lambda(lambda x: x * 2), Normalize(0.0, 2.0)])
    np.testing.assert_allclose(pipeline(IMAGE), ToTensor()(IMAGE), rtol=1e-6)
    assert "ToTensor()" in repr(pipeline)
    with pytest.raises(BuildingAIError, match=r"\[Lambda\] needs a callable"):
        Lambda(3)

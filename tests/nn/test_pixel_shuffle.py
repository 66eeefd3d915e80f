"""PixelShuffle / PixelUnshuffle and their functional forms against PyTorch in float64."""

from __future__ import annotations

import numpy as np
import pytest

import buildingai as bai
import buildingai.nn as nn
import buildingai.nn.functional as F
from tests.helpers import check_op

torch = pytest.importorskip("torch")
TF = torch.nn.functional


@pytest.mark.parametrize(
    "shape, factor", [((2, 8, 3, 4), 2), ((18, 2, 3), 3), ((2, 1, 4, 2, 2), 2), ((1, 5, 2, 2), 1)],
    ids=str,
)  # fmt: skip
def test_pixel_shuffle_matches_pytorch(shape, factor):
    check_op(
        lambda x: F.pixel_shuffle(x, factor),
        shape,
        torch_fn=lambda x: TF.pixel_shuffle(x, factor),
        gradcheck=False,
    )


@pytest.mark.parametrize(
    "shape, factor", [((2, 2, 6, 4), 2), ((1, 9, 6), 3), ((2, 1, 3, 4, 4), 4)], ids=str
)
def test_pixel_unshuffle_matches_pytorch(shape, factor):
    check_op(
        lambda x: F.pixel_unshuffle(x, factor),
        shape,
        torch_fn=lambda x: TF.pixel_unshuffle(x, factor),
        gradcheck=False,
    )


def test_unshuffle_inverts_shuffle_and_layers_match_pytorch():
    x = np.random.default_rng(0).standard_normal((2, 12, 3, 5))
    shuffled = nn.PixelShuffle(2)(bai.tensor(x))
    np.testing.assert_array_equal(shuffled.numpy(), tnn_shuffle(x, 2))
    np.testing.assert_array_equal(nn.PixelUnshuffle(2)(shuffled).numpy(), x)
    assert repr(nn.PixelShuffle(2)) == repr(torch.nn.PixelShuffle(2))
    assert repr(nn.PixelUnshuffle(3)) == repr(torch.nn.PixelUnshuffle(3))


def tnn_shuffle(x: np.ndarray, factor: int) -> np.ndarray:
    return torch.nn.PixelShuffle(factor)(torch.tensor(x)).numpy()


def test_pixel_shuffle_errors_name_the_op_and_the_sizes():
    with pytest.raises(ValueError, match=r"pixel_shuffle.*5 channels.*4"):
        F.pixel_shuffle(bai.zeros((2, 5, 3, 3)), 2)
    with pytest.raises(ValueError, match=r"pixel_shuffle.*at least 3 dimensions"):
        F.pixel_shuffle(bai.zeros((5, 3)), 2)
    with pytest.raises(ValueError, match=r"pixel_unshuffle.*height 5.*divisible by .* 2"):
        F.pixel_unshuffle(bai.zeros((1, 1, 5, 4)), 2)
    with pytest.raises(ValueError, match=r"upscale_factor must be a positive integer"):
        F.pixel_shuffle(bai.zeros((1, 4, 2, 2)), 0)

"""The depthwise convolution's forward twin (``compiled/depthwise.py``) against its NumPy
reference (``accel/convolution.depthwise_correlate``): strides 1 to 3 with the constant-stride
loops and the general one, padding wider than the kernel's reach, dilation, channel
multipliers, with and without bias, inf and NaN inputs; and ``avg_pool2d`` through it against
PyTorch."""

from __future__ import annotations

import numpy as np
import pytest

import buildingai as bai
import buildingai.nn.functional as F
from buildingai.accel import convolution as conv
from buildingai.accel.kernels import compiled

pytest.importorskip("numba")
pytestmark = pytest.mark.usefixtures("accel_on")

# (N, C, H, W, multiplier, kh, kw, stride, padding, dilation, bias)
GEOMETRIES = {
    "pool-2x2": (1, 16, 32, 32, 1, 2, 2, (2, 2), (0, 0), (1, 1), False),
    "mobilenet-3x3": (2, 8, 14, 15, 1, 3, 3, (1, 1), (1, 1), (1, 1), True),
    "stride-2-padded": (2, 5, 11, 9, 1, 3, 3, (2, 2), (1, 1), (1, 1), True),
    "stride-3-general-loop": (1, 4, 13, 17, 1, 3, 2, (3, 3), (1, 0), (1, 1), False),
    "multiplier-2-dilated": (2, 3, 10, 12, 2, 3, 3, (1, 2), (2, 1), (2, 2), True),
    "padding-beyond-the-kernel": (1, 2, 4, 5, 1, 2, 3, (1, 1), (3, 4), (1, 1), False),
    # one column: the left edge's last tap reads past the image's right side
    "narrower-than-the-kernel": (1, 2, 3, 1, 1, 3, 3, (1, 1), (1, 1), (1, 1), True),
}


def _inputs(n, c, h, w, multiplier, kh, kw, bias, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, c, h, w)).astype(np.float32)
    weight = rng.standard_normal((c * multiplier, 1, kh, kw)).astype(np.float32)
    b = rng.standard_normal(c * multiplier).astype(np.float32) if bias else None
    return x, weight, b


@pytest.mark.parametrize("name", list(GEOMETRIES))
def test_twin_equals_reference(name):
    n, c, h, w, multiplier, kh, kw, stride, padding, dilation, bias = GEOMETRIES[name]
    x, weight, b = _inputs(n, c, h, w, multiplier, kh, kw, bias)
    x[0, 0, min(1, h - 1), min(1, w - 1)], x[-1, -1, -1, -1] = np.inf, np.nan
    geometry = {"stride": stride, "padding": padding, "dilation": dilation}
    out_hw = bai.ops.conv.output_hw((h, w), (kh, kw), stride, padding, dilation)
    got = np.full((n, c * multiplier) + out_hw, 7.0, np.float32)
    expected = np.empty_like(got)
    assert compiled.run(conv.depthwise_correlate, (x, weight, b, got), geometry)
    conv.depthwise_correlate(np, x, weight, b, expected, **geometry)
    np.testing.assert_array_equal(got, expected)


def test_small_calls_take_the_twin(monkeypatch):
    """The twin takes calls below the tier's usual minimum, from 1024 elements: its reference
    is many small passes."""
    monkeypatch.setattr(compiled, "MIN_WORK", 1 << 14)  # this folder's conftest lowers it
    x, weight, _ = _inputs(1, 16, 16, 16, 1, 2, 2, False)
    out = np.empty((1, 16, 8, 8), np.float32)
    assert x.size + weight.size + out.size < compiled.MIN_WORK
    assert compiled.takes(conv.depthwise_correlate, (x, weight, None, out))
    assert not compiled.takes(conv.correlate, (x, weight, None, out))
    tiny = np.empty((1, 1, 4, 4), np.float32)
    assert not compiled.takes(conv.depthwise_correlate, (tiny, weight[:1], None, tiny[..., :2, :2]))


@pytest.mark.parametrize("kernel, stride, padding", [(2, 2, 0), (3, 1, 1), (3, 2, 1)])
def test_avg_pool2d_matches_pytorch(kernel, stride, padding):
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(1).standard_normal((2, 6, 12, 12)).astype(np.float32)
    got = F.avg_pool2d(bai.tensor(x), kernel, stride, padding).numpy()
    expected = torch.nn.functional.avg_pool2d(torch.from_numpy(x), kernel, stride, padding)
    np.testing.assert_allclose(got, expected.numpy(), rtol=1e-6, atol=1e-6)

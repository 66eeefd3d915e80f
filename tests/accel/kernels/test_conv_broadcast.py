"""The channel-vector correlation (``compiled/conv_broadcast.py``): output channels in the lanes,
input values broadcast from a zero-padded copy. Through the direct twins ``conv.correlate``,
``conv.correlate_turned`` and ``conv_strided.correlate`` against their NumPy references, over
geometries that exercise its edges (tiles that run from one sample into the next, the batch's
last tile started early, output channels not a whole number of blocks, uneven padding, stride
2), with inf and NaN, on one and two threads, and its float32 error against PyTorch's."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import buildingai as bai
import buildingai.nn.functional as F
from buildingai.accel import convolution as conv
from buildingai.accel.kernels import compiled
from tests.accel.test_float32_accuracy import assert_within_pytorchs

pytest.importorskip("numba")
pytestmark = pytest.mark.usefixtures("accel_on")

from buildingai.accel.kernels.compiled import conv_broadcast  # noqa: E402
from buildingai.accel.kernels.compiled.tile_ir import LANES  # noqa: E402

needs_avx2_tiles = pytest.mark.skipif(LANES != 8, reason="the tiles run on 8-lane vectors only")

# (N, C, H, W, O, kh, kw, padding, stride, bias)
GEOMETRIES = {
    "same-size": (3, 8, 5, 7, 16, 3, 3, (1, 1), 1, True),
    "no-padding": (2, 12, 9, 8, 32, 3, 3, (0, 0), 1, False),
    "uneven-padding-wide-kernel": (2, 9, 6, 10, 48, 2, 5, (1, 2), 1, True),
    "one-by-one": (2, 16, 3, 5, 112, 1, 1, (0, 0), 1, True),  # 112: 7 blocks of 16
    "five-by-five": (2, 8, 7, 7, 16, 5, 5, (2, 2), 1, False),
    "outputs-not-whole-blocks": (3, 10, 4, 4, 100, 3, 3, (1, 1), 1, True),  # 100 of 112 lanes
    "six-positions-a-plane": (5, 8, 2, 3, 16, 3, 3, (1, 1), 1, True),  # the fewest it takes
    "stride-2": (2, 8, 8, 10, 32, 3, 3, (1, 1), 2, True),
    "stride-2-wide-kernel": (3, 16, 6, 6, 16, 1, 3, (0, 1), 2, False),
    # planes 4 KiB apart, read from a spaced copy
    "aliased-planes": (2, 16, 32, 32, 16, 3, 3, (0, 0), 1, False),
}


def _arrays(geometry, seed=0):
    n, c, h, w, o, kh, kw, padding, stride, with_bias = geometry
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, c, h, w)).astype(np.float32)
    taps = rng.standard_normal((o, c, kh, kw)).astype(np.float32)
    bias = rng.standard_normal(o).astype(np.float32) if with_bias else None
    out_hw = ((h + 2 * padding[0] - kh) // stride + 1, (w + 2 * padding[1] - kw) // stride + 1)
    return x, taps, bias, out_hw


def _forward(geometry, x, taps, bias, out_hw, twin: bool):
    stride, padding = geometry[8], geometry[7]
    reference = conv.correlate if stride == 1 else conv.correlate_strided
    out = np.full((x.shape[0], taps.shape[0]) + out_hw, np.float32(7.0))  # no stale zeros
    if twin:
        assert compiled.run(reference, (x, taps, bias, out), {"padding": padding})
    else:
        reference(np, x, taps, bias, out, padding=padding)
    return out


def _close(got, expected, tolerance=2e-5):
    scale = max(1.0, float(np.nanmax(np.abs(expected))))
    np.testing.assert_array_equal(np.isnan(got), np.isnan(expected))
    np.testing.assert_allclose(got, expected, rtol=0, atol=tolerance * scale)


@pytest.fixture
def broadcast_calls(monkeypatch):
    """The number of calls the channel-vector correlation has taken so far."""
    calls = []
    correlate = conv_broadcast.correlate

    def counted(*arguments, **keywords):
        calls.append(keywords.get("turned", False))
        return correlate(*arguments, **keywords)

    monkeypatch.setattr(conv_broadcast, "correlate", counted)
    return calls


@needs_avx2_tiles
@pytest.mark.parametrize("name", sorted(GEOMETRIES))
def test_forward_matches_im2col(broadcast_calls, name):
    geometry = GEOMETRIES[name]
    x, taps, bias, out_hw = _arrays(geometry)
    _close(_forward(geometry, x, taps, bias, out_hw, True),
           _forward(geometry, x, taps, bias, out_hw, False))  # fmt: skip
    assert broadcast_calls == [False]


@needs_avx2_tiles
@pytest.mark.parametrize("name", sorted(n for n, g in GEOMETRIES.items() if g[8] == 1))
def test_input_gradient_matches_im2col(broadcast_calls, name):
    """The input gradient as the correlation of the output gradient with the turned filters
    (forward filters (O, C, kh, kw) that map C = 16 to the geometry's channels)."""
    n, c, h, w, o, kh, kw, padding, _, _ = GEOMETRIES[name]
    rng = np.random.default_rng(1)
    weight = rng.standard_normal((c, 16, kh, kw)).astype(np.float32)  # forward 16 -> c
    turn = (kh - 1 - padding[0], kw - 1 - padding[1])
    if min(turn) < 0:
        pytest.skip("padding beyond the kernel: not an input gradient")
    grad = rng.standard_normal((n, c, h, w)).astype(np.float32)
    size = (h + 2 * turn[0] - kh + 1, w + 2 * turn[1] - kw + 1)  # the forward's input
    twin = np.full((n, 16) + size, np.float32(7.0))
    assert compiled.run(conv.correlate_turned, (grad, weight, twin), {"padding": turn})
    reference = np.full_like(twin, 7.0)
    conv.correlate_turned(np, grad, weight, reference, padding=turn)
    _close(twin, reference)
    assert broadcast_calls == [True]


# stride-2 input gradients, phase by phase: (N, C, H, W, O, kh, kw, padding)
TRANSPOSED = {
    "resnet-downsample": (2, 16, 8, 10, 16, 3, 3, (1, 1)),
    "stem-seven-by-seven": (2, 16, 12, 8, 32, 7, 7, (3, 3)),
    "uneven-padding": (3, 16, 4, 6, 8, 3, 2, (1, 0)),
    "one-by-two": (2, 16, 6, 6, 16, 1, 2, (0, 0)),  # two phases no tap reads: zeros
}


@needs_avx2_tiles
@pytest.mark.parametrize("name", sorted(TRANSPOSED))
def test_stride_2_input_gradient_matches_im2col(broadcast_calls, name, monkeypatch):
    n, c, h, w, o, kh, kw, padding = TRANSPOSED[name]
    rng = np.random.default_rng(2)
    weight = rng.standard_normal((o, c, kh, kw)).astype(np.float32)
    out_hw = ((h + 2 * padding[0] - kh) // 2 + 1, (w + 2 * padding[1] - kw) // 2 + 1)
    grad = rng.standard_normal((n, o) + out_hw).astype(np.float32)
    runs = []
    monkeypatch.setattr(conv_broadcast, "run", _counted(conv_broadcast.run, runs))
    twin = np.full((n, c, h, w), np.float32(7.0))  # no stale zeros
    keywords = {"padding": padding}
    assert compiled.run(conv.correlate_strided_transposed, (grad, weight, twin), keywords)
    reference = np.full_like(twin, 7.0)
    conv.correlate_strided_transposed(np, grad, weight, reference, **keywords)
    _close(twin, reference)
    assert runs  # the phases went through the channel-vector tiles


def _counted(function, calls):
    def counted(*arguments, **keywords):
        calls.append(1)
        return function(*arguments, **keywords)

    return counted


@needs_avx2_tiles
def test_a_one_by_one_stride_2_kernel_keeps_to_the_phase_image(broadcast_calls, monkeypatch):
    """A 1x1 stride-2 kernel reads one phase image, a quarter of the input: the flat tiles,
    forward and input gradient."""
    geometry = (3, 16, 6, 6, 16, 1, 1, (0, 0), 2, False)
    x, taps, bias, out_hw = _arrays(geometry)
    _close(_forward(geometry, x, taps, bias, out_hw, True),
           _forward(geometry, x, taps, bias, out_hw, False))  # fmt: skip
    runs = []
    monkeypatch.setattr(conv_broadcast, "run", _counted(conv_broadcast.run, runs))
    grad = np.ones((3, 16) + out_hw, np.float32)
    dx = np.empty_like(x)
    assert compiled.run(conv.correlate_strided_transposed, (grad, taps, dx), {"padding": (0, 0)})
    assert broadcast_calls == [] and runs == []


@needs_avx2_tiles
def test_inf_and_nan_reach_exactly_the_outputs_that_read_them():
    geometry = GEOMETRIES["same-size"]
    x, taps, bias, out_hw = _arrays(geometry)
    x[0, 1, 0, 6] = np.inf  # a corner: read by its neighbours only
    x[2, 7, 4, 0] = np.nan  # the batch's last sample, at its last row
    got = _forward(geometry, x, taps, bias, out_hw, True)
    expected = _forward(geometry, x, taps, bias, out_hw, False)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(expected))
    np.testing.assert_array_equal(np.isinf(got), np.isinf(expected))
    finite = np.isfinite(expected)
    np.testing.assert_allclose(got[finite], expected[finite], rtol=1e-5, atol=1e-4)


@needs_avx2_tiles
def test_one_and_two_threads_give_the_same_bits():
    """Each output value is summed by one task in a fixed order, whatever the thread count."""
    geometry = (32, 16, 12, 12, 32, 3, 3, (1, 1), 1, True)  # work enough for two threads
    x, taps, bias, out_hw = _arrays(geometry, seed=3)
    results = []
    for count in (1, 2):
        bai.set_num_threads(count)
        try:
            results.append(_forward(geometry, x, taps, bias, out_hw, True))
        finally:
            bai.set_num_threads(None)
    assert np.array_equal(results[0], results[1])


@needs_avx2_tiles
def test_two_calls_at_once_on_two_threads(broadcast_calls):
    """Two Python threads correlating at once (the tables are shared, the buffers are not)."""
    from concurrent.futures import ThreadPoolExecutor

    geometry = GEOMETRIES["stride-2"]
    x, taps, bias, out_hw = _arrays(geometry, seed=5)
    expected = _forward(geometry, x, taps, bias, out_hw, True)
    with ThreadPoolExecutor(2) as pool:
        results = list(pool.map(lambda _: _forward(geometry, x, taps, bias, out_hw, True),
                                range(8)))  # fmt: skip
    for result in results:
        assert np.array_equal(result, expected)
    assert len(broadcast_calls) == 9


def test_which_correlations_it_takes(monkeypatch):
    """AVX2's vectors, at least ``LEAST_CHANNELS`` input channels, at most an eighth of the
    lanes empty, and a plane of at least one tile's positions."""
    monkeypatch.setattr(conv_broadcast, "LANES", 8)
    fits = conv_broadcast.fits
    assert fits(8, 16, 6) and fits(512, 512, 16) and fits(10, 100, 64)
    assert not fits(4, 64, 64)  # too few channels: the flat tiles unroll them
    assert not fits(64, 8, 64)  # 8 filters leave half of 16 lanes empty
    assert not fits(64, 40, 64)  # 40 of 48 lanes
    assert not fits(64, 64, 4)  # a 2x2 output plane
    monkeypatch.setattr(conv_broadcast, "LANES", 16)
    assert not fits(512, 512, 16)  # AVX-512 keeps the flat tiles


def test_the_tile_fits_the_registers():
    """Accumulators, the weight vectors a step loads and the broadcast fit AVX2's 16 registers."""
    positions, vectors = conv_broadcast.TILE
    assert positions * vectors + vectors + 1 <= 16


@needs_avx2_tiles
@pytest.mark.parametrize(
    "x_shape, stride",
    [((8, 128, 16, 16), 1), ((4, 256, 8, 8), 1), ((4, 512, 4, 4), 1), ((4, 128, 16, 16), 2)],
)
def test_float32_error_within_pytorchs(broadcast_calls, x_shape, stride):
    """ResNet-18's later stages: forward and input gradient against float64 PyTorch, within
    ``BOUND`` times PyTorch's own float32 error (the input gradient only at stride 1, where it
    is a correlation)."""
    rng = np.random.default_rng(6)
    channels = x_shape[1]
    filters = channels * stride
    x = rng.standard_normal(x_shape)
    weight = rng.standard_normal((filters, channels, 3, 3)) / np.sqrt(9 * channels)
    exact_x = torch.tensor(x, requires_grad=True)
    exact = torch.conv2d(exact_x, torch.tensor(weight), stride=stride, padding=1)
    grad = rng.standard_normal(tuple(exact.shape))
    exact.backward(torch.tensor(grad))
    theirs_x = torch.tensor(x, dtype=torch.float32, requires_grad=True)
    theirs = torch.conv2d(theirs_x, torch.tensor(weight, dtype=torch.float32), stride=stride,
                          padding=1)  # fmt: skip
    theirs.backward(torch.tensor(grad, dtype=torch.float32))
    ours_x = bai.tensor(x.astype(np.float32), requires_grad=True)
    ours = F.conv2d(ours_x, bai.tensor(weight.astype(np.float32)), stride=stride, padding=1)
    ours.backward(bai.tensor(grad.astype(np.float32)))
    label = f"channel-vector correlation {x_shape} stride {stride}"
    assert_within_pytorchs(label, ours.numpy(), theirs.detach().numpy(),
                           exact.detach().numpy())  # fmt: skip
    assert broadcast_calls[0] is False
    if stride == 1:
        assert_within_pytorchs(f"{label}, input gradient", ours_x.grad.numpy(),
                               theirs_x.grad.numpy(), exact_x.grad.numpy())  # fmt: skip
        assert True in broadcast_calls

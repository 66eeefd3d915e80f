"""The direct convolution twins (``compiled/conv.py``) against their NumPy references
(``accel/convolution.correlate`` and ``correlate_weight_grad``: the records' im2col and one
GEMM), over geometries that exercise every edge of the register tiles: channel counts that are
not a multiple of the tile's rows, rows shorter and longer than a tile, 1x1 to 5x5 kernels,
uneven padding, inf and NaN inputs, and one and two threads."""

from __future__ import annotations

import numpy as np
import pytest

import buildingai as bai
from buildingai.accel import convolution as conv
from buildingai.accel.kernels import compiled

pytest.importorskip("numba")
pytestmark = pytest.mark.usefixtures("accel_on")

# (N, C, H, W, O, kh, kw, padding, bias)
GEOMETRIES = {
    "small-same": (2, 3, 7, 9, 5, 3, 3, (1, 1), True),
    "cnn-first-layer": (3, 1, 28, 28, 32, 3, 3, (0, 0), True),
    # a grid tile of few channels (8 filters of one vector) with filters past the last one
    "two-channels-six-filters": (2, 2, 9, 11, 6, 3, 3, (0, 0), False),
    "wide-rows-uneven-padding": (2, 17, 5, 40, 40, 2, 5, (1, 2), False),
    "one-output": (1, 2, 3, 3, 3, 3, 3, (0, 0), False),
    "one-by-one": (2, 4, 6, 70, 9, 1, 1, (0, 0), True),
    "five-by-five-same": (2, 5, 11, 13, 8, 5, 5, (2, 2), True),
    "input-gradient-padding": (1, 3, 4, 4, 2, 3, 3, (2, 2), True),
    "many-channels": (2, 8, 12, 12, 64, 3, 3, (1, 1), True),
    # same-size tiles over flat positions: vectors that run past an image's end into the next
    # sample's, output channels not a whole number of tiles, a kernel wider than 8 columns
    "same-across-samples": (3, 6, 5, 5, 13, 3, 3, (1, 1), True),
    "same-wide-kernel": (2, 2, 4, 12, 3, 1, 9, (0, 4), False),
    # enough taps for the channels-last weight gradient: output channels a whole number of
    # vectors, and not
    "channels-last-whole": (2, 16, 7, 7, 64, 3, 3, (0, 0), True),
    "channels-last-partial": (2, 32, 8, 9, 40, 3, 3, (0, 0), False),
    # the sample-lane layout (``sample_lanes.py``): small images of a batch of at least one
    # vector, whole and partial vectors of samples, tiles of 1 to 3 vectors, taps summed a
    # channel group at a time and channel by channel
    "sample-lanes-whole-vectors": (32, 24, 4, 4, 20, 3, 3, (1, 1), True),
    "sample-lanes-partial-batch": (20, 5, 3, 5, 7, 3, 3, (1, 1), False),
    "sample-lanes-five-by-five": (17, 6, 4, 4, 9, 5, 5, (2, 2), True),
    "sample-lanes-grouped-channels": (48, 70, 4, 4, 13, 3, 3, (1, 1), False),
    "sample-lanes-channel-major": (48, 400, 2, 2, 5, 3, 3, (1, 1), True),
}
# the twins this file compares (``conv.*`` and the stride-2 ``conv_strided.*``)
CASES = {
    "correlate",
    "correlate_rectified",
    "correlate_turned",
    "correlate_weight_grad",
    "correlate_transposed",
}
# stride 2 on even images: (N, C, H, W, O, kh, kw, padding, bias)
STRIDED_GEOMETRIES = {
    "resnet-downsample": (2, 8, 8, 8, 16, 3, 3, (1, 1), False),
    "shortcut-one-by-one": (3, 5, 6, 10, 7, 1, 1, (0, 0), True),
    "stem-seven-by-seven": (2, 3, 12, 16, 9, 7, 7, (3, 3), True),
    "uneven-padding-across-samples": (3, 6, 4, 6, 13, 3, 2, (1, 0), True),
}


def _arrays(geometry, seed=0):
    n, c, h, w, o, kh, kw, padding, with_bias = geometry
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, c, h, w)).astype(np.float32)
    taps = rng.standard_normal((o, c, kh, kw)).astype(np.float32)
    bias = rng.standard_normal(o).astype(np.float32) if with_bias else None
    out_hw = (h + 2 * padding[0] - kh + 1, w + 2 * padding[1] - kw + 1)
    grad = rng.standard_normal((n, o) + out_hw).astype(np.float32)
    return x, taps, bias, grad, padding


def _forward(x, taps, bias, padding, twin: bool):
    out_hw = (x.shape[2] + 2 * padding[0] - taps.shape[2] + 1,
              x.shape[3] + 2 * padding[1] - taps.shape[3] + 1)  # fmt: skip
    out = np.full((x.shape[0], taps.shape[0]) + out_hw, np.float32(7.0))  # no stale zeros
    if twin:
        assert compiled.run(conv.correlate, (x, taps, bias, out), {"padding": padding})
    else:
        conv.correlate(np, x, taps, bias, out, padding=padding)
    return out


def _weight_grad(x, grad, kernel, padding, twin: bool):
    out = np.full((grad.shape[1], x.shape[1]) + kernel, np.float32(7.0))
    if twin:
        assert compiled.run(conv.correlate_weight_grad, (x, grad, out), {"padding": padding})
    else:
        conv.correlate_weight_grad(np, x, grad, out, padding=padding)
    return out


def _input_grad(grad, taps, padding, twin: bool):
    """The input gradient of a forward with ``taps`` and ``padding``, as correlate_turned."""
    turn = (taps.shape[2] - 1 - padding[0], taps.shape[3] - 1 - padding[1])
    size = (grad.shape[2] + taps.shape[2] - 1 - 2 * padding[0],
            grad.shape[3] + taps.shape[3] - 1 - 2 * padding[1])  # fmt: skip
    out = np.full((grad.shape[0], taps.shape[1]) + size, np.float32(7.0))
    if twin:
        assert compiled.run(conv.correlate_turned, (grad, taps, out), {"padding": turn})
    else:
        conv.correlate_turned(np, grad, taps, out, padding=turn)
    return out


def _close(got, expected, tolerance=2e-5):
    """Equal NaN positions, and values within ``tolerance`` of the largest (float32 sums in
    another order)."""
    scale = max(1.0, float(np.nanmax(np.abs(expected))))
    np.testing.assert_array_equal(np.isnan(got), np.isnan(expected))
    np.testing.assert_allclose(got, expected, rtol=0, atol=tolerance * scale)


@pytest.fixture(params=["any-tiles", "flat-tiles"])
def tiling(request, monkeypatch):
    """The tiles as chosen, and the flat ones alone (the channel-vector tiles, which take many
    of these calls on AVX2, refused)."""
    if request.param == "flat-tiles":
        from buildingai.accel.kernels.compiled import conv_broadcast

        monkeypatch.setattr(conv_broadcast, "fits", lambda *sizes: False)
    return request.param


@pytest.mark.parametrize("name", sorted(GEOMETRIES))
def test_direct_correlation_matches_im2col(name, tiling):
    x, taps, bias, _, padding = _arrays(GEOMETRIES[name])
    _close(_forward(x, taps, bias, padding, True), _forward(x, taps, bias, padding, False))


@pytest.mark.parametrize("name", sorted(GEOMETRIES))
def test_direct_weight_gradient_matches_im2col(name):
    x, taps, _, grad, padding = _arrays(GEOMETRIES[name])
    kernel = taps.shape[2:]
    _close(_weight_grad(x, grad, kernel, padding, True),
           _weight_grad(x, grad, kernel, padding, False))  # fmt: skip


@pytest.mark.parametrize("name", sorted(name for name, g in GEOMETRIES.items() if g[7] == (0, 0)))
def test_both_weight_gradient_tilings_match_im2col(name):
    """Without padding either tiling may run: lanes over output channels or over positions."""
    from buildingai.accel.kernels.compiled import conv as direct

    x, taps, _, grad, padding = _arrays(GEOMETRIES[name])
    expected = _weight_grad(x, grad, taps.shape[2:], padding, False)
    for tiling in (direct._weight_grad_by_channels, direct._weight_grad_by_positions):
        got = np.full_like(expected, 7.0)
        tiling(x, grad, got, *((padding,) if tiling is direct._weight_grad_by_positions else ()))
        _close(got, expected)


@pytest.mark.parametrize("name", sorted(GEOMETRIES))
def test_direct_input_gradient_matches_im2col(name, tiling):
    _, taps, _, grad, padding = _arrays(GEOMETRIES[name])
    if min(taps.shape[2] - 1 - padding[0], taps.shape[3] - 1 - padding[1]) < 0:
        pytest.skip("the input gradient's direct form needs kernel - 1 - padding >= 0")
    _close(_input_grad(grad, taps, padding, True), _input_grad(grad, taps, padding, False))


def test_the_input_gradient_is_the_correlation_with_the_turned_filters():
    """conv2d_input_grad's direct form, against PyTorch's input gradient in float64."""
    torch = pytest.importorskip("torch")
    x, taps, _, grad, padding = _arrays(GEOMETRIES["many-channels"])
    got = _input_grad(grad, taps, padding, True)
    x64 = torch.tensor(x, dtype=torch.float64, requires_grad=True)
    y = torch.nn.functional.conv2d(x64, torch.tensor(taps, dtype=torch.float64), padding=padding)
    y.backward(torch.tensor(grad, dtype=torch.float64))
    _close(got, x64.grad.numpy().astype(np.float32), 1e-5)


@pytest.mark.parametrize("name", sorted(GEOMETRIES))
def test_rectified_correlation_is_the_relu_of_the_correlation(name, tiling):
    """``correlate_rectified``'s twin (tiles that store max(sum, 0), or one pass after the tiles
    that do not) against its reference, and exactly the ReLU of the plain twin's output: the
    same sums, rectified."""
    x, taps, bias, _, padding = _arrays(GEOMETRIES[name])
    x[0, 0, 1, 1] = np.nan  # NaN stays NaN through the ReLU
    out_hw = (x.shape[2] + 2 * padding[0] - taps.shape[2] + 1,
              x.shape[3] + 2 * padding[1] - taps.shape[3] + 1)  # fmt: skip
    got = np.full((x.shape[0], taps.shape[0]) + out_hw, np.float32(-7.0))  # no stale values
    expected = np.full_like(got, -7.0)
    arrays, attrs = (x, taps, bias, got), {"padding": padding}
    assert compiled.run(conv.correlate_rectified, arrays, attrs)
    conv.correlate_rectified(np, x, taps, bias, expected, padding=padding)
    _close(got, expected)
    plain = _forward(x, taps, bias, padding, True)
    np.testing.assert_array_equal(got, np.where(plain <= 0, np.float32(0), plain))
    assert np.isnan(got).any() and not (got < 0).any()


def test_inf_and_nan_reach_exactly_the_outputs_that_read_them():
    """Tiles read a few values past the end of each output row (thrown away): a non-finite
    input must still reach only the windows that contain it."""
    x, taps, bias, grad, padding = _arrays(GEOMETRIES["small-same"])
    x[0, 1, 0, 8] = np.inf  # the last column of a row: the next row's tiles read past it
    x[1, 2, 6, 0] = np.nan  # the first column of the last row
    x[1, 0, 3, 4] = -np.inf
    expected = _forward(x, taps, bias, padding, False)
    got = _forward(x, taps, bias, padding, True)
    np.testing.assert_array_equal(np.isfinite(got), np.isfinite(expected))
    finite = np.isfinite(expected)
    np.testing.assert_allclose(got[finite], expected[finite], rtol=1e-5, atol=1e-5)
    wexpected = _weight_grad(x, grad, taps.shape[2:], padding, False)
    wgot = _weight_grad(x, grad, taps.shape[2:], padding, True)
    np.testing.assert_array_equal(np.isnan(wgot), np.isnan(wexpected))


SAMPLE_LANE_GEOMETRIES = sorted(name for name in GEOMETRIES if name.startswith("sample-lanes"))


@pytest.mark.parametrize("name", SAMPLE_LANE_GEOMETRIES)
def test_small_images_of_a_batch_run_with_samples_in_the_lanes(name, monkeypatch):
    """The forward and the input gradient of these geometries take the sample-lane layout,
    whose tiles skip the taps that read only padding, and match im2col."""
    from buildingai.accel.kernels.compiled import conv as tiles

    calls = []
    original = tiles._correlate_sample_lanes

    def spy(*arguments, **keywords):
        calls.append(keywords.get("turned", False))
        return original(*arguments, **keywords)

    monkeypatch.setattr(tiles, "_correlate_sample_lanes", spy)
    x, taps, bias, grad, padding = _arrays(GEOMETRIES[name])
    _close(_forward(x, taps, bias, padding, True), _forward(x, taps, bias, padding, False))
    _close(_input_grad(grad, taps, padding, True), _input_grad(grad, taps, padding, False))
    assert calls == [False, True]


def test_sample_lanes_leave_out_the_batches_and_images_they_do_not_pay_for():
    from buildingai.accel.kernels.compiled import sample_lanes
    from buildingai.accel.kernels.compiled.tile_ir import LANES

    assert sample_lanes.fits(LANES, 4, 4, (3, 3), (1, 1))
    assert not sample_lanes.fits(LANES - 1, 4, 4, (3, 3), (1, 1))  # lanes left empty
    assert not sample_lanes.fits(LANES, 8, 8, (3, 3), (1, 1))  # measured no faster there
    assert not sample_lanes.fits(LANES, 4, 4, (1, 1), (0, 0))  # no tap reads padding


def test_sample_lane_masks_keep_all_lanes_or_none():
    from buildingai.accel.kernels.compiled import sample_lanes
    from buildingai.accel.kernels.compiled.tile_ir import LANES

    masks = sample_lanes.lane_masks(3, 3, 2, (3, 3), (1, 1)).view(np.uint32)
    every = (1 << LANES) - 1
    assert set(np.unique(masks)) == {0, every}
    assert masks.shape == (9 * 2, 10)
    corner, centre = masks[0], masks[4 * 2]  # position (0, 0); position (1, 1)
    assert list(corner[:9] == every) == [False] * 4 + [True, True, False, True, True]
    assert np.all(centre == every)
    assert np.array_equal(masks[0], masks[1])  # a position's vectors read the same taps


def test_sample_lane_twins_skip_the_padding_taps_a_non_finite_filter_would_spoil():
    """A tap that reads only padding is not multiplied: an inf filter value there leaves the
    border outputs finite (PyTorch's oneDNN kernels do the same); where the tap reads the
    image, it reaches every output as it does in im2col."""
    x, taps, bias, _, padding = _arrays(GEOMETRIES["sample-lanes-whole-vectors"])
    taps[3, 2, 0, 0] = np.inf  # tap (0, 0): inside the image except on the top row and left column
    got = _forward(np.abs(x), taps, None, padding, True)[:, 3]
    assert np.all(np.isfinite(got[:, 0, :])) and np.all(np.isfinite(got[:, :, 0]))
    assert np.all(np.isposinf(got[:, 1:, 1:]))


@pytest.mark.parametrize("name", ["many-channels", "sample-lanes-whole-vectors"])
def test_one_and_two_threads_give_the_same_bits(name):
    """Each output value is summed by one task in a fixed order, whatever the thread count."""
    x, taps, bias, grad, padding = _arrays(GEOMETRIES[name], seed=3)
    x = np.repeat(x, 16, axis=0)  # enough work for two threads
    grad = np.repeat(grad, 16, axis=0)
    results = []
    for count in (1, 2):
        bai.set_num_threads(count)
        try:
            results.append((_forward(x, taps, bias, padding, True),
                            _weight_grad(x, grad, taps.shape[2:], padding, True)))  # fmt: skip
        finally:
            bai.set_num_threads(None)
    for one, two in zip(*results):
        assert np.array_equal(one, two)


def _strided(geometry, seed=0):
    n, c, h, w, o, kh, kw, padding, with_bias = geometry
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, c, h, w)).astype(np.float32)
    taps = rng.standard_normal((o, c, kh, kw)).astype(np.float32)
    bias = rng.standard_normal(o).astype(np.float32) if with_bias else None
    grad = rng.standard_normal((n, o, h // 2, w // 2)).astype(np.float32)
    return x, taps, bias, grad, padding


def _strided_both(x, taps, bias, grad, padding):
    """((forward, input gradient) of the twins, the same of the references)."""
    results = []
    for twin in (True, False):
        out = np.full(grad.shape, np.float32(7.0))  # no stale zeros
        dx = np.full(x.shape, np.float32(7.0))
        keywords = {"padding": padding}
        if twin:
            assert compiled.run(conv.correlate_strided, (x, taps, bias, out), keywords)
            assert compiled.run(conv.correlate_strided_transposed, (grad, taps, dx), keywords)
        else:
            conv.correlate_strided(np, x, taps, bias, out, padding=padding)
            conv.correlate_strided_transposed(np, grad, taps, dx, padding=padding)
        results.append((out, dx))
    return results


@pytest.mark.parametrize("name", sorted(STRIDED_GEOMETRIES))
def test_strided_twins_match_im2col(name, tiling):
    x, taps, bias, grad, padding = _strided(STRIDED_GEOMETRIES[name])
    twins, references = _strided_both(x, taps, bias, grad, padding)
    for got, expected in zip(twins, references):
        _close(got, expected)


def test_strided_inf_and_nan_reach_exactly_the_outputs_that_read_them():
    x, taps, bias, grad, padding = _strided(STRIDED_GEOMETRIES["resnet-downsample"])
    x[0, 1, 0, 7] = np.inf  # last column of a row: its phase image's right edge
    x[1, 2, 7, 0] = np.nan  # first column of the last row
    grad[1, 3, 2, 3] = -np.inf
    twins, references = _strided_both(x, taps, bias, grad, padding)
    for got, expected in zip(twins, references):
        np.testing.assert_array_equal(np.isfinite(got), np.isfinite(expected))
        finite = np.isfinite(expected)
        np.testing.assert_allclose(got[finite], expected[finite], rtol=1e-5, atol=1e-4)


def test_strided_twins_give_the_same_bits_on_one_and_two_threads():
    x, taps, bias, grad, padding = _strided(STRIDED_GEOMETRIES["resnet-downsample"], seed=3)
    x, grad = np.repeat(x, 16, axis=0), np.repeat(grad, 16, axis=0)  # work for two threads
    results = []
    for count in (1, 2):
        bai.set_num_threads(count)
        try:
            results.append(_strided_both(x, taps, bias, grad, padding)[0])
        finally:
            bai.set_num_threads(None)
    for one, two in zip(*results):
        assert np.array_equal(one, two)


def test_the_tile_shapes_fit_the_registers():
    """Accumulators, the vectors a step loads and a broadcast weight fit the vector registers
    (32 with AVX-512, 16 with AVX2), so no tile spills to memory."""
    from buildingai.accel.kernels.compiled import conv as direct
    from buildingai.accel.kernels.compiled.tile_ir import LANES

    registers = 32 if LANES == 16 else 16
    for rows, vectors in (direct.GRID_TILE, direct.FEW_CHANNELS_GRID_TILE):
        assert rows * vectors + vectors + 1 <= registers
    for width in (1, 7, 16, 24, 26, 48, 224):
        rows, vectors = direct._window_shape(width)
        assert rows * vectors + vectors + 1 <= registers
    for kw in (1, 3, 5, 7):
        taps = min(kw, 8)
        assert max(1, direct.ACCUMULATORS // taps) * taps + taps + 1 <= registers
    for outputs in (1, 16, 40, 64, 256):
        rows, vectors = direct._sum_shape(outputs)
        assert rows * vectors + vectors + 1 <= registers
        rows, vectors = direct._flat_shape(outputs)
        assert rows * vectors + vectors + 1 <= registers


def test_grid_tiles_of_few_channels_pad_the_filters_no_more_than_the_general_tile():
    """Up to ``FEW_CHANNELS`` input channels a grid tile takes ``FEW_CHANNELS_GRID_TILE``'s
    filters unless they pad the filters further than ``GRID_TILE``'s; more channels keep
    ``GRID_TILE``."""
    from buildingai.accel.kernels.compiled import conv as direct

    def padded(outputs, rows):
        return -(-outputs // rows) * rows

    for outputs in range(1, 80):
        general = padded(outputs, direct.GRID_TILE[0])
        for channels in range(1, direct.FEW_CHANNELS + 1):
            rows, _ = direct._grid_shape(channels, outputs)
            assert padded(outputs, rows) <= general
        assert direct._grid_shape(direct.FEW_CHANNELS + 1, outputs) == direct.GRID_TILE
    assert direct._grid_shape(1, 32) == direct.FEW_CHANNELS_GRID_TILE


_OTHER_WIDTH = """
import numpy as np
from buildingai.accel import convolution as conv
from buildingai.accel.kernels.compiled import conv as direct, tile_ir
from tests.accel.kernels.test_compiled_conv import GEOMETRIES, _arrays, _close

assert tile_ir.LANES == 8, tile_ir.LANES
for name, geometry in GEOMETRIES.items():
    x, taps, bias, grad, padding = _arrays(geometry)
    bias = np.empty(0, np.float32) if bias is None else bias
    expected = np.empty((x.shape[0], taps.shape[0], grad.shape[2], grad.shape[3]), np.float32)
    conv.correlate(np, x, taps, None if bias.size == 0 else bias, expected, padding=padding)
    got = np.empty_like(expected)
    direct.correlate(x, taps, bias, got, padding)
    _close(got, expected)
    expected = np.empty_like(taps)
    conv.correlate_weight_grad(np, x, grad, expected, padding=padding)
    got = np.empty_like(taps)
    direct.correlate_weight_grad(x, grad, got, padding)
    _close(got, expected)
    turn = (taps.shape[2] - 1 - padding[0], taps.shape[3] - 1 - padding[1])
    if min(turn) >= 0:
        expected = np.empty(x.shape, np.float32)
        conv.correlate_turned(np, grad, taps, expected, padding=turn)
        got = np.empty_like(expected)
        direct.correlate_turned(grad, taps, got, turn)
        _close(got, expected)
print("ok")
"""


def test_avx2_tiles_match_im2col_too():
    """The 8-lane tiles (AVX2 machines) run here too, forced by BUILDINGAI_VECTOR_LANES."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[3]
    environment = dict(os.environ, BUILDINGAI_VECTOR_LANES="8")
    done = subprocess.run([sys.executable, "-c", _OTHER_WIDTH], cwd=root, env=environment,
                          capture_output=True, text=True, timeout=600)  # fmt: skip
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-3000:]


def test_a_vector_width_other_than_8_or_16_is_refused(monkeypatch):
    from buildingai.accel.kernels.compiled import tile_ir

    monkeypatch.setenv(tile_ir.LANES_VARIABLE, "12")
    with pytest.raises(ValueError, match="8 or 16"):
        tile_ir._lanes_for_this_cpu()

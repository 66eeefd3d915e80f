"""The Winograd weight gradient (``accel/winograd.py``): its compiled transforms equal their
NumPy references, the gradient equals PyTorch's in float64 over paddings and shapes, its
float32 error stays within PyTorch's on ResNet-18's layers, it takes only the calls it fits,
and two threads run it at once."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import buildingai as bai
import buildingai.nn.functional as F
from buildingai.accel import registry, winograd
from buildingai.accel.kernels import compiled
from tests.accel.test_float32_accuracy import assert_within_pytorchs

pytest.importorskip("numba")
torch = pytest.importorskip("torch")

NAME = "conv2d_weight_grad.winograd"


@pytest.fixture
def twins(monkeypatch, accel_on):
    """Acceleration on, and the compiled twins take calls of any size."""
    monkeypatch.setattr(compiled, "MIN_WORK", 0)


def _weight_grad_torch(x, grad, padding, dtype):
    """PyTorch's weight gradient of a 3x3 stride-1 convolution, in ``dtype``."""
    x, grad = (torch.tensor(a, dtype=dtype) for a in (x, grad))
    weight = torch.zeros((grad.shape[1], x.shape[1], 3, 3), dtype=dtype)
    return torch.ops.aten.convolution_backward(
        grad, x, weight, None, [1, 1], list(padding), [1, 1], False, [0, 0], 1,
        [False, True, False],
    )[1].numpy()  # fmt: skip


def _case(x_shape, filters, padding, seed=0):
    """float32 x and an output gradient for a 3x3 stride-1 convolution with ``padding``."""
    rng = np.random.default_rng(seed)
    n, _, height, width = x_shape
    out_hw = (height + 2 * padding[0] - 2, width + 2 * padding[1] - 2)
    x = rng.standard_normal(x_shape).astype(np.float32)
    grad = rng.standard_normal((n, filters) + out_hw).astype(np.float32)
    return x, grad


TRANSFORM_CASES = [  # (x shape, filters, padding)
    ((2, 3, 8, 8), 5, (1, 1)),
    ((3, 4, 10, 6), 2, (0, 0)),  # no padding: an 8x4 output
    ((1, 2, 6, 8), 3, (2, 2)),  # padding past the kernel's reach
    ((2, 5, 4, 12), 4, (1, 0)),
    ((4, 8, 2, 2), 3, (1, 1)),  # one tile per image
]


@pytest.mark.parametrize("x_shape, filters, padding", TRANSFORM_CASES)
def test_compiled_transforms_equal_their_references(twins, x_shape, filters, padding):
    x, grad = _case(x_shape, filters, padding)
    tiles = grad.shape[0] * grad.shape[2] * grad.shape[3] // 4
    keywords = {"ph": padding[0], "pw": padding[1]}
    for kernel, source, keys, rows in (
        (winograd.input_tiles, x, keywords, x.shape[1]),
        (winograd.grad_tiles, grad, {}, grad.shape[1]),
    ):
        reference, twin = winograd.planes_buffer(rows * tiles), winograd.planes_buffer(rows * tiles)
        kernel(np, source, reference, **keys)
        assert compiled.run(kernel, (source, twin), keys)
        size = rows * tiles
        assert np.array_equal(twin[:, :size], reference[:, :size]), kernel.__name__
    sums = np.random.default_rng(1).standard_normal((16, filters, x.shape[1]))
    sums = sums.astype(np.float32)
    reference = np.empty((filters, x.shape[1], 3, 3), np.float32)
    twin = np.empty_like(reference)
    winograd.filter_grad(np, sums, reference)
    assert compiled.run(winograd.filter_grad, (sums, twin))
    np.testing.assert_allclose(twin, reference, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("passes", ["one pass", "a pass per sample"])
@pytest.mark.parametrize("x_shape, filters, padding", TRANSFORM_CASES)
def test_weight_grad_equals_pytorchs(twins, monkeypatch, x_shape, filters, padding, passes):
    if passes != "one pass":
        monkeypatch.setattr(winograd, "PASS_BYTES", 1)
        monkeypatch.setattr(winograd, "PASS_TILES", 1)
    x, grad = _case(x_shape, filters, padding, seed=2)
    got = winograd.weight_grad(x, grad, padding)
    want = _weight_grad_torch(x, grad, padding, torch.float64)
    scale = np.abs(want).max()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=2e-6 * scale)


@pytest.mark.parametrize("x_shape, filters, padding", TRANSFORM_CASES[:2])
def test_numpy_references_give_the_same_gradient(twins, x_shape, filters, padding):
    """With the compiled twins switched off, the NumPy transforms compute the same sums."""
    x, grad = _case(x_shape, filters, padding, seed=3)
    twins = winograd.weight_grad(x, grad, padding)
    previous = compiled.set_enabled(False)
    try:
        references = winograd.weight_grad(x, grad, padding)
    finally:
        compiled.set_enabled(previous)
    np.testing.assert_allclose(twins, references, rtol=1e-6, atol=1e-6 * np.abs(twins).max())


RESNET_LAYERS = [  # (x shape, filters): ResNet-18's stride-1 3x3 layers of at most 16x16
    ((8, 128, 16, 16), 128),
    ((8, 256, 8, 8), 256),
    ((16, 512, 4, 4), 512),
]


# layers of fewer channels, which take it where the tiles are AVX2's (``LEAST_CHANNELS_AVX2``)
NARROW_LAYERS = [((16, 16, 28, 28), 32), ((16, 32, 28, 28), 64)]


@pytest.mark.parametrize("x_shape, filters", RESNET_LAYERS + NARROW_LAYERS)
def test_float32_error_within_pytorchs(accel_on, x_shape, filters):
    rng = np.random.default_rng(4)
    x = rng.standard_normal(x_shape)
    grad = rng.standard_normal((x_shape[0], filters) + x_shape[2:])
    exact = _weight_grad_torch(x, grad, (1, 1), torch.float64)
    theirs = _weight_grad_torch(x, grad, (1, 1), torch.float32)
    ours = winograd.weight_grad(x.astype(np.float32), grad.astype(np.float32), (1, 1))
    assert_within_pytorchs(f"winograd weight gradient {x_shape}", ours, theirs, exact)


def _weight_grad_through_conv2d(x, w, padding):
    xs = [bai.tensor(x), bai.tensor(w, requires_grad=True)]
    y = F.conv2d(*xs, padding=padding)
    (y * y).sum().backward()
    return xs[1].grad.numpy()


def test_conv2d_backward_takes_it_where_it_fits(kernels_run):
    rng = np.random.default_rng(5)
    x = rng.standard_normal((4, 64, 8, 8)).astype(np.float32)
    w = rng.standard_normal((64, 64, 3, 3)).astype(np.float32) / 24
    got = _weight_grad_through_conv2d(x, w, 1)
    assert NAME in kernels_run
    with bai.accel.enabled(False):
        want = _weight_grad_through_conv2d(x, w, 1)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5 * np.abs(want).max())


@pytest.mark.parametrize(
    "x_shape, w_shape, options",
    [
        ((4, 64, 9, 8), (64, 64, 3, 3), {"padding": 1}),  # odd output height
        ((4, 12, 8, 8), (64, 12, 3, 3), {"padding": 1}),  # too few channels
        ((1, 64, 8, 8), (64, 64, 3, 3), {"padding": 1}),  # too few tiles
        ((4, 64, 8, 8), (64, 64, 3, 3), {"padding": 1, "stride": 2}),
        ((4, 64, 8, 8), (64, 64, 3, 3), {"padding": 2, "dilation": 2}),
        ((4, 64, 8, 8), (64, 64, 5, 5), {"padding": 2}),
    ],
)
def test_calls_it_does_not_take(kernels_run, x_shape, w_shape, options):
    """And layers of 64 channels or more take it at any size."""
    rng = np.random.default_rng(6)
    x = rng.standard_normal(x_shape).astype(np.float32)
    w = bai.tensor(rng.standard_normal(w_shape).astype(np.float32), requires_grad=True)
    F.conv2d(bai.tensor(x), w, **options).sum().backward()
    assert NAME not in kernels_run
    float64 = bai.tensor(rng.standard_normal((4, 64, 8, 8)), requires_grad=True)
    weight64 = bai.tensor(rng.standard_normal((64, 64, 3, 3)), requires_grad=True)
    F.conv2d(float64, weight64, padding=1).sum().backward()
    assert NAME not in kernels_run
    for channels, size in ((96, 18), (64, 32)):
        weight = rng.standard_normal((channels, channels, 3, 3)).astype(np.float32)
        image = rng.standard_normal((2, channels, size, size)).astype(np.float32)
        kernels_run.clear()
        F.conv2d(bai.tensor(image), bai.tensor(weight, requires_grad=True),
                 padding=1).sum().backward()  # fmt: skip
        assert NAME in kernels_run


@pytest.mark.parametrize("lanes, least", [(8, 16), (16, 64)])
def test_fewest_channels_follow_the_vector_width(kernels_run, monkeypatch, lanes, least):
    """AVX2's 8-lane tiles leave layers from 16 channels and filters to it, AVX-512's from 64
    (at two threads): below, the direct twin's weight gradient is as fast there."""
    monkeypatch.setattr(compiled, "vector_lanes", lambda: lanes)
    monkeypatch.setattr(winograd, "get_num_threads", lambda: 2)
    assert winograd.least_channels() == least
    rng = np.random.default_rng(9)
    for channels, taken in ((least, True), (least - 1, False)):
        kernels_run.clear()
        x = rng.standard_normal((4, channels, 8, 8)).astype(np.float32)
        weight = rng.standard_normal((least, channels, 3, 3)).astype(np.float32)
        _weight_grad_through_conv2d(x, weight, 1)
        assert (NAME in kernels_run) is taken, (channels, lanes)


@pytest.mark.parametrize("threads", [1, 2])
def test_at_one_thread_with_avx512_it_takes_32_channels_and_64_filters(
    kernels_run, monkeypatch, threads
):
    """With AVX-512's tiles at one thread, 32 input channels and 64 filters pay already (the
    direct twin's weight gradient is the slower there); at two threads they keep to 64."""
    monkeypatch.setattr(compiled, "vector_lanes", lambda: 16)
    rng = np.random.default_rng(10)
    cases = [(32, 64, threads == 1), (31, 64, False), (32, 63, False), (64, 64, True)]
    previous = bai.get_num_threads()
    bai.set_num_threads(threads)
    try:
        for channels, filters, taken in cases:
            assert winograd.channels_pay(channels, filters) is taken, (channels, filters)
            kernels_run.clear()
            x = rng.standard_normal((4, channels, 8, 8)).astype(np.float32)
            weight = rng.standard_normal((filters, channels, 3, 3)).astype(np.float32)
            _weight_grad_through_conv2d(x, weight, 1)
            assert (NAME in kernels_run) is taken, (channels, filters, threads)
    finally:
        bai.set_num_threads(previous)


def test_switched_off_it_leaves_the_call_to_the_others(kernels_run):
    previous = registry.set_enabled(NAME, False)
    try:
        rng = np.random.default_rng(7)
        x = rng.standard_normal((4, 64, 8, 8)).astype(np.float32)
        _weight_grad_through_conv2d(x, rng.standard_normal((64, 64, 3, 3)).astype(np.float32), 1)
    finally:
        registry.set_enabled(NAME, previous)
    assert NAME not in kernels_run


@pytest.mark.parametrize("threads", [1, 2])
def test_two_threads_at_once(accel_on, threads):
    """Two Python threads computing weight gradients at once, on one or two numba threads
    each call: every result equals the one computed alone."""
    x, grad = _case((4, 64, 8, 8), 64, (1, 1), seed=8)
    bai.set_num_threads(threads, gemm=True)
    try:
        expected = winograd.weight_grad(x, grad, (1, 1))
        with ThreadPoolExecutor(2) as pool:
            results = list(pool.map(lambda _: winograd.weight_grad(x, grad, (1, 1)), range(6)))
    finally:
        bai.set_num_threads(None)
    for result in results:
        assert np.array_equal(result, expected)

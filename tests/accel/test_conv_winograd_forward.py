"""The forward and input gradient of 3x3 stride-1 convolutions by Winograd's F(2x2, 3x3)
(``accel/winograd_forward.py``): the output transform's twin equals its NumPy reference, both
agree with the records, the float32 error stays within PyTorch's on ResNet-18's first stage,
and the kernels take only the calls they fit."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import buildingai as bai
import buildingai.nn.functional as F
from buildingai.accel import winograd_forward
from buildingai.accel.kernels import compiled
from tests.accel.test_float32_accuracy import assert_within_pytorchs

torch = pytest.importorskip("torch")
pytest.importorskip("numba")

FORWARD, INPUT_GRAD = "conv2d.winograd", "conv2d_input_grad.winograd"
TWINS = {"output_tiles"}  # compared with their NumPy references here


@pytest.fixture
def eight_lanes(monkeypatch, kernels_run):
    """The kernels as they run with AVX2's tiles, on any CPU, and on few tiles: yields the names
    of the kernels that computed a call."""
    monkeypatch.setattr(compiled, "vector_lanes", lambda: 8)
    monkeypatch.setattr(winograd_forward, "LEAST_TILES", 0)
    return kernels_run


def _case(x_shape, filters, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(x_shape).astype(np.float32)
    weight = rng.standard_normal((filters, x_shape[1], 3, 3)) / np.sqrt(9 * x_shape[1])
    return x, weight.astype(np.float32), rng.standard_normal(filters).astype(np.float32)


@pytest.mark.parametrize("biased", [True, False])
def test_output_transform_twin_equals_its_reference(accel_on, monkeypatch, biased):
    monkeypatch.setattr(compiled, "MIN_WORK", 0)
    rng = np.random.default_rng(1)
    sums = rng.standard_normal((16, 8, 3 * 4 * 5)).astype(np.float32)
    bias = rng.standard_normal(8).astype(np.float32) if biased else np.empty(0, np.float32)
    twin, reference = (np.empty((3, 8, 8, 10), np.float32) for _ in range(2))
    assert compiled.run(winograd_forward.output_tiles, [sums, bias, twin], {})
    winograd_forward.output_tiles(np, sums, bias, reference)
    np.testing.assert_allclose(twin, reference, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("padding", [0, 1, 2])
def test_forward_and_input_gradient_equal_the_records(accel_on, padding):
    x, weight, bias = _case((3, 8, 10, 10), 6)
    ours = winograd_forward.forward(x, weight, bias, (padding, padding))
    tx = torch.tensor(x, dtype=torch.float64, requires_grad=True)
    expected = torch.conv2d(tx, torch.tensor(weight, dtype=torch.float64),
                            torch.tensor(bias, dtype=torch.float64), padding=padding)  # fmt: skip
    np.testing.assert_allclose(ours, expected.detach().numpy(), rtol=1e-5, atol=1e-5)
    grad = np.random.default_rng(2).standard_normal(ours.shape).astype(np.float32)
    expected.backward(torch.tensor(grad, dtype=torch.float64))
    got = winograd_forward.registered_input_grad(
        None, np, grad, weight, input_size=(10, 10), stride=(1, 1), padding=(padding, padding),
        dilation=(1, 1), groups=1,
    )  # fmt: skip
    np.testing.assert_allclose(got, tx.grad.numpy(), rtol=1e-5, atol=1e-5)


def test_conv2d_takes_it_where_it_fits(eight_lanes):
    x, weight, bias = _case((2, 64, 8, 8), 64)
    tensors = [bai.tensor(a, requires_grad=True) for a in (x, weight, bias)]
    y = F.conv2d(*tensors, padding=1)
    (y * y).sum().backward()
    assert {FORWARD, INPUT_GRAD} <= eight_lanes
    with bai.accel.enabled(False):
        plain = [bai.tensor(a, requires_grad=True) for a in (x, weight, bias)]
        expected = F.conv2d(*plain, padding=1)
        (expected * expected).sum().backward()
    np.testing.assert_allclose(y.numpy(), expected.numpy(), rtol=1e-4, atol=1e-5)
    for ours, theirs in zip(tensors, plain):
        scale = np.abs(theirs.grad.numpy()).max()
        np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), atol=2e-5 * scale)


@pytest.mark.parametrize(
    "x_shape, filters, options",
    [
        ((2, 128, 8, 8), 128, {"padding": 1}),  # 128 channels summed: past its error bound
        ((2, 32, 8, 8), 32, {"padding": 1}),  # too few channels to pay
        ((2, 64, 9, 8), 64, {"padding": 1}),  # an odd output height
        ((2, 64, 8, 8), 64, {"padding": 1, "stride": 2}),
        ((2, 64, 8, 8), 64, {"padding": 2, "dilation": 2}),
    ],
)
def test_calls_it_does_not_take(eight_lanes, x_shape, filters, options):
    x, weight, _ = _case(x_shape, filters)
    F.conv2d(bai.tensor(x), bai.tensor(weight, requires_grad=True), **options).sum().backward()
    assert not {FORWARD, INPUT_GRAD} & eight_lanes


def test_only_with_eight_lanes_and_enough_tiles(kernels_run, monkeypatch):
    x, weight, _ = _case((2, 64, 8, 8), 64)
    monkeypatch.setattr(compiled, "vector_lanes", lambda: 16)  # AVX-512's tiles
    F.conv2d(bai.tensor(x), bai.tensor(weight), padding=1)
    monkeypatch.setattr(compiled, "vector_lanes", lambda: 8)
    F.conv2d(bai.tensor(x), bai.tensor(weight), padding=1)  # 32 tiles, fewer than LEAST_TILES
    assert FORWARD not in kernels_run


@pytest.mark.parametrize("x_shape", [(8, 64, 32, 32), (16, 64, 16, 16)])
def test_float32_error_within_pytorchs(accel_on, x_shape):
    """ResNet-18's first stage: forward and input gradient within 1.5 times PyTorch's float32
    error against float64."""
    x, weight, bias = _case(x_shape, 64, seed=3)
    exact_x = torch.tensor(x, dtype=torch.float64, requires_grad=True)
    exact = torch.conv2d(exact_x, torch.tensor(weight, dtype=torch.float64), padding=1)
    theirs_x = torch.tensor(x, requires_grad=True)
    theirs = torch.conv2d(theirs_x, torch.tensor(weight), padding=1)
    ours = winograd_forward.forward(x, weight, np.empty(0, np.float32), (1, 1))
    assert_within_pytorchs(f"winograd forward {x_shape}", ours, theirs.detach().numpy(),
                           exact.detach().numpy())  # fmt: skip
    grad = np.random.default_rng(4).standard_normal(ours.shape)
    exact.backward(torch.tensor(grad))
    theirs.backward(torch.tensor(grad, dtype=torch.float32))
    got = winograd_forward.registered_input_grad(
        None, np, grad.astype(np.float32), weight, input_size=x_shape[2:], stride=(1, 1),
        padding=(1, 1), dilation=(1, 1), groups=1,
    )  # fmt: skip
    assert_within_pytorchs(f"winograd input gradient {x_shape}", got, theirs_x.grad.numpy(),
                           exact_x.grad.numpy())  # fmt: skip


@pytest.mark.parametrize("threads", [1, 2])
def test_two_threads_at_once(accel_on, threads):
    """Two Python threads running the forward at once, on one or two numba threads each call:
    every result equals the one computed alone."""
    x, weight, bias = _case((4, 64, 16, 16), 64, seed=5)
    bai.set_num_threads(threads, gemm=True)
    try:
        expected = winograd_forward.forward(x, weight, bias, (1, 1))
        with ThreadPoolExecutor(2) as pool:
            runs = list(pool.map(lambda _: winograd_forward.forward(x, weight, bias, (1, 1)),
                                 range(6)))  # fmt: skip
    finally:
        bai.set_num_threads(None)
    for result in runs:
        assert np.array_equal(result, expected)

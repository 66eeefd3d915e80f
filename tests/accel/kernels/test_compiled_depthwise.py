"""The depthwise convolution's twins (``compiled/depthwise.py``) against their NumPy references
(``accel/convolution.depthwise_correlate``, ``depthwise_input_grad``,
``depthwise_weight_grad``): strides 1 to 3, padding wider than the kernel's reach, dilation,
channel multipliers, with and without bias, inf and NaN inputs, images narrower than the
kernel; the same bits at one and two threads and on two Python threads at once; the gradients'
float32 error against PyTorch's; and ``avg_pool2d`` and a depthwise layer through them against
PyTorch."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import buildingai as bai
import buildingai.nn.functional as F
from buildingai.accel import convolution as conv
from buildingai.accel.kernels import compiled
from buildingai.ops.conv import output_hw
from tests.helpers import results_at_thread_counts

pytest.importorskip("numba")
pytestmark = pytest.mark.usefixtures("accel_on")

# the twins' names, for the coverage test in test_compiled.py
CASES = {"correlate", "depthwise_input_grad", "depthwise_weight_grad"}

# (N, C, H, W, multiplier, kh, kw, stride, padding, dilation, bias)
GEOMETRIES = {
    "pool-2x2": (1, 16, 32, 32, 1, 2, 2, (2, 2), (0, 0), (1, 1), False),
    "mobilenet-3x3": (2, 8, 14, 15, 1, 3, 3, (1, 1), (1, 1), (1, 1), True),
    "stride-2-padded": (2, 5, 11, 9, 1, 3, 3, (2, 2), (1, 1), (1, 1), True),
    "stride-3-by-1": (1, 4, 13, 17, 1, 3, 2, (3, 1), (1, 0), (1, 1), False),
    "multiplier-2-dilated": (2, 3, 10, 12, 2, 3, 3, (1, 2), (2, 1), (2, 2), True),
    "multiplier-3-stride-1-dilated": (2, 3, 10, 12, 3, 3, 3, (1, 1), (2, 1), (2, 2), False),
    "padding-beyond-the-kernel": (1, 2, 4, 5, 1, 2, 3, (1, 1), (3, 4), (1, 1), False),
    # one column: the left edge's last tap reads past the image's right side
    "narrower-than-the-kernel": (1, 2, 3, 1, 1, 3, 3, (1, 1), (1, 1), (1, 1), True),
    "convnext-7x7": (2, 4, 20, 20, 1, 7, 7, (1, 1), (3, 3), (1, 1), True),
    "stride-2-dilated-5x5": (2, 3, 19, 21, 1, 5, 5, (2, 2), (4, 3), (2, 2), False),
    # column stride 2 copies pixel pairs: even and odd widths, unpadded, one column
    "stride-2-unpadded-even": (1, 3, 8, 10, 1, 3, 3, (2, 2), (0, 0), (1, 1), True),
    "stride-2-one-column": (1, 2, 5, 1, 1, 3, 3, (2, 2), (1, 1), (1, 1), False),
    "stride-2-by-2-wide-padding": (1, 2, 6, 7, 1, 2, 4, (1, 2), (0, 3), (1, 1), False),
    # more tasks than depthwise.RANGES: each range's buffers serve several planes in turn
    "many-tasks-stride-2": (5, 30, 9, 11, 1, 3, 3, (2, 2), (1, 1), (1, 1), True),
    "many-tasks-multiplier-2-wide-padding": (3, 30, 7, 8, 2, 3, 3, (1, 2), (3, 2), (1, 1), False),
}


def _inputs(name, seed=0):
    """x, weight, bias (or None), grad and the geometry's keywords of ``GEOMETRIES[name]``."""
    n, c, h, w, multiplier, kh, kw, stride, padding, dilation, bias = GEOMETRIES[name]
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, c, h, w)).astype(np.float32)
    weight = rng.standard_normal((c * multiplier, 1, kh, kw)).astype(np.float32)
    b = rng.standard_normal(c * multiplier).astype(np.float32) if bias else None
    out_hw = output_hw((h, w), (kh, kw), stride, padding, dilation)
    grad = rng.standard_normal((n, c * multiplier) + out_hw).astype(np.float32)
    geometry = {"stride": stride, "padding": padding, "dilation": dilation}
    return x, weight, b, grad, geometry


def _twin_and_reference(kernel, arrays, out, geometry):
    """The twin's result and the reference's, the reference in float64."""
    got = np.full(out.shape, 7.0, np.float32)
    assert compiled.run(kernel, (*arrays, got), geometry)
    expected = np.empty(out.shape, np.float64)
    wide = [None if a is None else a.astype(np.float64) for a in arrays]
    kernel(np, *wide, expected, **geometry)
    return got, expected


@pytest.mark.parametrize("name", list(GEOMETRIES))
def test_forward_twin_equals_reference(name):
    """The same float32 operations in the same order: the same bits."""
    x, weight, b, grad, geometry = _inputs(name)
    x[0, 0, min(1, x.shape[2] - 1), min(1, x.shape[3] - 1)], x[-1, -1, -1, -1] = np.inf, np.nan
    got = np.full(grad.shape, 7.0, np.float32)
    expected = np.empty_like(got)
    assert compiled.run(conv.depthwise_correlate, (x, weight, b, got), geometry)
    conv.depthwise_correlate(np, x, weight, b, expected, **geometry)
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("name", list(GEOMETRIES))
def test_input_grad_twin_matches_reference(name):
    x, weight, _, grad, geometry = _inputs(name)
    got, expected = _twin_and_reference(conv.depthwise_input_grad, (grad, weight), x, geometry)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", list(GEOMETRIES))
def test_weight_grad_twin_matches_reference(name):
    x, weight, _, grad, geometry = _inputs(name)
    got, expected = _twin_and_reference(conv.depthwise_weight_grad, (x, grad), weight, geometry)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-4)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_gradient_twins_carry_nan_where_the_reference_does():
    x, weight, _, grad, geometry = _inputs("stride-2-padded")
    grad[0, 1, 2, 3] = np.nan
    x[1, 2, 4, 4] = np.nan
    got, expected = _twin_and_reference(conv.depthwise_input_grad, (grad, weight), x, geometry)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(expected))
    got, expected = _twin_and_reference(conv.depthwise_weight_grad, (x, grad), weight, geometry)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(expected))


def _all_three(name):
    """The three twins' outputs on ``GEOMETRIES[name]``."""
    x, weight, b, grad, geometry = _inputs(name)
    outputs = [np.empty_like(grad), np.empty_like(x), np.empty_like(weight)]
    calls = [
        (conv.depthwise_correlate, (x, weight, b, outputs[0])),
        (conv.depthwise_input_grad, (grad, weight, outputs[1])),
        (conv.depthwise_weight_grad, (x, grad, outputs[2])),
    ]
    for kernel, arrays in calls:
        assert compiled.run(kernel, arrays, geometry)
    return outputs


@pytest.mark.parametrize("name", ["mobilenet-3x3", "stride-2-dilated-5x5"])
def test_twins_give_the_same_bits_on_one_and_two_threads(name):
    one, two = results_at_thread_counts(lambda: _all_three(name))
    for on_one, on_two in zip(one, two):
        np.testing.assert_array_equal(on_one, on_two)


def test_twins_on_two_python_threads_at_once():
    """The twins hold no state: two Python threads run them at once."""
    expected = _all_three("convnext-7x7")
    with ThreadPoolExecutor(2) as pool:
        for outputs in pool.map(lambda _: _all_three("convnext-7x7"), range(6)):
            for got, wanted in zip(outputs, expected):
                np.testing.assert_array_equal(got, wanted)


def test_small_calls_take_the_twins(monkeypatch):
    """The twins take calls below the tier's usual minimum, from 1024 elements: their
    references are many small passes."""
    monkeypatch.setattr(compiled, "MIN_WORK", 1 << 14)  # this folder's conftest lowers it
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 16, 16, 16)).astype(np.float32)
    weight = rng.standard_normal((16, 1, 2, 2)).astype(np.float32)
    out = np.empty((1, 16, 8, 8), np.float32)
    assert x.size + weight.size + out.size < compiled.MIN_WORK
    assert compiled.takes(conv.depthwise_correlate, (x, weight, None, out))
    assert compiled.takes(conv.depthwise_input_grad, (out, weight, x))
    assert compiled.takes(conv.depthwise_weight_grad, (x, out, weight))
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


@pytest.mark.parametrize("stride", [1, 2])
def test_depthwise_layer_gradients_are_as_accurate_as_pytorchs(stride):
    """A MobileNet depthwise 3x3 in float32, forward and backward through the twins: each
    result's error against float64 at most 1.5x PyTorch's own float32 error."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    x = rng.standard_normal((4, 32, 28, 28))
    weight = rng.standard_normal((32, 1, 3, 3)) / 3
    upstream = rng.standard_normal(
        (4, 32) + output_hw((28, 28), (3, 3), (stride,) * 2, (1, 1), (1, 1))
    )

    def ours(dtype):
        inputs = [bai.Tensor(a.astype(dtype), requires_grad=True) for a in (x, weight)]
        out = F.conv2d(*inputs, stride=stride, padding=1, groups=32)
        (out * bai.Tensor(upstream.astype(dtype))).sum().backward()
        return [out.numpy(), *(t.grad.numpy() for t in inputs)]

    def theirs(dtype):
        inputs = [torch.tensor(a.astype(dtype), requires_grad=True) for a in (x, weight)]
        out = torch.nn.functional.conv2d(*inputs, stride=stride, padding=1, groups=32)
        (out * torch.tensor(upstream.astype(dtype))).sum().backward()
        return [out.detach().numpy(), *(t.grad.numpy() for t in inputs)]

    exact = theirs(np.float64)
    for got, reference in zip(ours(np.float64), exact):  # float64 runs the references
        np.testing.assert_allclose(got, reference, rtol=1e-10, atol=1e-10)
    for what, got, reference, single in zip(
        ("output", "input gradient", "weight gradient"), ours(np.float32), exact, theirs(np.float32)
    ):
        error, torch_error = (np.abs(a - reference).max() for a in (got, single))
        assert error <= 1.5 * torch_error + 1e-7, (what, error, torch_error)

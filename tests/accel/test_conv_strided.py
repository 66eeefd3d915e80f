"""conv2d and its input gradient through the stride-2 twins on phase images
(``accel/convolution.py``, ``kernels/compiled/conv_strided.py``): float32 values and gradients
equal to the records' im2col reference and close to PyTorch's float64, second derivatives, and
the calls that keep to im2col."""

from __future__ import annotations

import numpy as np
import pytest

import buildingai as bai
import buildingai.nn.functional as F

pytest.importorskip("numba")
torch = pytest.importorskip("torch")

from buildingai.accel.kernels import compiled  # noqa: E402
from buildingai.accel.kernels.compiled import conv_strided  # noqa: E402 - needs numba

STRIDED = {"conv2d.strided", "conv2d_input_grad.strided"}
# (x shape, weight shape, padding): even images that a stride-2 convolution halves
CASES = [
    ((2, 3, 8, 8), (5, 3, 3, 3), 1),
    ((3, 4, 6, 10), (7, 4, 1, 1), 0),  # only the even phase is read
    ((2, 5, 12, 8), (4, 5, 5, 5), 2),  # two shifts a side
    ((2, 3, 4, 4), (33, 3, 3, 3), 1),  # more filters than a tile's rows, a 2x2 output
    ((2, 3, 4, 6), (4, 3, 2, 2), 0),  # an even kernel: the taps start at phase (0, 0)
    ((4, 16, 16, 16), (24, 16, 3, 3), 1),
]


def _forward_backward(x, w, b, padding, accelerated: bool):
    """(y, dx, dw, db) of sum(y * y) for y = conv2d(x, w, b, stride=2, padding=padding)."""
    with bai.accel.enabled(accelerated):
        tensors = [bai.tensor(a, requires_grad=True) for a in (x, w, b)]
        y = F.conv2d(*tensors, stride=2, padding=padding)
        (y * y).sum().backward()
        return [y.numpy()] + [t.grad.numpy() for t in tensors]


def _inputs(x_shape, w_shape, seed=0, dtype=np.float32):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(x_shape).astype(dtype)
    w = rng.standard_normal(w_shape).astype(dtype)
    b = rng.standard_normal(w_shape[0]).astype(dtype)
    return x, w, b


def test_phase_plan_covers_every_tap_once():
    phases, taps = conv_strided.phase_plan((3, 3), (1, 1))
    assert phases == ((0, 0), (0, 1), (1, 0), (1, 1))
    assert sorted((i, j) for i, j, *_ in taps) == [(i, j) for i in range(3) for j in range(3)]
    for i, j, p, d_h, d_w in taps:  # tap (i, j) reads row 2*ho + i - 1 = 2*(ho + d_h) + a
        a, b = phases[p]
        assert (i - 1, j - 1) == (2 * d_h + a, 2 * d_w + b)
    assert conv_strided.phase_plan((1, 1), (0, 0)) == (((0, 0),), ((0, 0, 0, 0, 0),))


@pytest.mark.parametrize("x_shape, w_shape, padding", CASES, ids=str)
def test_strided_twins_agree_with_im2col(kernels_run, x_shape, w_shape, padding):
    x, w, b = _inputs(x_shape, w_shape)
    got = _forward_backward(x, w, b, padding, accelerated=True)
    expected = _forward_backward(x, w, b, padding, accelerated=False)
    for a, e in zip(got, expected):
        np.testing.assert_allclose(a, e, rtol=1e-5, atol=1e-5 * max(1.0, np.abs(e).max()))
    assert kernels_run >= STRIDED


@pytest.mark.parametrize("threads", [1, 2])
def test_strided_twins_on_one_and_two_threads(monkeypatch, kernels_run, threads):
    """The phase split, the tiles, the packing and the weave share their work among threads."""
    monkeypatch.setattr(compiled, "MIN_PARALLEL_WORK", 0)
    x, w, b = _inputs((3, 6, 12, 10), (20, 6, 3, 3), seed=6)
    bai.set_num_threads(threads)
    try:
        got = _forward_backward(x, w, b, 1, accelerated=True)
    finally:
        bai.set_num_threads(None)
    expected = _forward_backward(x, w, b, 1, accelerated=False)
    for a, e in zip(got, expected):
        np.testing.assert_allclose(a, e, rtol=1e-5, atol=1e-5 * max(1.0, np.abs(e).max()))
    assert kernels_run >= STRIDED


def test_strided_twins_agree_with_pytorch_in_float64(kernels_run):
    x, w, b = _inputs((4, 8, 14, 10), (16, 8, 3, 3), seed=1)
    got = _forward_backward(x, w, b, 1, accelerated=True)
    tensors = [torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in (x, w, b)]
    reference = torch.nn.functional.conv2d(*tensors, stride=2, padding=1)
    (reference * reference).sum().backward()
    for mine, want in zip(got, (reference, *(t.grad for t in tensors))):
        want = want.detach().numpy()
        np.testing.assert_allclose(mine, want, rtol=0, atol=2e-5 * np.abs(want).max())
    assert kernels_run >= STRIDED


def test_float64_keeps_to_the_record(kernels_run):
    x, w, b = _inputs((2, 3, 8, 8), (5, 3, 3, 3), dtype=np.float64)
    got = _forward_backward(x, w, b, 1, accelerated=True)
    expected = _forward_backward(x, w, b, 1, accelerated=False)
    for a, e in zip(got, expected):
        np.testing.assert_allclose(a, e, rtol=1e-12, atol=1e-12)
    assert not STRIDED & kernels_run


def test_second_derivatives_through_the_strided_twins(kernels_run):
    """d/dx of (d loss / dw) . v, and d/dgrad of the input gradient: the backward rules'
    stride-2 convolutions and transposed convolutions go through the twins too."""
    x, w, b = _inputs((2, 3, 8, 6), (5, 3, 3, 3), seed=2)
    v = np.random.default_rng(3).standard_normal(w.shape).astype(np.float32)
    results = []
    for accelerated in (True, False):
        with bai.accel.enabled(accelerated):
            xt, wt = bai.tensor(x, requires_grad=True), bai.tensor(w, requires_grad=True)
            y = F.conv2d(xt, wt, bai.tensor(b), stride=2, padding=1)
            (gw,) = bai.grad((y * y).sum(), [wt], create_graph=True)
            (gx,) = bai.grad((gw * bai.tensor(v)).sum(), [xt])
            results.append(gx.numpy())
    np.testing.assert_allclose(
        results[0], results[1], rtol=1e-4, atol=1e-4 * np.abs(results[1]).max()
    )
    assert kernels_run >= STRIDED


@pytest.mark.parametrize(
    "x_shape, w_shape, padding",
    [
        ((2, 3, 7, 8), (4, 3, 3, 3), 1),  # odd height: no exact halving
        ((2, 3, 8, 8), (4, 3, 3, 3), 0),  # the output is 3x3, not 4x4
    ],
    ids=str,
)
def test_calls_that_keep_to_im2col(kernels_run, x_shape, w_shape, padding):
    x, w, b = _inputs(x_shape, w_shape)
    _forward_backward(x, w, b, padding, accelerated=True)
    assert not STRIDED & kernels_run
    assert {"conv2d.im2col", "conv2d_input_grad.im2col"} <= kernels_run


@pytest.mark.parametrize("output_padding, size", [(0, 7), (1, 8)])
def test_transposed_convolutions(kernels_run, output_padding, size):
    """conv_transpose2d with stride 2 is the input gradient: to an even size (output_padding 1
    here) through the phase images, to an odd one through im2col."""
    x, w, _ = _inputs((2, 4, 4, 4), (4, 3, 3, 3))
    results = []
    for accelerated in (True, False):
        with bai.accel.enabled(accelerated):
            y = F.conv_transpose2d(
                bai.tensor(x), bai.tensor(w), stride=2, padding=1, output_padding=output_padding
            )
            results.append(y.numpy())
    assert results[0].shape == (2, 3, size, size)
    np.testing.assert_allclose(results[0], results[1], rtol=1e-5, atol=1e-5)
    assert ("conv2d_input_grad.strided" in kernels_run) == (size % 2 == 0)

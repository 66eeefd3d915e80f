"""conv2d and its adjoints through the direct convolution kernels (``accel/convolution.py``):
float32 values, first and second derivatives equal to the records' im2col reference (and to
PyTorch's), the calls that keep to im2col, two threads convolving at once, and the compiled im2col."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import buildingai as bai
import buildingai.nn.functional as F
from buildingai.accel import convolution
from buildingai.accel.kernels import compiled
from buildingai.ops import conv as conv_record
from tests.ops.test_conv import CONV2D_CASES

pytest.importorskip("numba")
torch = pytest.importorskip("torch")


@pytest.fixture
def direct_calls(monkeypatch, accel_on):
    """Acceleration on, and the direct twins take every call they can (one thread is enough);
    yields the names of the reference kernels whose twins ran."""
    monkeypatch.setattr(convolution, "DIRECT_MIN_THREADS", 1)
    monkeypatch.setattr(compiled, "MIN_WORK", 0)
    monkeypatch.setattr(convolution, "DIRECT_WEIGHT_GRAD_MIN_POSITIONS", 0)
    monkeypatch.setattr(convolution, "DIRECT_WEIGHT_GRAD_MOST_CHANNELS_AVX2", 1 << 30)
    ran = []
    run = compiled.run

    def spy(kernel, arrays, keywords=None, work=None):
        done = run(kernel, arrays, keywords, work)
        twins = (convolution.correlate, convolution.correlate_turned,
                 convolution.correlate_weight_grad)  # fmt: skip
        if done and kernel in twins:
            ran.append(kernel.__name__)
        return done

    monkeypatch.setattr(compiled, "run", spy)
    return ran


def _forward_backward(x, w, b, kwargs, twins: bool):
    """(y, dx, dw, db) of sum(y * y) for y = conv2d(x, w, b, **kwargs), float32, with
    acceleration on (``twins``) or on the records' reference."""
    with bai.accel.enabled(twins):
        xs = [bai.tensor(a, requires_grad=True) for a in (x, w, b)]
        y = F.conv2d(*xs, **kwargs)
        (y * y).sum().backward()
        return [y.numpy()] + [t.grad.numpy() for t in xs]


def _inputs(x_shape, w_shape, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(x_shape).astype(np.float32)
    w = rng.standard_normal(w_shape).astype(np.float32)
    b = rng.standard_normal(w_shape[0]).astype(np.float32)
    return x, w, b


def _is_direct(kwargs, w_shape) -> bool:
    groups = kwargs.get("groups", 1)
    return (
        kwargs.get("stride", 1) in (1, (1, 1))
        and kwargs.get("dilation", 1) in (1, (1, 1))
        and groups == 1
    )


def test_planes_256_bytes_apart_are_read_a_cache_line_further():
    from buildingai.accel.kernels.compiled import planes as tiles

    # 128 channels: planes 256 bytes apart or a multiple of it alias, 64 or 168 bytes do not
    strides = [tiles.plane_stride(p, 128) for p in (16, 42, 64, 256, 1024)]
    assert strides == [16, 42, 80, 272, 1040]
    # 32x32 planes (4 KiB) spaced from 5 channels on, 8x8 (256 bytes) from 65
    assert [tiles.plane_stride(1024, c) for c in (4, 5)] == [1024, 1040]
    assert [tiles.plane_stride(64, c) for c in (64, 65)] == [64, 80]
    x = np.arange(2 * 80 * 8 * 8, dtype=np.float32).reshape(2, 80, 8, 8)
    flat, stride = tiles.spaced_planes(x)
    assert stride == 80
    np.testing.assert_array_equal(flat.reshape(160, 80)[:, :64], x.reshape(160, 64))
    unspaced = np.ones((2, 3, 5, 6), np.float32)
    assert tiles.spaced_planes(unspaced)[1] == 30
    assert np.shares_memory(tiles.spaced_planes(unspaced)[0], unspaced)


@pytest.mark.parametrize("x_shape", [(2, 20, 16, 16), (2, 70, 8, 8), (1, 6, 32, 32)], ids=str)
def test_direct_twins_on_spaced_planes(direct_calls, x_shape):
    """Planes of a multiple of 64 values are read from a spaced copy: forward, input and weight
    gradients still equal the im2col reference, with more filters than one tile's rows."""
    x, w, b = _inputs(x_shape, (13, x_shape[1], 3, 3), seed=5)
    got = _forward_backward(x, w, b, {"padding": 1}, twins=True)
    expected = _forward_backward(x, w, b, {"padding": 1}, twins=False)
    for a, e in zip(got, expected):
        np.testing.assert_allclose(a, e, rtol=1e-5, atol=1e-5 * max(1.0, np.abs(e).max()))
    assert set(direct_calls) == {"correlate", "correlate_turned", "correlate_weight_grad"}


@pytest.mark.parametrize("group", [8, 64], ids=str)
def test_channels_summed_a_group_at_a_time(direct_calls, monkeypatch, group):
    """More input channels than a group (``CHANNEL_GROUP``; 8 here makes groups of 8, 8 and 4,
    and the input gradient's 19 channels 8, 8 and 3): forward, input and weight gradients equal
    the im2col reference; with groups of 64, 70 channels make a group of 64 and one of 6."""
    from buildingai.accel.kernels.compiled import conv as tiles

    monkeypatch.setattr(tiles, "CHANNEL_GROUP", group)
    channels, filters = (20, 19) if group == 8 else (70, 67)
    x, w, b = _inputs((2, channels, 9, 7), (filters, channels, 3, 3), seed=7)
    got = _forward_backward(x, w, b, {"padding": 1}, twins=True)
    expected = _forward_backward(x, w, b, {"padding": 1}, twins=False)
    for a, e in zip(got, expected):
        np.testing.assert_allclose(a, e, rtol=1e-5, atol=1e-5 * max(1.0, np.abs(e).max()))
    assert set(direct_calls) == {"correlate", "correlate_turned", "correlate_weight_grad"}


@pytest.mark.parametrize("padding", [0, 2, (1, 2), (2, 1)], ids=str)
def test_padding_beyond_the_same_size_runs_on_a_padded_copy(direct_calls, padding):
    """More padding than the same size needs (the input gradient of an unpadded convolution:
    kernel - 1) is a same-size correlation of a zero-padded copy: values and gradients equal
    the im2col reference."""
    from buildingai.accel.kernels.compiled import conv as tiles

    x, w, b = _inputs((2, 5, 13, 11), (9, 5, 3, 3), seed=6)
    got = _forward_backward(x, w, b, {"padding": padding}, twins=True)
    expected = _forward_backward(x, w, b, {"padding": padding}, twins=False)
    for a, e in zip(got, expected):
        np.testing.assert_allclose(a, e, rtol=1e-5, atol=1e-5 * max(1.0, np.abs(e).max()))
    assert set(direct_calls) == {"correlate", "correlate_turned", "correlate_weight_grad"}
    padded, same = tiles._padded_to_same_size(x, (3, 3), (2, 3))
    assert same == (1, 1)
    np.testing.assert_array_equal(padded, np.pad(x, ((0, 0), (0, 0), (1, 1), (2, 2))))


@pytest.mark.parametrize("x_shape, w_shape, kwargs", CONV2D_CASES)
def test_direct_twins_agree_with_im2col(direct_calls, x_shape, w_shape, kwargs):
    x, w, b = _inputs(x_shape, w_shape)
    got = _forward_backward(x, w, b, kwargs, twins=True)
    expected = _forward_backward(x, w, b, kwargs, twins=False)
    for a, e in zip(got, expected):
        np.testing.assert_allclose(a, e, rtol=1e-5, atol=1e-5 * max(1.0, np.abs(e).max()))
    if _is_direct(kwargs, w_shape):
        # the input gradient goes direct too where padding <= kernel - 1 (see the next test)
        assert {"correlate", "correlate_weight_grad"} <= set(direct_calls)
        assert set(direct_calls) <= {"correlate", "correlate_turned", "correlate_weight_grad"}
    else:
        assert direct_calls == []


def test_direct_twins_agree_with_pytorch_in_float64(direct_calls):
    x, w, b = _inputs((4, 8, 13, 11), (16, 8, 3, 3), seed=1)
    y, dx, dw, db = _forward_backward(x, w, b, {"padding": 1}, twins=True)
    tensors = [torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in (x, w, b)]
    reference = torch.nn.functional.conv2d(*tensors, padding=1)
    (reference * reference).sum().backward()
    for got, want in zip((y, dx, dw, db), (reference, *(t.grad for t in tensors))):
        want = want.detach().numpy()
        np.testing.assert_allclose(got, want, rtol=0, atol=2e-5 * np.abs(want).max())
    assert direct_calls == ["correlate", "correlate_turned", "correlate_weight_grad"]


def test_second_derivatives_through_the_direct_twins(direct_calls):
    """d/dx of (d loss / dw) . v: the backward rules' own convolutions go direct too."""
    x, w, b = _inputs((2, 3, 9, 8), (5, 3, 3, 3), seed=2)
    v = np.random.default_rng(3).standard_normal(w.shape).astype(np.float32)
    results = []
    for twins in (True, False):
        with bai.accel.enabled(twins):
            xt, wt = bai.tensor(x, requires_grad=True), bai.tensor(w, requires_grad=True)
            y = F.conv2d(xt, wt, bai.tensor(b), padding=1)
            (gw,) = bai.grad((y * y).sum(), [wt], create_graph=True)
            (gx,) = bai.grad((gw * bai.tensor(v)).sum(), [xt])
            results.append(gx.numpy())
    np.testing.assert_allclose(
        results[0], results[1], rtol=1e-4, atol=1e-4 * np.abs(results[1]).max()
    )
    assert "correlate_weight_grad" in direct_calls


def test_calls_that_keep_to_im2col(direct_calls):
    x, w, b = _inputs((2, 4, 8, 8), (4, 4, 3, 3))
    _forward_backward(x.astype(np.float64), w.astype(np.float64), b.astype(np.float64), {}, True)
    _forward_backward(x, w, b, {"stride": 2}, True)
    _forward_backward(x, w, b, {"dilation": 2}, True)
    _forward_backward(x, w[:, :2], b, {"groups": 2}, True)
    assert direct_calls == []


def test_small_images_keep_the_weight_gradient_on_im2col(direct_calls, monkeypatch):
    """At most DIRECT_WEIGHT_GRAD_MIN_POSITIONS positions: im2col's product for the weight
    gradient, the direct twins for the rest."""
    monkeypatch.setattr(convolution, "DIRECT_WEIGHT_GRAD_MIN_POSITIONS", 64)
    x, w, b = _inputs((2, 4, 8, 8), (4, 4, 3, 3))
    _forward_backward(x, w, b, {"padding": 1}, True)
    assert direct_calls == ["correlate", "correlate_turned"]
    direct_calls.clear()
    x, w, b = _inputs((2, 4, 9, 8), (4, 4, 3, 3))
    _forward_backward(x, w, b, {"padding": 1}, True)
    assert direct_calls == ["correlate", "correlate_turned", "correlate_weight_grad"]


@pytest.mark.parametrize("lanes, channels, taken", [(8, 4, True), (8, 8, False), (16, 8, True)])
def test_weight_gradient_channels_by_vector_width(direct_calls, monkeypatch, lanes, channels,
                                                  taken):  # fmt: skip
    """AVX2's 8-lane tiles: the direct weight gradient for inputs of at most 4 channels, im2col's
    product beyond; AVX-512's 16-lane tiles: any channel count."""
    monkeypatch.setattr(convolution, "DIRECT_WEIGHT_GRAD_MOST_CHANNELS_AVX2", 4)
    monkeypatch.setattr(compiled, "vector_lanes", lambda: lanes)
    x, w, b = _inputs((2, channels, 9, 8), (4, channels, 3, 3))
    _forward_backward(x, w, b, {"padding": 1}, True)
    assert ("correlate_weight_grad" in direct_calls) is taken


def test_forward_threads_are_chosen_for_its_multiply_adds(direct_calls, monkeypatch):
    """A batch-1 1->32 layer holds 22,736 elements in its arrays, below what two threads take
    for element-wise work, but makes 194,688 multiply-adds: those choose its threads."""
    chosen = []
    monkeypatch.setattr(
        compiled, "_use_threads", lambda work, parallel_from=None: chosen.append(work)
    )
    x, w, b = _inputs((1, 1, 28, 28), (32, 1, 3, 3))
    F.conv2d(bai.tensor(x), bai.tensor(w), bai.tensor(b))
    assert direct_calls == ["correlate"]
    assert chosen == [32 * 26 * 26 * 9]


def _direct_ran(threads: int, gemm: bool, monkeypatch, shapes=((8, 16, 20, 20), (16, 16, 3, 3))):
    """Whether the direct forward twin ran for a convolution of (x, w) ``shapes`` and its
    backward on ``threads`` threads, the products on them (``gemm``) or on NumPy's BLAS."""
    ran = []
    run = compiled.run
    monkeypatch.setattr(
        compiled, "run", lambda k, a, kw=None, work=None: ran.append(k) or run(k, a, kw, work)
    )
    x, w, b = _inputs(*shapes)
    bai.set_num_threads(threads, gemm=gemm)
    try:
        _forward_backward(x, w, b, {"padding": 1}, True)
    finally:
        bai.set_num_threads(None)
    return convolution.correlate in ran


def test_one_thread_beside_blas_threads_keeps_to_im2col(monkeypatch, accel_on):
    assert not _direct_ran(1, gemm=False, monkeypatch=monkeypatch)


def test_one_pool_of_one_thread_convolves_directly(monkeypatch, accel_on):
    """The product would get one thread too, and the register tiles beat its GEMM there."""
    pytest.importorskip("threadpoolctl")  # one pool holds NumPy's BLAS at one thread
    assert _direct_ran(1, gemm=True, monkeypatch=monkeypatch)


SMALL = ((1, 1, 28, 28), (32, 1, 3, 3))  # 21632 outputs, 194688 multiply-adds: one numba thread


def test_one_thread_beside_an_uncut_product_convolves_directly(monkeypatch, accel_on):
    """A convolution too small for two of numba's threads, whose im2col product would not be
    cut across threads either (one pool of two), or not threaded by NumPy's BLAS."""
    pytest.importorskip("threadpoolctl")
    assert compiled.thread_count(28 * 28 + 32 * 9 + 32 * 26 * 26) == 1
    assert _direct_ran(2, gemm=True, monkeypatch=monkeypatch, shapes=SMALL)
    assert _direct_ran(1, gemm=False, monkeypatch=monkeypatch, shapes=SMALL)


def test_one_thread_beside_a_cut_product_keeps_to_im2col(monkeypatch, accel_on):
    """On one of numba's threads (here forced), a product at least SPLIT_MULTIPLY_ADDS long
    is cut across a pool of two: im2col runs; a smaller one is not: the direct twin runs."""
    pytest.importorskip("threadpoolctl")
    monkeypatch.setattr(compiled, "thread_count", lambda work, parallel_from=None: 1)
    large = ((4, 32, 24, 24), (32, 32, 3, 3))  # 73728 outputs x 288 >= 1 << 21
    assert not _direct_ran(2, gemm=True, monkeypatch=monkeypatch, shapes=large)
    small = ((1, 16, 16, 16), (32, 16, 3, 3))  # 8192 outputs x 144 < 1 << 21
    assert _direct_ran(2, gemm=True, monkeypatch=monkeypatch, shapes=small)


@pytest.mark.parametrize(
    "x_shape, w_shape",
    [((4, 6, 12, 12), (8, 6, 3, 3)), ((32, 16, 4, 4), (16, 16, 3, 3))],  # flat; sample lanes
    ids=str,
)
def test_two_threads_convolve_at_once(direct_calls, x_shape, w_shape):
    x, w, b = _inputs(x_shape, w_shape, seed=4)
    expected = _forward_backward(x, w, b, {"padding": 1}, twins=True)
    with ThreadPoolExecutor(2) as pool:
        results = list(
            pool.map(lambda _: _forward_backward(x, w, b, {"padding": 1}, True), range(6))
        )
    for result in results:
        for got, want in zip(result, expected):
            assert np.array_equal(got, want)


IM2COL_CASES = [
    # (x shape, kernel, stride, padding, dilation)
    ((2, 3, 8, 8), (3, 3), (1, 1), (1, 1), (1, 1)),  # same size: shifted flat images
    ((2, 3, 5, 7), (5, 3), (1, 1), (2, 1), (1, 1)),
    ((2, 2, 3, 3), (7, 7), (1, 1), (3, 3), (1, 1)),  # shifts past the whole image
    ((2, 3, 6, 6), (3, 3), (1, 1), (0, 0), (1, 1)),  # stride 1, row by row
    ((2, 3, 8, 10), (3, 3), (2, 2), (1, 1), (1, 1)),  # halving: shifted phase images
    ((2, 3, 6, 8), (2, 2), (2, 2), (0, 0), (1, 1)),
    ((2, 3, 7, 8), (3, 3), (2, 2), (1, 1), (1, 1)),  # odd height: row by row
    ((2, 4, 8, 6), (1, 2), (2, 2), (0, 0), (1, 1)),  # two of the four phase images
    ((3, 2, 9, 7), (5, 4), (3, 2), (2, 0), (1, 1)),
    ((2, 4, 11, 12), (3, 3), (1, 2), (2, 3), (2, 2)),  # dilated, padding wider than a tap reach
    ((1, 2, 4, 4), (7, 7), (2, 2), (3, 3), (1, 1)),  # no column reads only the inside
    ((2, 5, 6, 6), (1, 3), (2, 2), (0, 1), (1, 1)),  # one kernel row
]


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("x_shape, kernel, stride, padding, dilation", IM2COL_CASES, ids=str)
def test_im2col_twin_copies_the_records_columns(
    monkeypatch, accel_on, threads, x_shape, kernel, stride, padding, dilation
):
    monkeypatch.setattr(compiled, "MIN_WORK", 0)
    monkeypatch.setattr(compiled, "MIN_PARALLEL_WORK", 0)
    ran = []
    run = compiled.run
    monkeypatch.setattr(
        compiled, "run", lambda k, a, kw=None, work=None: ran.append(k) or run(k, a, kw, work)
    )
    x = np.random.default_rng(5).standard_normal(x_shape).astype(np.float32)
    out_hw = conv_record.output_hw(x_shape[2:], kernel, stride, padding, dilation)
    bai.set_num_threads(threads)
    try:
        got = convolution._im2col(np, x, kernel, out_hw, stride, padding, dilation, 1)
    finally:
        bai.set_num_threads(None)
    expected = conv_record.im2col(np, x, kernel, out_hw, stride, padding, dilation, 1)
    assert convolution.columns_of in ran
    assert np.array_equal(got, expected)

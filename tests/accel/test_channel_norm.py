"""The channel kernels of ``standardize``, its gradient, ``mean`` and ``var`` (every axis but 1)
and of batch normalisation's records (``ops/batch_norm.py``) against the records, and batch
normalisation with them against PyTorch: values, gradients and running statistics, and float32
error against a float64 reference within 1.5x PyTorch's own."""

from __future__ import annotations

import numpy as np
import pytest

import buildingai as bai
import buildingai.nn.functional as F

from .test_float32_accuracy import assert_within_pytorchs

torch = pytest.importorskip("torch")
pytest.importorskip("numba")

KERNELS = {"standardize.channels", "standardize_grad.channels", "mean.channels", "var.channels"}
BATCH_NORM_KERNELS = {
    "batch_statistics.channels",
    "batch_norm.channels",
    "batch_norm_grad_sums.channels",
    "batch_norm_input_grad.channels",
}
SHAPES = [(32, 8, 16, 16), (4, 3, 100), (2, 5, 6, 7, 8), (64, 4)]


def _input(shape, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape) * 3 + 2
    x[:, 0] += 1e3  # a channel far from zero: its mean cancels
    return x.astype(np.float32)


def _standardize_both_ways(x, g, axes):
    """(output, input gradient) of standardize with acceleration on and then off."""
    results = []
    for on in (True, False):
        with bai.accel.enabled(on):
            t = bai.tensor(x, requires_grad=True)
            y = F.standardize(t, axes)
            y.backward(bai.tensor(g))
            results.append((y.numpy(), t.grad.numpy()))
    return results


@pytest.mark.parametrize("shape", SHAPES)
def test_standardize_kernels_against_the_record(kernels_run, shape):
    x = _input(shape)
    g = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    axes = (0, *range(2, len(shape)))
    (out, grad), (expected_out, expected_grad) = _standardize_both_ways(x, g, axes)
    np.testing.assert_allclose(out, expected_out, rtol=2e-4, atol=2e-4)
    np.testing.assert_allclose(grad, expected_grad, rtol=2e-4, atol=2e-4)
    assert {"standardize.channels", "standardize_grad.channels"} <= kernels_run


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("keepdims", [False, True])
def test_mean_and_var_kernels_against_the_record(kernels_run, shape, keepdims):
    x = bai.tensor(_input(shape))
    axes = (0, *range(2, len(shape)))
    with bai.accel.enabled(False):
        expected = [x.mean(axis=axes, keepdims=keepdims).numpy()] + [
            x.var(axis=axes, keepdims=keepdims, correction=c).numpy() for c in (0, 1)
        ]
    results = [x.mean(axis=axes, keepdims=keepdims).numpy()] + [
        x.var(axis=axes, keepdims=keepdims, correction=c).numpy() for c in (0, 1)
    ]
    for result, reference in zip(results, expected):
        assert result.shape == reference.shape and result.dtype == reference.dtype
        np.testing.assert_allclose(result, reference, rtol=1e-5, atol=1e-6)
    assert {"mean.channels", "var.channels"} <= kernels_run


def test_other_layouts_run_the_record(kernels_run):
    """float64, other axes, a single value per channel, and a strided input."""
    x = _input((4, 3, 5, 5))
    F.standardize(bai.tensor(x.astype(np.float64)), (0, 2, 3))
    F.standardize(bai.tensor(x), (1, 2, 3))
    bai.tensor(np.ones((1, 3, 1), np.float32)).var(axis=(0, 2), correction=1)
    assert not kernels_run & KERNELS
    strided = bai.tensor(x).permute(0, 1, 3, 2)  # not contiguous: seen through a copy
    out = F.standardize(strided, (0, 2, 3))
    with bai.accel.enabled(False):
        expected = F.standardize(strided, (0, 2, 3))
    np.testing.assert_allclose(out.numpy(), expected.numpy(), rtol=2e-4, atol=2e-4)


def test_batch_norm_training_against_pytorch(kernels_run):
    """BatchNorm2d in training, float64 against PyTorch (the kernels take float32 only, so
    this is the record) and float32 with the kernels against PyTorch's float32."""
    x = _input((16, 6, 9, 9))
    upstream = np.random.default_rng(2).standard_normal(x.shape)
    results = {}
    for dtype in ("float64", "float32"):
        ours, theirs = bai.nn.BatchNorm2d(6), torch.nn.BatchNorm2d(6)
        ours.to(dtype), theirs.to(getattr(torch, dtype))
        for module in (ours, theirs):
            module.weight.data.copy_(type(module.weight.data)(np.linspace(0.5, 2, 6)))
        xs = bai.tensor(x.astype(dtype), requires_grad=True)
        xt = torch.tensor(x.astype(dtype), requires_grad=True)
        ys, yt = ours(xs), theirs(xt)
        ys.backward(bai.tensor(upstream.astype(dtype)))
        yt.backward(torch.tensor(upstream.astype(dtype)))
        results[dtype] = (ours, theirs, ys, yt, xs, xt)
        tolerance = 1e-10 if dtype == "float64" else 2e-4
        np.testing.assert_allclose(ys.numpy(), yt.detach().numpy(), atol=tolerance)
        np.testing.assert_allclose(xs.grad.numpy(), xt.grad.numpy(), atol=tolerance)
        np.testing.assert_allclose(ours.weight.grad.numpy(), theirs.weight.grad.numpy(),
                                   rtol=tolerance, atol=tolerance * 10)  # fmt: skip
        for name in ("running_mean", "running_var"):
            np.testing.assert_allclose(getattr(ours, name).numpy(),
                                       getattr(theirs, name).numpy(), rtol=tolerance)  # fmt: skip
    assert kernels_run >= BATCH_NORM_KERNELS
    _, theirs64, _, yt64, _, xt64 = results["float64"]
    ours32, theirs32, ys32, yt32, xs32, xt32 = results["float32"]
    assert_within_pytorchs("batch_norm output", ys32.numpy(), yt32.detach().numpy(),
                           yt64.detach().numpy())  # fmt: skip
    assert_within_pytorchs("batch_norm input gradient", xs32.grad.numpy(), xt32.grad.numpy(),
                           xt64.grad.numpy())  # fmt: skip
    for name in ("weight", "bias"):
        assert_within_pytorchs(f"batch_norm {name} gradient", getattr(ours32, name).grad.numpy(),
                               getattr(theirs32, name).grad.numpy(),
                               getattr(theirs64, name).grad.numpy())  # fmt: skip


def _batch_norm_both_ways(x, g, affine):
    """(output, gradients of x and of each parameter, running statistics) of F.batch_norm in
    training with acceleration on and then off."""
    channels = x.shape[1]
    rng = np.random.default_rng(3)
    params = [rng.uniform(0.5, 2, channels).astype(np.float32) if a else None for a in affine]
    results = []
    for on in (True, False):
        with bai.accel.enabled(on):
            t = bai.tensor(x, requires_grad=True)
            w, b = (None if p is None else bai.tensor(p, requires_grad=True) for p in params)
            stats = [bai.zeros(channels), bai.ones(channels)]
            y = F.batch_norm(t, *stats, w, b, training=True, momentum=0.3)
            y.backward(bai.tensor(g))
            grads = [v.grad.numpy() for v in (t, w, b) if v is not None]
            results.append([y.numpy(), *grads, *(s.numpy() for s in stats)])
    return results


@pytest.mark.parametrize("shape", [*SHAPES, (32, 64, 4, 4), (3, 7, 33)])
@pytest.mark.parametrize("affine", [(True, True), (True, False), (False, False)], ids=str)
def test_batch_norm_kernels_against_the_records(kernels_run, shape, affine):
    x = _input(shape)
    g = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    ours, expected = _batch_norm_both_ways(x, g, affine)
    for result, reference in zip(ours, expected):
        assert result.dtype == reference.dtype
        np.testing.assert_allclose(result, reference, rtol=2e-4, atol=2e-4)
    assert kernels_run >= BATCH_NORM_KERNELS


def test_batch_norm_kernels_take_strided_inputs_and_gradients(kernels_run):
    x = bai.tensor(_input((4, 3, 5, 6))).permute(0, 1, 3, 2)  # not contiguous
    g = bai.tensor(np.random.default_rng(1).standard_normal((4, 3, 6, 5)).astype(np.float32))
    results = []
    for on in (True, False):
        with bai.accel.enabled(on):
            t = x.detach().requires_grad_()
            y = F.batch_norm(t, None, None, training=True)
            (y * g.permute(0, 1, 3, 2).permute(0, 1, 3, 2)).sum().backward()
            results.append((y.numpy(), t.grad.numpy()))
    for result, reference in zip(*results):
        np.testing.assert_allclose(result, reference, rtol=2e-4, atol=2e-4)
    assert kernels_run >= BATCH_NORM_KERNELS


@pytest.mark.parametrize("shape", [*SHAPES, (1, 64, 9, 9)])
@pytest.mark.parametrize("affine", [(True, True), (True, False), (False, False)], ids=str)
def test_batch_norm_eval_kernel_against_the_record(kernels_run, shape, affine):
    x = _input(shape)
    g = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    channels = shape[1]
    rng = np.random.default_rng(3)
    mean, var = rng.standard_normal(channels), rng.uniform(0.1, 3, channels)
    params = [rng.uniform(0.5, 2, channels) if a else None for a in affine]
    results = []
    for on in (True, False):
        with bai.accel.enabled(on):
            t = bai.tensor(x, requires_grad=True)
            w, b = (
                None if p is None else bai.tensor(p.astype(np.float32), requires_grad=True)
                for p in params
            )
            stats = [bai.tensor(s.astype(np.float32)) for s in (mean, var)]
            y = F.batch_norm(t, *stats, w, b, training=False)
            y.backward(bai.tensor(g))
            results.append([y.numpy()] + [v.grad.numpy() for v in (t, w, b) if v is not None])
    for result, reference in zip(*results):
        assert result.dtype == reference.dtype
        np.testing.assert_allclose(result, reference, rtol=2e-4, atol=2e-4)
    assert "batch_norm_eval.channels" in kernels_run


def test_batch_norm_kernels_give_the_same_bits_on_one_and_two_threads(kernels_run):
    x = _input((8, 6, 7, 9))
    g = np.random.default_rng(1).standard_normal(x.shape).astype(np.float32)
    results = []
    for threads in (2, 1):
        bai.set_num_threads(threads)
        try:
            results.append(_batch_norm_both_ways(x, g, (True, True))[0])
        finally:
            bai.set_num_threads(None)
    for two, one in zip(*results):
        np.testing.assert_array_equal(two, one)
    assert kernels_run >= BATCH_NORM_KERNELS

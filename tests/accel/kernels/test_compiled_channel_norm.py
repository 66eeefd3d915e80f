"""The compiled twins of the channel kernels (``kernels/compiled/channel_norm.py``) against
their NumPy references (``accel/channel_norm.py``), at one and two threads."""

from __future__ import annotations

import numpy as np
import pytest

import buildingai as bai
from buildingai.accel import channel_norm
from buildingai.accel.kernels import compiled

pytest.importorskip("numba")

# the twins compared here (for test_compiled.py's check that every twin has a comparison)
CASES = {
    "standardize_channels",
    "standardize_grad_channels",
    "channel_means",
    "channel_variances",
    "batch_statistics_blocks",
    "batch_norm_grad_sums_blocks",
    "batch_norm_map",
    "channel_affine_grad_map",
}
SHAPES = [(1, 1, 1), (3, 4, 5), (32, 8, 256), (2, 64, 16), (5, 3, 1000)]


@pytest.fixture(autouse=True, params=[1, 2], ids=["1 thread", "2 threads"])
def _threads(request, accel_on):
    previous = bai.get_num_threads()
    bai.set_num_threads(request.param)
    yield
    bai.set_num_threads(previous)


def _arrays(shape, seed=0):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(shape) * 2 + 1).astype(np.float32)
    x[:, 0] += np.float32(100.0)  # a channel whose mean cancels
    return x, rng.standard_normal(shape).astype(np.float32)


def _both(kernel, arrays, outputs, **params):
    """The outputs of ``kernel``'s twin and of the NumPy kernel, on fresh copies of ``arrays``
    (the indices in ``outputs`` name the arrays written)."""
    results = []
    for twin in (True, False):
        copies = [None if a is None else a.copy() for a in arrays]
        if twin:
            assert compiled.run(kernel, copies, params)
        else:
            kernel(np, *copies, **params)
        results.append([copies[i] for i in outputs])
    return results


@pytest.mark.parametrize("shape", SHAPES)
def test_standardize_channels(shape):
    x, _ = _arrays(shape)
    empty = np.zeros(shape, np.float32), np.zeros(shape[1], np.float32)
    twin, numpy = _both(channel_norm._standardize_channels, [x, *empty], (1, 2), eps=1e-5)
    for mine, reference in zip(twin, numpy):
        np.testing.assert_allclose(mine, reference, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("shape", SHAPES)
def test_standardize_grad_channels(shape):
    x, g = _arrays(shape)
    xhat, rstd = np.zeros(shape, np.float32), np.zeros(shape[1], np.float32)
    channel_norm._standardize_channels(np, x, xhat, rstd, eps=1e-5)
    arrays = [g, xhat, rstd, np.zeros(shape, np.float32)]
    (twin,), (numpy,) = _both(channel_norm._standardize_grad_channels, arrays, (3,))
    np.testing.assert_allclose(twin, numpy, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("shape", SHAPES)
def test_channel_means_and_variances(shape):
    x, _ = _arrays(shape)
    out = np.zeros(shape[1], np.float32)
    (twin,), (numpy,) = _both(channel_norm._channel_means, [x, out], (1,))
    np.testing.assert_allclose(twin, numpy, rtol=1e-6, atol=1e-6)
    if x.size // shape[1] > 1:
        variances = channel_norm._channel_variances
        (twin,), (numpy,) = _both(variances, [x, out], (1,), correction=1)
        np.testing.assert_allclose(twin, numpy, rtol=1e-5, atol=1e-6)


def _block_params(shape):
    """The twin parameters of the blocked per-channel sums for x (N, C, S), as the registered
    kernels choose them."""
    return {"size": shape[2], "block": channel_norm._block(shape[1], shape[2])}


@pytest.mark.parametrize("shape", SHAPES)
def test_batch_statistics_blocks(shape):
    x, _ = _arrays(shape)
    stats = np.zeros((2, shape[1]), np.float32)
    columns = x.reshape(shape[0], -1)
    (twin,), (numpy,) = _both(
        channel_norm._batch_statistics, [columns, stats], (1,), **_block_params(shape)
    )
    np.testing.assert_allclose(twin, numpy, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("first", [1e4, -3e3], ids=["far above", "far below"])
def test_batch_statistics_when_the_first_value_is_far_from_the_mean(first):
    """The one-pass twin sums deviations from each channel's first value, in float32: a first
    value far from the rest (an outlier) rounds each deviation to that value's precision.
    What normalisation needs stays: the mean within a millionth of the channel's spread (the
    deviations' rounding averages out), the variance within 1e-5."""
    rng = np.random.default_rng(3)
    x = (rng.standard_normal((6, 3, 50)) + 5).astype(np.float32)
    x[0, 1, 0] = first
    stats = np.zeros((2, 3), np.float32)
    columns = x.reshape(6, -1)
    assert compiled.run(channel_norm._batch_statistics, [columns, stats], _block_params(x.shape))
    exact = x.astype(np.float64)
    spread = exact.std(axis=(0, 2))
    assert np.all(np.abs(stats[0] - exact.mean(axis=(0, 2))) <= 1e-6 * spread)
    np.testing.assert_allclose(stats[1], exact.var(axis=(0, 2)), rtol=1e-5)


@pytest.mark.parametrize("shape", SHAPES)
def test_batch_norm_grad_sums_blocks(shape):
    x, g = _arrays(shape)
    mean = x.mean(axis=(0, 2), dtype=np.float64).astype(np.float32)
    rstd = (1 / np.sqrt(x.var(axis=(0, 2), dtype=np.float64) + 1e-5)).astype(np.float32)
    arrays = [g.reshape(shape[0], -1), x.reshape(shape[0], -1), mean, rstd]
    arrays.append(np.zeros((2, shape[1]), np.float32))
    kernel = channel_norm._batch_norm_grad_sums
    (twin,), (numpy,) = _both(kernel, arrays, (4,), **_block_params(shape))
    np.testing.assert_allclose(twin, numpy, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("affine", [True, False], ids=["affine", "no affine"])
@pytest.mark.parametrize("shape", SHAPES + [(7, 5, 1)])
def test_batch_norm_map(shape, affine):
    x, _ = _arrays(shape)
    rng = np.random.default_rng(1)
    mean, weight, bias = rng.standard_normal((3, shape[1])).astype(np.float32)
    var = rng.uniform(0.5, 2.0, shape[1]).astype(np.float32)
    if not affine:
        weight = bias = None
    arrays = [x, np.zeros(shape, np.float32), mean, var, weight, bias]
    (twin,), (numpy,) = _both(channel_norm._batch_norm_map, arrays, (1,), eps=1e-5)
    np.testing.assert_allclose(twin, numpy, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("shape", SHAPES + [(7, 5, 1)])
def test_channel_affine_grad_map(shape):
    x, g = _arrays(shape)
    grad_scale, mean, scale, shift = np.random.default_rng(2).standard_normal((4, shape[1]))
    coefficients = [c.astype(np.float32) for c in (grad_scale, mean, scale, shift)]
    arrays = [g, x, np.zeros(shape, np.float32), *coefficients]
    (twin,), (numpy,) = _both(channel_norm._channel_affine_grad_map, arrays, (2,))
    np.testing.assert_allclose(twin, numpy, rtol=1e-5, atol=1e-4)

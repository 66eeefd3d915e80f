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
CASES = {"standardize_channels", "standardize_grad_channels", "channel_means", "channel_variances"}
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
        copies = [a.copy() for a in arrays]
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

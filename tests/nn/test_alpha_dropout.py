"""Alpha dropout against PyTorch: the same two affine maps (kept and dropped values), the same
statistics on a standard normal input, channels dropped whole, gradients, eval and p edges."""

from __future__ import annotations

import numpy as np
import pytest

import buildingai as bai
import buildingai.nn as nn
import buildingai.nn.functional as F

torch = pytest.importorskip("torch")


def _dropped_and_kept(output: np.ndarray, x: np.ndarray):
    """(the one value dropped elements take, the (slope, intercept) of the kept ones)."""
    values, counts = np.unique(output, return_counts=True)
    dropped = values[counts.argmax()]
    kept = output != dropped
    slope, intercept = np.polyfit(x[kept], output[kept], 1)
    return dropped, slope, intercept


@pytest.mark.parametrize("p", [0.1, 0.5, 0.8])
def test_the_kept_and_dropped_maps_are_pytorchs(p):
    x = np.random.default_rng(0).standard_normal(50_000)
    bai.manual_seed(0)
    ours = F.alpha_dropout(bai.tensor(x), p, training=True).numpy()
    theirs = torch.nn.functional.alpha_dropout(torch.tensor(x), p, training=True).numpy()
    maps = _dropped_and_kept(ours, x)
    for got, want in zip(maps, _dropped_and_kept(theirs, x)):
        assert got == pytest.approx(want, rel=1e-9)
    assert abs(ours.mean()) < 0.03 and abs(ours.std() - 1.0) < 0.03  # SELU's fixed point kept
    assert abs((ours == maps[0]).mean() - p) < 0.01  # the dropped fraction


def test_feature_alpha_dropout_drops_whole_channels_and_the_gradient_is_the_slope():
    bai.manual_seed(1)
    x = bai.tensor(np.random.default_rng(1).standard_normal((8, 6, 5, 5)), requires_grad=True)
    y = F.feature_alpha_dropout(x, 0.5, training=True)
    y.sum().backward()
    grads = x.grad.numpy().reshape(8, 6, -1)
    assert (grads == grads[:, :, :1]).all()  # one draw per (sample, channel)
    slope = 1.0 / np.sqrt((1.7580993408473766**2 * 0.5 + 1.0) * 0.5)
    assert set(np.round(np.unique(grads), 12)) <= {0.0, round(slope, 12)}


def test_evaluation_and_the_edges_of_p():
    x = bai.randn(4, 3)
    assert F.alpha_dropout(x, 0.5) is x  # training=False by default, as PyTorch
    assert F.alpha_dropout(x, 0.0, training=True) is x
    np.testing.assert_array_equal(F.alpha_dropout(x, 1.0, training=True).numpy(), 0.0)
    layer = nn.AlphaDropout(0.2)
    assert repr(layer) == repr(torch.nn.AlphaDropout(0.2))
    assert layer.eval()(x) is x
    assert repr(nn.FeatureAlphaDropout(0.3)) == repr(torch.nn.FeatureAlphaDropout(0.3))
    y = bai.randn(100)
    assert F.alpha_dropout(y, 0.5, training=True, inplace=True) is y

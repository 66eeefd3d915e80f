"""Layers of classic vision networks against PyTorch in float64: local_response_norm
(AlexNet), channel_shuffle (ShuffleNet), lp_pool1d / lp_pool2d / lp_pool3d, pdist; values, gradients and
their layers, and a frozen graph of them."""

from __future__ import annotations

import numpy as np
import pytest

import buildingai as bai
import buildingai.nn as nn
import buildingai.nn.functional as F

torch = pytest.importorskip("torch")
TF = torch.nn.functional
RNG = np.random.default_rng(0)


def _agree(ours_fn, torch_fn, array, rtol=1e-10):
    x, tx = bai.tensor(array, requires_grad=True), torch.tensor(array, requires_grad=True)
    out, expected = ours_fn(x), torch_fn(tx)
    np.testing.assert_allclose(out.numpy(), expected.detach().numpy(), rtol=rtol, atol=1e-12)
    upstream = RNG.standard_normal(tuple(expected.shape))
    (out * bai.tensor(upstream)).sum().backward()
    (expected * torch.tensor(upstream)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=rtol, atol=1e-12)


@pytest.mark.parametrize("shape", [(2, 7, 5), (2, 6, 4, 5), (1, 5, 2, 3, 4)])
@pytest.mark.parametrize("size", [1, 2, 5])
def test_local_response_norm(shape, size):
    _agree(
        lambda x: F.local_response_norm(x, size, alpha=1e-2, beta=0.75, k=2.0),
        lambda x: TF.local_response_norm(x, size, alpha=1e-2, beta=0.75, k=2.0),
        RNG.standard_normal(shape),
    )


@pytest.mark.parametrize("shape, groups", [((2, 6, 3, 4), 3), ((2, 8, 5), 2), ((1, 4, 2, 2, 2), 4)])
def test_channel_shuffle(shape, groups):
    _agree(lambda x: F.channel_shuffle(x, groups), lambda x: TF.channel_shuffle(x, groups),
           RNG.standard_normal(shape))  # fmt: skip


@pytest.mark.parametrize("norm_type", [1.0, 2.0, 3.0, 1.5])
def test_lp_pooling(norm_type):
    x = RNG.standard_normal((2, 3, 7, 6))
    if norm_type not in (1.0, 2.0):  # odd and fractional powers of negative sums are NaN
        x = np.abs(x) + 0.1
    _agree(lambda t: F.lp_pool2d(t, norm_type, (3, 2), stride=2, ceil_mode=True),
           lambda t: TF.lp_pool2d(t, norm_type, (3, 2), stride=2, ceil_mode=True), x)  # fmt: skip
    _agree(lambda t: F.lp_pool1d(t, norm_type, 3), lambda t: TF.lp_pool1d(t, norm_type, 3),
           x[:, :, 0])  # fmt: skip
    volume = np.repeat(x[:, :, None], 3, axis=2) * np.linspace(0.5, 1.5, 3)[:, None, None]
    _agree(lambda t: F.lp_pool3d(t, norm_type, (2, 3, 2), stride=(1, 2, 2), ceil_mode=True),
           lambda t: TF.lp_pool3d(t, norm_type, (2, 3, 2), stride=(1, 2, 2), ceil_mode=True),
           volume)  # fmt: skip


@pytest.mark.parametrize("p", [2.0, 1.0, 3.0])
def test_pdist(p):
    points = RNG.standard_normal((6, 4))
    points[3] = points[1]  # a zero distance: its gradient is 0 in both
    _agree(lambda x: F.pdist(x, p), lambda x: TF.pdist(x, p), points)


def test_the_layers_match_pytorch_and_freeze():
    from buildingai.graph import freeze

    x = RNG.standard_normal((2, 8, 6, 6)).astype(np.float32)
    ours = nn.Sequential(nn.LocalResponseNorm(3), nn.ChannelShuffle(4), nn.LPPool2d(2, 2))
    theirs = torch.nn.Sequential(
        torch.nn.LocalResponseNorm(3), torch.nn.ChannelShuffle(4), torch.nn.LPPool2d(2, 2)
    )
    expected = theirs(torch.tensor(x)).numpy()
    np.testing.assert_allclose(ours(bai.tensor(x)).numpy(), expected, rtol=1e-5)
    frozen = freeze(ours.eval(), [bai.TensorSpec((None, 8, 6, 6), "float32")])
    np.testing.assert_allclose(frozen(x).numpy(), expected, rtol=1e-5)
    layer = nn.LPPool1d(2, 3)
    np.testing.assert_allclose(layer(bai.tensor(x[:, :, 0])).numpy(),
                               torch.nn.LPPool1d(2, 3)(torch.tensor(x[:, :, 0])).numpy(),
                               rtol=1e-5)  # fmt: skip
    volume = x.reshape(2, 8, 3, 2, 6)
    layer = nn.LPPool3d(2, (1, 2, 3))
    assert repr(layer) == repr(torch.nn.LPPool3d(2, (1, 2, 3)))
    np.testing.assert_allclose(layer(bai.tensor(volume)).numpy(),
                               torch.nn.LPPool3d(2, (1, 2, 3))(torch.tensor(volume)).numpy(),
                               rtol=1e-5)  # fmt: skip


def test_bad_inputs_name_the_function():
    with pytest.raises(Exception, match=r"\[channel_shuffle\].*groups=4.*\(2, 6, 3\)"):
        F.channel_shuffle(bai.zeros(2, 6, 3), 4)
    with pytest.raises(Exception, match=r"\[local_response_norm\].*\(3, 4\)"):
        F.local_response_norm(bai.zeros(3, 4), 2)
    with pytest.raises(Exception, match=r"\[pdist\].*\(3,\)"):
        F.pdist(bai.zeros(3))

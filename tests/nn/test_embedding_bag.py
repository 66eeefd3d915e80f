"""``F.embedding_bag`` and ``nn.EmbeddingBag`` against PyTorch in float64: every mode, 2-D
bags and 1-D bags with offsets (empty bags, include_last_offset), padding_idx,
per_sample_weights, max_norm, the weight's gradient, the layer's repr and from_pretrained."""

from __future__ import annotations

import numpy as np
import pytest

import buildingai as bai
import buildingai.nn as nn
import buildingai.nn.functional as F

torch = pytest.importorskip("torch")
RNG = np.random.default_rng(0)
WEIGHT = RNG.standard_normal((10, 4))
FLAT = np.array([1, 2, 4, 5, 4, 3, 2, 9, 0, 0, 7])
OFFSETS = np.array([0, 4, 4, 7])  # the second bag is empty


def _agree(mode, indices, offsets=None, rtol=1e-12, **kwargs):
    ours_w = bai.tensor(WEIGHT, requires_grad=True)
    theirs_w = torch.tensor(WEIGHT, requires_grad=True)
    psw = kwargs.pop("per_sample_weights", None)
    out = F.embedding_bag(
        bai.tensor(indices), ours_w, None if offsets is None else bai.tensor(offsets),
        mode=mode, per_sample_weights=None if psw is None else bai.tensor(psw), **kwargs,
    )  # fmt: skip
    expected = torch.nn.functional.embedding_bag(
        torch.tensor(indices), theirs_w, None if offsets is None else torch.tensor(offsets),
        mode=mode, per_sample_weights=None if psw is None else torch.tensor(psw), **kwargs,
    )  # fmt: skip
    np.testing.assert_allclose(out.numpy(), expected.detach().numpy(), rtol=rtol, atol=1e-12)
    upstream = RNG.standard_normal(tuple(expected.shape))
    (out * bai.tensor(upstream)).sum().backward()
    (expected * torch.tensor(upstream)).sum().backward()
    np.testing.assert_allclose(ours_w.grad.numpy(), theirs_w.grad.numpy(), rtol=rtol, atol=1e-12)


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_two_dimensional_bags(mode):
    _agree(mode, RNG.integers(0, 10, (5, 3)))
    _agree(mode, RNG.integers(0, 10, (5, 3)), padding_idx=3)


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_offsets_with_an_empty_bag(mode):
    _agree(mode, FLAT, OFFSETS)
    _agree(mode, FLAT, np.append(OFFSETS, len(FLAT)), include_last_offset=True)
    _agree(mode, FLAT, OFFSETS, padding_idx=0)  # the last bag's padding entries drop out


def test_per_sample_weights_in_sum_mode():
    _agree("sum", FLAT, OFFSETS, per_sample_weights=RNG.uniform(0.5, 2.0, len(FLAT)))
    _agree("sum", RNG.integers(0, 10, (4, 3)), per_sample_weights=RNG.uniform(size=(4, 3)))
    with pytest.raises(Exception, match=r"\[embedding_bag\] per_sample_weights needs mode='sum'"):
        F.embedding_bag(bai.tensor(FLAT), bai.tensor(WEIGHT), bai.tensor(OFFSETS),
                        per_sample_weights=bai.ones(len(FLAT)))  # fmt: skip


def test_the_layer_matches_pytorch():
    ours = nn.EmbeddingBag.from_pretrained(bai.tensor(WEIGHT), mode="sum", max_norm=1.5)
    theirs = torch.nn.EmbeddingBag.from_pretrained(torch.tensor(WEIGHT), mode="sum", max_norm=1.5)
    got = ours(bai.tensor(FLAT), bai.tensor(OFFSETS)).numpy()
    np.testing.assert_allclose(got, theirs(torch.tensor(FLAT), torch.tensor(OFFSETS)).numpy())
    np.testing.assert_allclose(ours.weight.numpy(), theirs.weight.numpy())  # renormalised alike
    assert repr(ours) == repr(theirs) and not ours.weight.requires_grad
    layer = nn.EmbeddingBag(10, 3, mode="max", padding_idx=2)
    assert repr(layer) == repr(torch.nn.EmbeddingBag(10, 3, mode="max", padding_idx=2))
    assert list(layer.state_dict()) == ["weight"]
    assert layer(bai.tensor(RNG.integers(0, 10, (2, 4)))).shape == (2, 3)

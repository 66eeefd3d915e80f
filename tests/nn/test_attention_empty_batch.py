"""nn.MultiheadAttention on an empty batch (batch 0) behaves as in PyTorch: outputs (0, L, E) /
(L, 0, E), weights (0, L, S), and zero gradients of the parameters' shapes."""

from __future__ import annotations

import numpy as np
import pytest

import buildingai as bai
from buildingai import nn

torch = pytest.importorskip("torch")


def _copy_weights(ours, theirs) -> None:
    for name, parameter in theirs.named_parameters():
        parameter.data = torch.tensor(dict(ours.named_parameters())[name].numpy())


@pytest.mark.parametrize("batch_first", [True, False])
@pytest.mark.parametrize("need_weights", [True, False])
@pytest.mark.parametrize("with_mask", [False, True], ids=["no-mask", "padding-mask"])
def test_multihead_attention_on_an_empty_batch(batch_first, need_weights, with_mask):
    embed, heads, length, source = 8, 2, 5, 3
    ours = nn.MultiheadAttention(embed, heads, batch_first=batch_first).double()
    theirs = torch.nn.MultiheadAttention(embed, heads, batch_first=batch_first).double()
    _copy_weights(ours, theirs)
    query_shape = (0, length, embed) if batch_first else (length, 0, embed)
    key_shape = (0, source, embed) if batch_first else (source, 0, embed)
    query, key = np.zeros(query_shape), np.zeros(key_shape)
    mask = np.zeros((0, source), dtype=bool) if with_mask else None

    q, k = bai.tensor(query, requires_grad=True), bai.tensor(key, requires_grad=True)
    out, weights = ours(q, k, k, need_weights=need_weights, key_padding_mask=mask)
    qt, kt = torch.tensor(query, requires_grad=True), torch.tensor(key, requires_grad=True)
    mask_t = None if mask is None else torch.tensor(mask)
    # PyTorch's need_weights=False path fails on an empty batch with a padding mask (an
    # ambiguous reshape), so the reference always takes the weights path: same output
    out_t, weights_t = theirs(qt, kt, kt, need_weights=True, key_padding_mask=mask_t)

    assert out.shape == tuple(out_t.shape) == query_shape
    assert (weights is None) == (not need_weights)
    if weights is not None:
        assert weights.shape == tuple(weights_t.shape) == (0, length, source)
    out.sum().backward()
    out_t.sum().backward()
    assert q.grad.shape == query_shape and k.grad.shape == key_shape
    for name, parameter in theirs.named_parameters():
        ours_grad = dict(ours.named_parameters())[name].grad
        assert ours_grad is not None, name
        expected = np.zeros(parameter.shape) if parameter.grad is None else parameter.grad
        np.testing.assert_array_equal(ours_grad.numpy(), np.asarray(expected))

"""``Tensor.stride()`` and ``storage_offset()`` against PyTorch on views, and the in-place
``tril_`` / ``triu_`` (values, version bump, gradient through the written tensor)."""

from __future__ import annotations

import numpy as np
import pytest

import buildingai as bai

torch = pytest.importorskip("torch")

VIEWS = [
    lambda x: x,
    lambda x: x.t(),
    lambda x: x[1:, 2:],
    lambda x: x[:, ::2],
    lambda x: x.reshape(2, 12)[1],
    lambda x: x.unsqueeze(0)[0, 2],
]


@pytest.mark.parametrize("view", VIEWS)
def test_strides_and_offsets_match_pytorch(view):
    ours, theirs = view(bai.zeros(4, 6)), view(torch.zeros(4, 6))
    assert ours.stride() == theirs.stride()
    assert ours.storage_offset() == theirs.storage_offset()
    for dim in range(-ours.ndim, ours.ndim):
        assert ours.stride(dim) == theirs.stride(dim)


@pytest.mark.parametrize("name, diagonal", [("tril_", 0), ("tril_", -1), ("triu_", 1)])
def test_triangles_in_place(name, diagonal):
    values = np.random.default_rng(0).standard_normal((2, 3, 4))
    source = bai.tensor(values, requires_grad=True)
    ours = source * 1.0
    version = ours.version
    assert getattr(ours, name)(diagonal) is ours and ours.version > version
    theirs = torch.tensor(values, requires_grad=True)
    expected = getattr(theirs * 1.0, name)(diagonal)
    np.testing.assert_array_equal(ours.numpy(), expected.detach().numpy())
    ours.sum().backward()
    expected.sum().backward()
    np.testing.assert_array_equal(source.grad.numpy(), theirs.grad.numpy())

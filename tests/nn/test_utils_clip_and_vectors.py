"""``buildingai.nn.utils`` where PyTorch users look: clip_grad_norm_ / clip_grad_value_ (the
functions of optim.clip) and parameters_to_vector / vector_to_parameters, against PyTorch."""

from __future__ import annotations

import numpy as np
import pytest

import buildingai as bai
import buildingai.nn as nn
from buildingai.optim import clip

torch = pytest.importorskip("torch")


def _pair(seed=0):
    ours = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    theirs = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))
    rng = np.random.default_rng(seed)
    for (_, p), (_, q) in zip(ours.named_parameters(), theirs.named_parameters()):
        values = rng.standard_normal(p.shape)
        p.array[...] = values
        with torch.no_grad():
            q.copy_(torch.tensor(values))
    return ours, theirs


def test_clipping_is_the_optim_functions_under_torch_names():
    assert nn.utils.clip_grad_norm_ is clip.clip_grad_norm_
    assert nn.utils.clip_grad_value_ is clip.clip_grad_value_
    from buildingai.nn.utils import clip_grad_norm_, clip_grad_value_  # noqa: F401


def test_training_loop_clipping_as_pytorch_code_writes_it():
    ours, theirs = _pair()
    x = np.random.default_rng(1).standard_normal((5, 3)).astype(np.float32)
    for model, lib, utils in ((ours, bai, nn.utils), (theirs, torch, torch.nn.utils)):
        loss = (model(lib.tensor(x)) ** 2).sum()
        loss.backward()
        utils.clip_grad_norm_(model.parameters(), max_norm=0.5, foreach=True)
        utils.clip_grad_value_(model.parameters(), clip_value=0.1, foreach=False)
    for p, q in zip(ours.parameters(), theirs.parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_parameters_to_vector_matches_torch_and_is_differentiable():
    ours, theirs = _pair()
    vector = nn.utils.parameters_to_vector(ours.parameters())
    expected = torch.nn.utils.parameters_to_vector(theirs.parameters())
    np.testing.assert_allclose(vector.numpy(), expected.detach().numpy(), rtol=1e-6)
    (vector * vector).sum().backward()
    for p in ours.parameters():
        np.testing.assert_allclose(p.grad.numpy(), 2 * p.numpy(), rtol=1e-6)


def test_vector_to_parameters_writes_each_slice_in_place():
    ours, theirs = _pair()
    values = np.arange(sum(p.numel() for p in ours.parameters()), dtype=np.float32)
    first = next(iter(ours.parameters()))
    memory = first.array
    nn.utils.vector_to_parameters(bai.tensor(values), ours.parameters())
    torch.nn.utils.vector_to_parameters(torch.tensor(values), theirs.parameters())
    for p, q in zip(ours.parameters(), theirs.parameters()):
        np.testing.assert_array_equal(p.numpy(), q.detach().numpy())
    assert first.array is memory  # the parameter kept its own array


def test_a_vector_of_the_wrong_size_is_named():
    ours, _ = _pair()
    with pytest.raises(bai.ShapeError, match=r"the vector has 3 elements, the parameters 26"):
        nn.utils.vector_to_parameters(bai.zeros(3), ours.parameters())
    with pytest.raises(bai.ShapeError, match=r"expects a 1-D Tensor"):
        nn.utils.vector_to_parameters(bai.zeros(2, 13), ours.parameters())

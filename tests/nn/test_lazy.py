"""Lazy layers against PyTorch's: the repr and placeholders before the first call, the layer
each becomes after it, its results and gradients with the same weights, sizes taken from a
checkpoint, and what may happen before the first call (an optimizer, a copy, a dtype change)."""

import copy

import numpy as np
import pytest
import torch

import buildingai as bai
from buildingai import nn
from buildingai.errors import ShapeError

RNG = np.random.default_rng(0)

# name -> (constructor arguments, an input's shape)
LAYERS = {
    "LazyLinear": ((5,), (3, 7)),
    "LazyConv1d": ((4, 3), (2, 6, 9)),
    "LazyConv2d": ((8, 3), (2, 4, 6, 6)),
    "LazyConvTranspose1d": ((4, 2), (2, 3, 5)),
    "LazyConvTranspose2d": ((6, 2), (1, 3, 4, 4)),
    "LazyBatchNorm1d": ((), (4, 3)),
    "LazyBatchNorm2d": ((), (2, 3, 4, 4)),
    "LazyInstanceNorm1d": ((), (2, 3, 8)),
    "LazyInstanceNorm2d": ((), (2, 3, 5, 5)),
    "LazyConv3d": ((4, 2), (2, 3, 4, 4, 4)),
    "LazyConvTranspose3d": ((2, 2), (1, 3, 3, 3, 3)),
    "LazyBatchNorm3d": ((), (2, 3, 2, 3, 3)),
    "LazyInstanceNorm3d": ((), (2, 3, 3, 3, 3)),
}
KEYWORDS = {"LazyConv2d": {"padding": 1, "groups": 2}, "LazyConvTranspose2d": {"stride": 2}}


def _pair(name):
    arguments, shape = LAYERS[name]
    keywords = KEYWORDS.get(name, {})
    ours = getattr(nn, name)(*arguments, **keywords)
    theirs = getattr(torch.nn, name)(*arguments, **keywords, dtype=torch.float64)
    return ours.to(bai.float64), theirs, RNG.standard_normal(shape)


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_a_lazy_layer_becomes_pytorchs_layer_and_computes_as_it(name):
    ours, theirs, x = _pair(name)
    assert repr(ours) == repr(theirs)
    assert all(isinstance(p, nn.UninitializedParameter) for p in ours.parameters())
    assert len(list(ours.parameters())) == len(list(theirs.parameters()))
    theirs_out = theirs(torch.tensor(x, requires_grad=True))
    ours(bai.tensor(x))  # sizes the layer
    assert type(ours).__name__ == type(theirs).__name__ == name[4:]
    assert repr(ours) == repr(theirs)
    ours.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})
    if hasattr(ours, "running_mean") and ours.running_mean is not None:
        ours.eval(), theirs.eval()  # the first calls moved the statistics: compare in eval
        theirs_out = theirs(torch.tensor(x, requires_grad=True))
    ours_x, theirs_x = bai.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    ours_out, theirs_out = ours(ours_x), theirs(theirs_x)
    np.testing.assert_allclose(ours_out.numpy(), theirs_out.detach().numpy(), rtol=1e-10)
    upstream = RNG.standard_normal(ours_out.shape)
    (ours_out * bai.tensor(upstream)).sum().backward()
    (theirs_out * torch.tensor(upstream)).sum().backward()
    np.testing.assert_allclose(ours_x.grad.numpy(), theirs_x.grad.numpy(), rtol=1e-9, atol=1e-12)
    for (key, ours_p), (_, theirs_p) in zip(ours.named_parameters(), theirs.named_parameters()):
        assert ours_p.shape == tuple(theirs_p.shape), key
        np.testing.assert_allclose(ours_p.grad.numpy(), theirs_p.grad.numpy(), rtol=1e-9)


@pytest.mark.parametrize(
    "name", ["LazyLinear", "LazyConv2d", "LazyConvTranspose2d", "LazyBatchNorm2d"]
)
def test_a_checkpoint_gives_a_lazy_layer_its_size(name):
    ours, theirs, x = _pair(name)
    theirs(torch.tensor(x))
    state = {k: v.detach().numpy() for k, v in theirs.state_dict().items()}
    ours.load_state_dict(state)
    assert repr(ours) == repr(theirs)
    for key, value in ours.state_dict().items():
        np.testing.assert_array_equal(value.numpy(), state[key])


def test_a_lazy_layer_draws_its_initial_values_as_the_layer_it_becomes():
    bai.manual_seed(3)
    lazy = nn.LazyLinear(4)
    after = nn.Linear(4, 2)  # construction drew nothing: the stream is where it was
    lazy(bai.ones(1, 6))
    bai.manual_seed(3)
    np.testing.assert_array_equal(after.weight.numpy(), nn.Linear(4, 2).weight.numpy())
    bai.manual_seed(3)
    nn.Linear(4, 2)  # as if built second
    np.testing.assert_array_equal(lazy.weight.numpy(), nn.Linear(6, 4).weight.numpy())


def test_before_the_first_call_an_optimizer_a_copy_and_a_dtype_change_work():
    model = nn.Sequential(nn.LazyLinear(4), nn.ReLU(), nn.LazyLinear(1))
    optimizer = bai.optim.Adam(model.parameters(), lr=0.1)
    twin = copy.deepcopy(model)
    model.to(bai.float64)
    x = bai.tensor(RNG.standard_normal((8, 3)))
    first = model(x).square().mean()
    first.backward()
    optimizer.step()
    assert model[0].weight.dtype == bai.float64 and model[0].weight.shape == (4, 3)
    assert model(x).square().mean().item() < first.item()
    assert all(isinstance(p, nn.UninitializedParameter) for p in twin.parameters())
    assert twin(bai.ones(2, 5)).shape == (2, 1)  # the copy sizes itself on its own input


def test_a_lazy_layer_needs_a_tensor_to_take_its_size_from():
    with pytest.raises(ShapeError, match=r"\[LazyLinear\] a lazy layer takes its size"):
        nn.LazyLinear(3)([1.0, 2.0])


def test_a_lazy_instance_norm_reads_the_channels_of_an_unbatched_input():
    """(C, H, W): the channels are the first axis (PyTorch's lazy norms read the second one
    whatever the input, then refuse the input they sized themselves from)."""
    norm = nn.LazyInstanceNorm2d()
    assert norm(bai.ones(3, 5, 5)).shape == (3, 5, 5)
    assert norm.num_features == 3

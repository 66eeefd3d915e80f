"""Post-accumulate gradient hooks: called once per leaf during backward, after its gradient is
complete in ``.grad`` (as PyTorch's ``register_post_accumulate_grad_hook``)."""

import numpy as np
import pytest
import torch

import buildingai as bai
from buildingai import nn


def test_each_leaf_is_reported_once_with_its_complete_gradient_like_pytorch():
    rng = np.random.default_rng(0)
    x_values, w_values = rng.standard_normal((4, 3)), rng.standard_normal((3, 3))
    seen, seen_torch = [], []

    w = bai.tensor(w_values, requires_grad=True)
    w.register_post_accumulate_grad_hook(lambda leaf: seen.append(leaf.grad.numpy()))
    x = bai.tensor(x_values)
    ((x @ w).tanh() @ w).sum().backward()  # w is used twice: one call, after both uses

    tw = torch.tensor(w_values, requires_grad=True)
    tw.register_post_accumulate_grad_hook(lambda leaf: seen_torch.append(leaf.grad.numpy()))
    ((torch.tensor(x_values) @ tw).tanh() @ tw).sum().backward()

    assert len(seen) == len(seen_torch) == 1
    np.testing.assert_allclose(seen[0], seen_torch[0], rtol=1e-12)
    np.testing.assert_allclose(w.grad.numpy(), tw.grad.numpy(), rtol=1e-12)


def test_later_layers_are_reported_while_backward_still_runs():
    model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2))
    order = []
    for name, param in model.named_parameters():
        param.register_post_accumulate_grad_hook(lambda leaf, name=name: order.append(
            (name, model[0].weight.grad is None)))  # fmt: skip
    model(bai.tensor(np.ones((5, 3), np.float32))).sum().backward()
    names = [name for name, _ in order]
    assert sorted(names) == ["0.bias", "0.weight", "2.bias", "2.weight"]
    # the last layer's hooks ran before the first layer's gradient existed
    assert dict(order)["2.weight"] is True and names.index("2.weight") < names.index("0.weight")


def test_accumulating_into_an_existing_grad_and_removing_the_hook():
    w = bai.tensor([1.0, 2.0], requires_grad=True)
    calls = []
    handle = w.register_post_accumulate_grad_hook(lambda leaf: calls.append(leaf.grad.numpy()))
    (w * 3).sum().backward()
    (w * 3).sum().backward()
    np.testing.assert_array_equal(calls[1], [6.0, 6.0])
    handle.remove()
    (w * 3).sum().backward()
    assert len(calls) == 2


def test_grad_does_not_call_them_and_non_leaves_are_refused():
    w = bai.tensor([1.0], requires_grad=True)
    calls = []
    w.register_post_accumulate_grad_hook(calls.append)
    bai.grad((w * w).sum(), w)
    assert calls == [] and w.grad is None
    with pytest.raises(bai.AutogradError, match="needs a leaf tensor"):
        (w * 2).register_post_accumulate_grad_hook(calls.append)

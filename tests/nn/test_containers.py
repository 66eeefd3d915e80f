"""Containers (Sequential, ModuleList, ModuleDict) and the plumbing layers (Identity, Flatten,
Unflatten), compared with PyTorch where behaviour is observable."""

from __future__ import annotations

from collections import OrderedDict

import numpy as np
import pytest

import buildingai as bai
from buildingai.nn import (
    Flatten,
    Identity,
    Linear,
    Module,
    ModuleDict,
    ModuleList,
    Sequential,
    Unflatten,
)

torch = pytest.importorskip("torch")


def _names(module):
    return [name for name, _ in module.named_parameters()]


def test_sequential_positional_form_runs_in_order():
    first, second = Linear(3, 4), Linear(4, 2)
    model = Sequential(first, Identity(), second)
    x = bai.randn(5, 3)
    np.testing.assert_allclose(model(x).numpy(), second(first(x)).numpy(), rtol=1e-6)
    assert _names(model) == ["0.weight", "0.bias", "2.weight", "2.bias"]
    assert len(model) == 3 and list(model) == [first, model[1], second]


def test_sequential_ordered_dict_form_keeps_names():
    model = Sequential(OrderedDict([("fc", Linear(2, 2)), ("act", Identity())]))
    assert _names(model) == ["fc.weight", "fc.bias"]
    assert model.fc is model[0] and model[-1] is model.act


def test_sequential_indexing_slicing_and_editing_match_pytorch():
    ours = Sequential(*(Linear(2, 2) for _ in range(4)))
    theirs = torch.nn.Sequential(*(torch.nn.Linear(2, 2) for _ in range(4)))
    assert isinstance(ours[1:3], Sequential) and ours[1:3][0] is ours[1]
    assert list(ours[1:3]._modules) == list(theirs[1:3]._modules)  # slices keep their names
    assert ours[-1] is ours[3]
    del ours[1]
    del theirs[1]
    assert _names(ours) == [n for n, _ in theirs.named_parameters()]  # renumbered
    ours.append(Identity())
    theirs.append(torch.nn.Identity())
    ours.insert(0, Identity())
    theirs.insert(0, torch.nn.Identity())
    assert _names(ours) == [n for n, _ in theirs.named_parameters()]
    popped = ours.pop(0)
    assert isinstance(popped, Identity) and len(ours) == 4
    replacement = Linear(2, 2)
    ours[0] = replacement
    assert ours[0] is replacement
    combined = ours + Sequential(Identity())
    assert len(combined) == 5 and isinstance(combined, Sequential)
    with pytest.raises(IndexError, match="index 9 is out of range for a Sequential of length 4"):
        ours[9]  # noqa: B018
    del ours[1:3]
    assert len(ours) == 2 and list(ours._modules) == ["0", "1"]
    ours.extend([Identity(), Identity()])
    assert len(ours) == 4


def test_module_list():
    layers = ModuleList([Linear(2, 2), Linear(2, 2)])
    assert _names(layers) == ["0.weight", "0.bias", "1.weight", "1.bias"]
    layers += [Linear(2, 3)]
    layers.append(Identity())
    assert len(layers) == 4 and isinstance(layers[1:], ModuleList)
    assert isinstance(layers + ModuleList([Identity()]), ModuleList)
    del layers[0]
    assert list(layers._modules) == ["0", "1", "2"]
    layers.insert(-1, Identity())
    assert [type(m).__name__ for m in layers] == ["Linear", "Linear", "Identity", "Identity"]
    with pytest.raises(NotImplementedError, match="module ModuleList has no forward"):
        layers(bai.ones(1))
    assert repr(ModuleList()) == "ModuleList()"


def test_module_list_registers_what_a_python_list_would_hide():
    class Hidden(Module):
        def __init__(self):
            super().__init__()
            self.layers = [Linear(2, 2)]

    class Visible(Module):
        def __init__(self):
            super().__init__()
            self.layers = ModuleList([Linear(2, 2)])

    assert _names(Hidden()) == []
    assert _names(Visible()) == ["layers.0.weight", "layers.0.bias"]


def test_module_dict():
    heads = ModuleDict({"a": Linear(2, 1)})
    heads["b"] = Linear(2, 3)
    heads.update([("c", Identity())])
    assert list(heads) == ["a", "b", "c"] and len(heads) == 3 and "b" in heads
    assert list(heads.keys()) == ["a", "b", "c"]
    assert [type(m).__name__ for m in heads.values()] == ["Linear", "Linear", "Identity"]
    assert _names(heads) == ["a.weight", "a.bias", "b.weight", "b.bias"]
    assert heads.pop("a") is not None and "a" not in heads
    del heads["c"]
    assert list(dict(heads.items())) == ["b"]
    heads.clear()
    assert len(heads) == 0
    with pytest.raises(KeyError, match="contain no"):
        heads["a.b"] = Identity()


def test_identity_ignores_arguments():
    x = bai.ones(2)
    assert Identity(3, key="value")(x) is x


@pytest.mark.parametrize(
    "shape, start, end",
    [((2, 3, 4, 5), 1, -1), ((2, 3, 4, 5), 0, 1), ((2, 3, 4, 5), -2, -1), ((2, 3), 1, 1),
     ((2, 0, 3), 1, 2), ((6,), 0, -1)],
)  # fmt: skip
def test_flatten_matches_pytorch(shape, start, end):
    x = np.random.default_rng(0).standard_normal(shape)
    ours = Flatten(start, end)(bai.Tensor(x))
    theirs = torch.nn.Flatten(start, end)(torch.tensor(x))
    assert ours.shape == tuple(theirs.shape)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_flatten_gradient_and_errors():
    x = bai.randn(2, 3, 4, requires_grad=True)
    Flatten()(x).sum().backward()
    assert x.grad.shape == (2, 3, 4)
    with pytest.raises(bai.ShapeError, match=r"\[Flatten\] dimensions start_dim=1, end_dim=5"):
        Flatten(1, 5)(x)
    with pytest.raises(bai.ShapeError, match="start_dim=2 comes after end_dim=1"):
        Flatten(2, 1)(x)
    assert repr(Flatten()) == repr(torch.nn.Flatten())


@pytest.mark.parametrize(
    "shape, dim, sizes",
    [((2, 12), 1, (3, 4)), ((2, 12), -1, (2, -1, 3)), ((12, 5), 0, (2, 6)), ((2, 6, 3), 1, (6,))],
)
def test_unflatten_matches_pytorch(shape, dim, sizes):
    x = np.random.default_rng(0).standard_normal(shape)
    ours = Unflatten(dim, sizes)(bai.Tensor(x))
    theirs = torch.nn.Unflatten(dim, sizes)(torch.tensor(x))
    assert ours.shape == tuple(theirs.shape)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_unflatten_errors():
    with pytest.raises(bai.ShapeError, match=r"cannot split dimension 1 of size 12 into \(5, 2\)"):
        Unflatten(1, (5, 2))(bai.zeros(2, 12))
    with pytest.raises(bai.ShapeError, match=r"cannot split dimension 1 of size 12 into \(5, -1\)"):
        Unflatten(1, (5, -1))(bai.zeros(2, 12))
    with pytest.raises(bai.ShapeError, match="dim 3 is out of range"):
        Unflatten(3, (2, 6))(bai.zeros(2, 12))
    with pytest.raises(ValueError, match="at most one -1"):
        Unflatten(1, (-1, -1))
    assert repr(Unflatten(1, (2, 3))) == repr(torch.nn.Unflatten(1, (2, 3)))

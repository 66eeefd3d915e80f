"""ParameterList and ParameterDict: registration in parameters() and state_dict (names as in
PyTorch), list and dict behaviour, optimizers, cloning, and loading PyTorch's state dicts."""

from __future__ import annotations

from collections import OrderedDict

import numpy as np
import pytest

import buildingai as bai
import buildingai.nn as nn

torch = pytest.importorskip("torch")


def _build(module, library) -> None:
    """Weights in a ParameterList and a ParameterDict, as meta-learning code keeps them."""
    module.vars = library.nn.ParameterList()
    for shape in ((4, 3), (4,), (2, 4), (2,)):
        module.vars.append(library.nn.Parameter(library.ones(*shape) * 0.1))
    module.scales = library.nn.ParameterDict(
        {"out": library.nn.Parameter(library.ones(2)), "in": library.ones(3)}
    )


def _forward(module, x):
    w1, b1, w2, b2 = module.vars
    h = (x * module.scales["in"]) @ w1.T + b1
    return (h.relu() @ w2.T + b2) * module.scales["out"]


class Mixture(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        _build(self, bai)

    forward = _forward


class TorchMixture(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        _build(self, torch)

    forward = _forward


def test_names_in_state_dict_and_parameters_are_pytorch_s():
    ours, theirs = Mixture(), TorchMixture()
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    assert list(ours.state_dict()) == [
        "vars.0", "vars.1", "vars.2", "vars.3", "scales.in", "scales.out"
    ]  # fmt: skip


def test_a_plain_tensor_becomes_a_parameter_sharing_its_memory():
    values = bai.zeros((3,))
    plist = nn.ParameterList([values])
    assert isinstance(plist[0], nn.Parameter) and plist[0].requires_grad
    plist[0].data[0] = 5.0
    assert values.numpy()[0] == 5.0
    pdict = nn.ParameterDict({"a": bai.ones((2,))})
    assert isinstance(pdict["a"], nn.Parameter)


def test_training_and_pytorch_state_dict_round_trip():
    ours, theirs = Mixture(), TorchMixture()
    ours.load_state_dict({k: v.numpy() for k, v in theirs.state_dict().items()})
    x = np.random.default_rng(0).standard_normal((5, 3)).astype(np.float32)
    opt_ours = bai.optim.SGD(ours.parameters(), lr=0.1)
    opt_theirs = torch.optim.SGD(theirs.parameters(), lr=0.1)
    for _ in range(3):
        for model, opt, tensor in (
            (ours, opt_ours, bai.tensor),
            (theirs, opt_theirs, torch.tensor),
        ):
            opt.zero_grad()
            (model(tensor(x)) ** 2).mean().backward()
            opt.step()
    for name, value in theirs.state_dict().items():
        np.testing.assert_allclose(ours.state_dict()[name].numpy(), value.numpy(), atol=1e-6)


def test_parameter_list_behaves_like_a_list():
    plist = nn.ParameterList([bai.zeros((1,)), bai.ones((2,))])
    plist += [bai.ones((3,))]
    plist.extend([bai.ones((4,))]).append(bai.ones((5,)))
    assert len(plist) == 5 and [p.shape for p in plist][-1] == (5,)
    assert plist[-1] is plist[4]
    assert [p.shape for p in plist[1:4:2]] == [(2,), (4,)]
    assert isinstance(plist[1:], nn.ParameterList)
    replacement = nn.Parameter(bai.zeros((7,)))
    plist[0] = replacement
    assert plist[0] is replacement and next(iter(plist.parameters())) is replacement
    with pytest.raises(IndexError, match="out of range"):
        plist[5]
    with pytest.raises(TypeError, match="iterable"):
        plist.extend(bai.ones((2,)))
    with pytest.raises(RuntimeError, match="should not be called"):
        plist(1)
    plist.append("not a tensor")  # kept as a plain attribute, as PyTorch does
    assert plist[5] == "not a tensor" and len(list(plist.parameters())) == 5


def test_parameter_dict_behaves_like_an_ordered_dict():
    pdict = nn.ParameterDict({"b": bai.ones((1,)), "a": bai.ones((2,))})
    assert list(pdict) == ["a", "b"]  # a plain dict is added in sorted order, as in PyTorch
    pdict.update(OrderedDict([("z", bai.ones((3,))), ("c", bai.ones((4,)))]))
    assert list(pdict.keys()) == ["a", "b", "z", "c"]
    assert "z" in pdict and len(pdict) == 4
    assert pdict.get("missing") is None
    assert pdict.setdefault("d", bai.ones((5,))).shape == (5,)
    key, value = pdict.popitem()
    assert key == "d" and value.shape == (5,) and "d" not in pdict
    assert pdict.pop("z").shape == (3,)
    del pdict["a"]
    assert list(pdict) == ["b", "c"] and [n for n, _ in pdict.named_parameters()] == ["b", "c"]
    merged = pdict | nn.ParameterDict(OrderedDict([("e", bai.ones((6,)))]))
    assert list(merged) == ["b", "c", "e"] and merged["b"] is pdict["b"]
    assert list(reversed(pdict)) == ["c", "b"]
    with pytest.raises(TypeError, match="strings"):
        pdict[3] = bai.ones((1,))
    with pytest.raises(KeyError):
        pdict["nope"]
    pdict.clear()
    assert len(pdict) == 0 and list(pdict.parameters()) == []


def test_reprs_list_the_entries():
    plist = nn.ParameterList([bai.zeros((3, 4))])
    assert "(0): Parameter containing: [float32 of size 3x4]" in repr(plist)
    pdict = nn.ParameterDict({"w": bai.zeros((2,))})
    assert "(w): Parameter containing: [float32 of size 2]" in repr(pdict)


def test_clone_and_to_carry_the_containers():
    model = Mixture()
    copy = model.clone()
    assert list(copy.state_dict()) == list(model.state_dict())
    assert len(copy.vars) == 4 and list(copy.scales) == ["in", "out"]
    doubled = model.to(dtype="float64")
    assert all(p.dtype == np.float64 for p in doubled.parameters())

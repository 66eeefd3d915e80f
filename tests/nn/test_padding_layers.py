"""Padding layers (Zero/Constant/Reflection/Replication/Circular, 1d to 3d) and ``F.pad``
against PyTorch in float64: values, gradients, stored ``padding``, reprs and rank checks; and
the constructor signatures of the layers added with them."""

from __future__ import annotations

import inspect

import pytest

import buildingai as bai
import buildingai.nn as nn
import buildingai.nn.functional as F
from tests.helpers import check_op

torch = pytest.importorskip("torch")
tnn = torch.nn

# (layer name, constructor arguments, input shape)
CASES = [
    ("ZeroPad1d", (2,), (2, 3, 5)),
    ("ZeroPad2d", ((1, 2, 0, 3),), (2, 3, 4, 5)),
    ("ZeroPad2d", (1,), (3, 4, 5)),
    ("ZeroPad3d", ((1, 0, 2, 1, 0, 1),), (1, 2, 3, 4, 5)),
    ("ConstantPad1d", ((3, 1), 2.5), (2, 4)),
    ("ConstantPad2d", (2, -1.0), (2, 3, 4, 5)),
    ("ConstantPad3d", (1, 0.5), (2, 3, 4, 5)),
    ("ReflectionPad1d", ((2, 3),), (2, 3, 5)),
    ("ReflectionPad1d", (1,), (3, 4)),
    ("ReflectionPad2d", ((1, 2, 3, 0),), (2, 3, 4, 5)),
    ("ReflectionPad2d", (2,), (3, 4, 5)),
    ("ReflectionPad3d", (1,), (1, 2, 3, 4, 5)),
    ("ReplicationPad1d", ((0, 4),), (2, 3, 5)),
    ("ReplicationPad2d", ((3, 1, 2, 2),), (2, 3, 4, 5)),
    ("ReplicationPad2d", (1,), (3, 4, 5)),
    ("ReplicationPad3d", ((1, 2, 0, 1, 2, 0),), (2, 2, 3, 4, 5)),
    ("CircularPad1d", ((2, 1),), (2, 3, 5)),
    ("CircularPad2d", (1,), (2, 3, 4, 5)),
    ("CircularPad3d", (1,), (1, 2, 3, 4, 5)),
]


@pytest.mark.parametrize("name, args, shape", CASES, ids=lambda case: str(case))
def test_padding_layers_match_pytorch(name, args, shape):
    ours, theirs = getattr(nn, name)(*args), getattr(tnn, name)(*args)
    assert ours.padding == theirs.padding
    assert repr(ours) == repr(theirs)
    check_op(ours, shape, torch_fn=theirs, gradcheck=False)


def test_padding_layers_have_no_state():
    assert nn.ReflectionPad2d(1).state_dict() == {}
    assert list(nn.ConstantPad2d(1, 3.0).parameters()) == []


def test_padding_layer_keeps_pytorch_spelling_of_padding():
    # an iterable is kept as given (PyTorch's _ntuple), a number repeated per side
    assert nn.ReflectionPad2d(2).padding == (2, 2, 2, 2)
    assert nn.ReplicationPad1d([1, 3]).padding == (1, 3)
    assert nn.ZeroPad2d((1, 2, 3, 4)).padding == (1, 2, 3, 4)
    assert nn.ConstantPad1d(2, 3.5).value == 3.5


@pytest.mark.parametrize("name", ["ReflectionPad1d", "ReplicationPad2d", "CircularPad1d"])
def test_copying_padding_refuses_an_input_of_the_wrong_rank(name):
    layer = getattr(nn, name)(1)
    with pytest.raises(ValueError, match=name) as caught:
        layer(bai.zeros((1, 1, 1, 3, 4)))
    assert "F.pad" in str(caught.value)


@pytest.mark.parametrize(
    "pad, mode, value",
    [((1, 2), "constant", None), ((1, 2, 2, 1), "constant", 1.5), ((2, 1, 1, 2), "reflect", None),
     ((1, 3, 0, 2), "replicate", None), ((1, 1, 2, 0), "circular", None)],
    ids=str,
)  # fmt: skip
def test_functional_pad_matches_pytorch(pad, mode, value):
    check_op(
        lambda x: F.pad(x, pad, mode=mode, value=value),
        (2, 3, 4, 5),
        torch_fn=lambda x: torch.nn.functional.pad(x, pad, mode=mode, value=value),
        gradcheck=False,
    )


@pytest.mark.parametrize(
    "name",
    [case[0] for case in CASES] + ["PixelShuffle", "PixelUnshuffle", "ParameterList",
                                   "ParameterDict", "ReLU", "LeakyReLU", "ELU", "Hardtanh",
                                   "Threshold", "SiLU", "Mish", "Hardswish"],
)  # fmt: skip
def test_constructor_signatures_are_pytorch_s(name):
    ours = inspect.signature(getattr(nn, name))
    theirs = inspect.signature(getattr(tnn, name))
    assert [(p.name, p.default) for p in ours.parameters.values()] == [
        (p.name, p.default) for p in theirs.parameters.values()
    ]

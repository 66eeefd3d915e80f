"""``inplace=True`` on the functional activations and their modules, against PyTorch in
float64: the input holds the result and is returned, other references see it, gradients flow
to what the input was computed from, and the errors come where PyTorch's come."""

from __future__ import annotations

import numpy as np
import pytest

import buildingai as bai
import buildingai.nn as nn
import buildingai.nn.functional as F

torch = pytest.importorskip("torch")
TF = torch.nn.functional

# (name, extra positional arguments) of every functional activation with PyTorch's inplace=
FUNCTIONS = [
    ("relu", ()),
    ("relu6", ()),
    ("leaky_relu", (0.2,)),
    ("elu", (0.7,)),
    ("selu", ()),
    ("celu", (2.0,)),  # 1 / alpha exact: PyTorch's in-place celu backward takes it in float32
    ("hardtanh", (-0.5, 0.8)),
    ("hardsigmoid", ()),
    ("hardswish", ()),
    ("silu", ()),
    ("mish", ()),
    ("threshold", (0.1, -2.0)),
]
MODULES = [
    ("ReLU", ()),
    ("ReLU6", ()),
    ("LeakyReLU", (0.2,)),
    ("ELU", (0.7,)),
    ("SELU", ()),
    ("CELU", (2.0,)),
    ("Hardtanh", (-0.5, 0.8)),
    ("Hardsigmoid", ()),
    ("Hardswish", ()),
    ("SiLU", ()),
    ("Mish", ()),
    ("Threshold", (0.1, -2.0)),
]


def _inputs(seed: int = 0):
    x = np.random.default_rng(seed).uniform(-4, 4, size=(3, 5))
    x[np.abs(x) < 1e-2] = 0.5  # away from the kinks
    return x


def _run(library, activation, x: np.ndarray, upstream: np.ndarray):
    """``activation`` applied in place to a computed tensor that a residual branch also holds;
    returns the result, the branch, and the gradient of the weight it was computed from."""
    weight = library.tensor(np.linspace(0.5, 1.5, x.shape[1]), requires_grad=True)
    hidden = library.tensor(x) * weight
    branch = hidden  # the residual branch keeps the same tensor
    out = activation(hidden)
    assert out is hidden
    (out * library.tensor(upstream) + branch).sum().backward()
    return out.detach().numpy(), branch.detach().numpy(), weight.grad.numpy()


@pytest.mark.parametrize("name, args", FUNCTIONS, ids=[name for name, _ in FUNCTIONS])
def test_functional_inplace_matches_pytorch(name, args):
    x, upstream = _inputs(), np.random.default_rng(1).standard_normal((3, 5))
    ours = _run(bai, lambda t: getattr(F, name)(t, *args, inplace=True), x, upstream)
    theirs = _run(torch, lambda t: getattr(TF, name)(t, *args, inplace=True), x, upstream)
    for what, mine, expected in zip(("values", "residual branch", "gradient"), ours, theirs):
        np.testing.assert_allclose(mine, expected, atol=1e-12, err_msg=f"{name}: {what}")


@pytest.mark.parametrize("name, args", MODULES, ids=[name for name, _ in MODULES])
def test_modules_with_inplace_match_pytorch(name, args):
    x, upstream = _inputs(2), np.random.default_rng(3).standard_normal((3, 5))
    ours_module = getattr(nn, name)(*args, inplace=True)
    theirs_module = getattr(torch.nn, name)(*args, inplace=True)
    assert repr(ours_module) == repr(theirs_module)
    ours = _run(bai, ours_module, x, upstream)
    theirs = _run(torch, theirs_module, x, upstream)
    for what, mine, expected in zip(("values", "residual branch", "gradient"), ours, theirs):
        np.testing.assert_allclose(mine, expected, atol=1e-12, err_msg=f"{name}: {what}")


def test_out_of_place_leaves_the_input_alone():
    x = bai.tensor([-1.0, 2.0])
    assert F.relu(x) is not x and x.numpy().tolist() == [-1.0, 2.0]
    assert nn.ReLU()(x) is not x


def test_a_leaf_that_requires_grad_is_refused_while_recording():
    leaf = bai.tensor([-1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match=r"relu\(inplace=True\).*leaf"):
        F.relu(leaf, inplace=True)
    with pytest.raises(RuntimeError):  # PyTorch refuses it too
        TF.relu(torch.tensor([-1.0, 2.0], requires_grad=True), inplace=True)
    with bai.no_grad():  # allowed without recording, as in PyTorch
        F.relu(leaf, inplace=True)
    assert leaf.numpy().tolist() == [0.0, 2.0]


def test_writing_into_a_value_another_backward_needs_is_reported():
    # mul saves its inputs for backward; changing one in place would give a wrong gradient
    weight = bai.tensor([1.0, -2.0], requires_grad=True)
    hidden = weight * 3.0
    product = hidden * hidden
    F.relu(hidden, inplace=True)
    with pytest.raises(RuntimeError, match=r"modified in place by 'relu\(inplace=True\)'"):
        product.sum().backward()


@pytest.mark.parametrize(
    "before",
    ["InstanceNorm2d", "BatchNorm2d", "MaxPool2d", "Conv2d"],
)
def test_inplace_relu_after_common_layers_trains_as_in_pytorch(before):
    """A layer whose backward reads its own output (max pooling, normalisation without an
    affine map) followed by ReLU(inplace=True) trains, as in PyTorch."""
    arguments = {
        "InstanceNorm2d": (2,),
        "BatchNorm2d": (2,),
        "MaxPool2d": (2,),
        "Conv2d": (2, 2, 3),
    }[before]

    def build(library):
        library.manual_seed(0)
        conv = library.nn.Conv2d(3, 2, 1).double()
        return library.nn.Sequential(
            conv, getattr(library.nn, before)(*arguments).double(), library.nn.ReLU(inplace=True)
        )

    ours, theirs = build(bai), build(torch)
    ours.load_state_dict({k: v.numpy() for k, v in theirs.state_dict().items()})
    x = np.random.default_rng(4).standard_normal((2, 3, 6, 6))
    out_ours, out_theirs = ours(bai.tensor(x)), theirs(torch.tensor(x))
    np.testing.assert_allclose(out_ours.numpy(), out_theirs.detach().numpy(), atol=1e-12)
    (out_ours**2).sum().backward()
    (out_theirs**2).sum().backward()
    for (name, param), theirs_param in zip(ours.named_parameters(), theirs.parameters()):
        np.testing.assert_allclose(
            param.grad.numpy(), theirs_param.grad.numpy(), atol=1e-10, err_msg=name
        )

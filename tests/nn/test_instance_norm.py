"""InstanceNorm1d/2d/3d and ``F.instance_norm`` against PyTorch in float64: values, input and
parameter gradients, running statistics over several steps, eval mode, unbatched inputs,
state-dict keys and constructor signatures."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import buildingai as bai
import buildingai.nn as nn
import buildingai.nn.functional as F
from tests.helpers import check_op

torch = pytest.importorskip("torch")
TF = torch.nn.functional


@pytest.mark.parametrize("shape", [(2, 3, 5), (2, 3, 4, 5), (1, 2, 2, 3, 2)], ids=str)
def test_functional_instance_norm_matches_pytorch(shape):
    channels = (shape[1],)
    check_op(
        lambda x, w, b: F.instance_norm(x, weight=w, bias=b, eps=1e-3),
        shape, channels, channels,
        torch_fn=lambda x, w, b: TF.instance_norm(x, weight=w, bias=b, eps=1e-3),
        gradgrad=True,
        gradcheck=False,
    )  # fmt: skip


def test_functional_instance_norm_with_running_stats_matches_pytorch():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((4, 3, 6))
    ours_mean, ours_var = bai.tensor(rng.random(3)), bai.tensor(rng.random(3) + 0.5)
    theirs_mean, theirs_var = torch.tensor(ours_mean.numpy()), torch.tensor(ours_var.numpy())
    for use_input_stats in (True, False):
        out = F.instance_norm(bai.tensor(x), ours_mean, ours_var, None, None, use_input_stats, 0.3)
        expected = TF.instance_norm(
            torch.tensor(x), theirs_mean, theirs_var, None, None, use_input_stats, 0.3
        )
        np.testing.assert_allclose(out.numpy(), expected.numpy(), atol=1e-12)
        np.testing.assert_allclose(ours_mean.numpy(), theirs_mean.numpy(), atol=1e-14)
        np.testing.assert_allclose(ours_var.numpy(), theirs_var.numpy(), atol=1e-14)


def _pair(cls_name: str, **kwargs):
    ours = getattr(nn, cls_name)(4, dtype="float64", **kwargs)
    theirs = getattr(torch.nn, cls_name)(4, dtype=torch.float64, **kwargs)
    if ours.weight is not None:  # the same non-trivial affine map in both
        weight, bias = np.linspace(0.5, 2.0, 4), np.linspace(-1.0, 1.0, 4)
        ours.weight.data[...], ours.bias.data[...] = weight, bias
        with torch.no_grad():
            theirs.weight.copy_(torch.tensor(weight))
            theirs.bias.copy_(torch.tensor(bias))
    return ours, theirs


@pytest.mark.parametrize(
    "cls_name, spatial", [("InstanceNorm1d", (7,)), ("InstanceNorm2d", (3, 5))]
)
@pytest.mark.parametrize("affine", [False, True])
@pytest.mark.parametrize("track", [False, True])
@pytest.mark.parametrize("momentum", [0.1, None])
def test_instance_norm_layers_match_pytorch_in_train_and_eval(
    cls_name, spatial, affine, track, momentum
):
    ours, theirs = _pair(cls_name, affine=affine, track_running_stats=track, momentum=momentum)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert repr(ours) == repr(theirs)
    rng = np.random.default_rng(0)
    for step in range(4):
        ours.train(step < 3)
        theirs.train(step < 3)
        x = rng.standard_normal((3, 4) + spatial) * 2 + 1
        upstream = rng.standard_normal(x.shape)
        x_ours, x_theirs = bai.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
        out_ours, out_theirs = ours(x_ours), theirs(x_theirs)
        np.testing.assert_allclose(out_ours.numpy(), out_theirs.detach().numpy(), atol=1e-12)
        (out_ours * bai.tensor(upstream)).sum().backward()
        (out_theirs * torch.tensor(upstream)).sum().backward()
        np.testing.assert_allclose(x_ours.grad.numpy(), x_theirs.grad.numpy(), atol=1e-11)
        if affine:
            np.testing.assert_allclose(ours.weight.grad.numpy(), theirs.weight.grad.numpy())
            np.testing.assert_allclose(ours.bias.grad.numpy(), theirs.bias.grad.numpy())
        for name, value in theirs.state_dict().items():
            np.testing.assert_allclose(
                ours.state_dict()[name].numpy(), value.numpy(), atol=1e-13, err_msg=name
            )


def test_instance_norm_takes_an_unbatched_input_as_pytorch_does():
    ours, theirs = _pair("InstanceNorm2d", affine=True, track_running_stats=True)
    x = np.random.default_rng(2).standard_normal((4, 3, 5))  # (C, H, W)
    out = ours(bai.tensor(x))
    np.testing.assert_allclose(out.numpy(), theirs(torch.tensor(x)).detach().numpy(), atol=1e-12)
    np.testing.assert_allclose(ours.running_var.numpy(), theirs.running_var.numpy(), atol=1e-14)


def test_instance_norm_loads_a_pytorch_state_dict():
    theirs = torch.nn.InstanceNorm1d(3, affine=True, track_running_stats=True)
    theirs(torch.randn(2, 3, 5) * 3)
    ours = nn.InstanceNorm1d(3, affine=True, track_running_stats=True)
    ours.load_state_dict({k: v.numpy() for k, v in theirs.state_dict().items()})
    x = np.random.default_rng(3).standard_normal((2, 3, 5)).astype(np.float32)
    ours.eval(), theirs.eval()
    np.testing.assert_allclose(
        ours(bai.tensor(x)).numpy(), theirs(torch.tensor(x)).detach().numpy(), atol=1e-5
    )


@pytest.mark.parametrize("cls_name", ["InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d"])
def test_instance_norm_constructor_signature_is_pytorch(cls_name):
    ours = inspect.signature(getattr(nn, cls_name))
    theirs = inspect.signature(getattr(torch.nn, cls_name))
    assert [(p.name, p.default, p.kind) for p in ours.parameters.values()] == [
        (p.name, p.default, p.kind) for p in theirs.parameters.values()
    ]


def test_instance_norm_errors():
    with pytest.raises(ValueError, match=r"more than 1 spatial element"):
        nn.InstanceNorm2d(3)(bai.zeros((2, 3, 1, 1)))
    with pytest.raises(ValueError, match=r"InstanceNorm1d.*expected 2D or 3D input"):
        nn.InstanceNorm1d(3)(bai.zeros((2, 3, 4, 5)))
    with pytest.raises(ValueError, match=r"expected 3 channels in dimension 1"):
        nn.InstanceNorm1d(3, affine=True)(bai.zeros((2, 4, 5)))
    with pytest.warns(UserWarning, match="does not match num_features"):
        nn.InstanceNorm1d(3)(bai.randn(2, 4, 5))

"""Op-table cases of volumes records."""

from __future__ import annotations

import buildingai.nn.functional as F

from .base import NO_ONNX_MAPPING, TF, Draw, Sample, backward_of, case, torch

# ----- convolutions -----


def _conv3d_geometry(d: Draw) -> dict:
    groups = d.choice((1, 2))
    return dict(
        groups=groups,
        channels=groups * d.size(1, 2),
        out_channels=groups * d.size(1, 2),
        kernel=(d.size(1, 2), d.size(1, 3), d.size(1, 2)),
        stride=(d.size(1, 2), 1, d.size(1, 2)),
        padding=(d.size(0, 1), d.size(0, 1), d.size(0, 1)),
        dilation=(d.size(1, 2), 1, 1),
        size=(d.size(3, 4), d.size(3, 5), d.size(3, 4)),
    )


def _conv3d_inputs(d: Draw, grad: bool = False) -> tuple:
    g = _conv3d_geometry(d)
    x = d.floats("n", g["channels"], *g["size"], grad=grad)
    weight = d.floats(g["out_channels"], g["channels"] // g["groups"], *g["kernel"], grad=grad)
    attrs = {k: g[k] for k in ("stride", "padding", "dilation", "groups")}
    return x, weight, attrs


def _conv3d(d: Draw) -> Sample:
    x, weight, attrs = _conv3d_inputs(d)
    bias = d.choice((None, d.floats(weight.shape[0])))
    return d.capture("conv3d", lambda: F.conv3d(x, weight, bias, **attrs))


case(
    "conv3d",
    _conv3d,
    torch=lambda x, w, b=None, **attrs: TF.conv3d(x, w, b, **attrs),
    gradgrad=True,
    covered_by=("tests/nn/test_conv3d.py",),
)


def _conv3d_input_grad(d: Draw) -> Sample:
    x, weight, attrs = _conv3d_inputs(d, grad=True)
    return d.capture(
        "conv3d_input_grad",
        lambda: backward_of(lambda a, w: F.conv3d(a, w, **attrs), x, weight),
        symbols={(0, 0): "n"},
    )


def _torch_conv3d_input_grad(grad, weight, *, input_size, groups, **attrs):
    size = (grad.shape[0], weight.shape[1] * groups) + tuple(input_size)
    return torch.nn.grad.conv3d_input(size, weight, grad, groups=groups, **attrs)


case("conv3d_input_grad", _conv3d_input_grad, torch=_torch_conv3d_input_grad)


def _conv3d_weight_grad(d: Draw) -> Sample:
    x, weight, attrs = _conv3d_inputs(d, grad=True)
    out_shape = F.conv3d(x, weight, **attrs).shape
    grad = d.tensor(d.rng.standard_normal(out_shape).astype(x.dtype), {0: "n"})
    return d.call("conv3d_weight_grad", x, grad, weight_size=tuple(weight.shape[2:]), **attrs)


def _torch_conv3d_weight_grad(x, grad, *, weight_size, groups, **attrs):
    size = (grad.shape[1], x.shape[1] // groups) + tuple(weight_size)
    return torch.nn.grad.conv3d_weight(x, size, grad, groups=groups, **attrs)


case(
    "conv3d_weight_grad",
    _conv3d_weight_grad,
    torch=_torch_conv3d_weight_grad,
    onnx=NO_ONNX_MAPPING,
)

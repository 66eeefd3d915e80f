"""Cases of the activation records of ``ops/activation_extra.py``: elu, selu, celu, hardtanh,
hardsigmoid, hardswish, threshold, prelu, mish, softsign, logsigmoid, and the gradient records
exponential_linear_grad, hardsigmoid_grad, hardswish_grad, mish_grad, softsign_grad,
logsigmoid_grad, prelu_input_grad, prelu_weight_grad."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

import buildingai as bai

from .base import NO_ONNX_MAPPING, TF, Draw, Sample, backward_of, case, torch, trailing_sizes
from .elementwise import unary

unary(
    "elu",
    lambda x, d: bai.elu(x, alpha=d.variant((1.0, 0.5, 2.0))),
    torch=lambda x, *, alpha: TF.elu(x, alpha),
    gradgrad=True,
)
unary("selu", lambda x: bai.selu(x), torch=TF.selu, gradgrad=True)
unary(
    "celu",
    lambda x, d: bai.celu(x, alpha=d.variant((1.0, 0.5, 2.0))),
    torch=lambda x, *, alpha: TF.celu(x, alpha),
    gradgrad=True,
)
unary(
    "hardtanh",
    lambda x, d: bai.hardtanh(x, *d.variant(((-1.0, 1.0), (0.0, 6.0), (-0.5, 1.5)))),
    low=-4.0,
    high=7.0,
    torch=lambda x, *, min_val, max_val: TF.hardtanh(x, min_val, max_val),
    gradgrad=True,
)
unary("hardsigmoid", lambda x: bai.hardsigmoid(x), low=-4.0, high=4.0, torch=TF.hardsigmoid)
unary(
    "hardswish",
    lambda x: bai.hardswish(x),
    low=-4.0,
    high=4.0,
    torch=TF.hardswish,
    gradgrad=True,
)
unary(
    "threshold",
    lambda x, d: bai.threshold(x, *d.variant(((0.5, -1.0), (-1.0, 2.0), (0.0, 0.0)))),
    torch=lambda x, *, threshold, value: TF.threshold(x, threshold, value),
)
unary(
    "mish", lambda x: bai.mish(x), low=-5.0, high=5.0, torch=TF.mish, gradgrad=True, onnx_opset=18
)
unary("softsign", lambda x: bai.softsign(x), torch=TF.softsign, gradgrad=True)
unary(
    "logsigmoid",
    lambda x: bai.logsigmoid(x),
    low=-30.0,
    high=30.0,
    torch=TF.logsigmoid,
    gradgrad=True,
)


def _prelu(d: Draw) -> Sample:
    channels = d.size(1, 4)
    x = d.floats("n", channels, *trailing_sizes(d, 0, 2))
    weight = d.floats(d.variant((channels, 1)), low=0.05, high=0.5)
    return d.capture("prelu", lambda: bai.prelu(x, weight))


def _torch_prelu(x, weight):
    return TF.prelu(x, weight.reshape(-1))


case("prelu", _prelu, torch=_torch_prelu, gradgrad=True)


def _prelu_grad(name: str) -> Callable:
    """Samples of prelu's gradient record ``name``, from a backward with x and the slopes both
    requiring gradients (one slope per channel, or one in all)."""

    def make(d: Draw) -> Sample:
        channels = d.size(1, 4)
        x = d.floats("n", channels, *trailing_sizes(d, 0, 2), grad=True)
        weight = d.floats(d.variant((channels, 1)), low=0.05, high=0.5, grad=True)
        symbols = {(0, 0): "n", (1, 0): "n"}
        return d.capture(name, lambda: backward_of(bai.prelu, x, weight), symbols=symbols)

    return make


def _torch_prelu_input_grad(grad, x, weight):
    return torch.where(x > 0, grad, grad * weight)


def _torch_prelu_weight_grad(grad, x, weight):
    terms = torch.where(x > 0, torch.zeros_like(grad), grad * x)
    lead = terms.ndim - weight.ndim
    summed = [*range(lead)] + [lead + i for i, size in enumerate(weight.shape) if size == 1]
    return terms.sum(dim=summed, keepdim=True).reshape(weight.shape)


for _name, _torch in (
    ("prelu_input_grad", _torch_prelu_input_grad),
    ("prelu_weight_grad", _torch_prelu_weight_grad),
):
    case(_name, _prelu_grad(_name), torch=_torch, gradcheck=True, onnx=NO_ONNX_MAPPING)


# ----- gradient records, captured from the backward pass of their forward op -------------------


def _activation_grad(name: str, forward: Callable, low=-2.0, high=2.0) -> Callable:
    def make(d: Draw) -> Sample:
        x = d.floats("n", *trailing_sizes(d), low=low, high=high, grad=True)
        symbols = {(0, 0): "n", (1, 0): "n"}
        return d.capture(name, lambda: backward_of(forward, x), symbols=symbols)

    return make


def _torch_exponential_linear_grad(grad, x, *, alpha, scale, input_scale):
    negative = grad * (alpha * scale * input_scale) * torch.exp(x * input_scale)
    return torch.where(x <= 0, negative, grad * scale)


def _torch_hardswish_grad(grad, x):
    inside = torch.where(x < 3, grad * (x / 3 + 0.5), grad)
    return torch.where(x <= -3, torch.zeros_like(grad), inside)


def _torch_hardsigmoid_grad(grad, x):
    inside = (x > -3) & (x < 3)
    return torch.where(inside, grad * float(np.float32(1 / 6)), torch.zeros_like(grad))


def _torch_mish_grad(grad, x):
    t = torch.tanh(TF.softplus(x))
    return grad * (t + x * torch.sigmoid(x) * (1 - t * t))


def _torch_softsign_grad(grad, x):
    return grad / (1 + x.abs()) ** 2


def _torch_logsigmoid_grad(grad, x):
    return grad * torch.sigmoid(-x)


# values and both inputs' gradients (finite differences and PyTorch's autograd of the formula)
for _name, _forward, _torch, _range in (
    (
        "exponential_linear_grad",
        lambda t: bai.celu(t, alpha=0.5),
        _torch_exponential_linear_grad,
        (-2.0, 2.0),
    ),
    ("hardswish_grad", lambda t: bai.hardswish(t), _torch_hardswish_grad, (-4.0, 4.0)),
    ("hardsigmoid_grad", lambda t: bai.hardsigmoid(t), _torch_hardsigmoid_grad, (-4.0, 4.0)),
    ("mish_grad", lambda t: bai.mish(t), _torch_mish_grad, (-4.0, 4.0)),
    ("softsign_grad", lambda t: bai.softsign(t), _torch_softsign_grad, (-3.0, 3.0)),
    ("logsigmoid_grad", lambda t: bai.logsigmoid(t), _torch_logsigmoid_grad, (-4.0, 4.0)),
):
    case(
        _name,
        _activation_grad(_name, _forward, *_range),
        torch=_torch,
        gradcheck=True,
        onnx=NO_ONNX_MAPPING,
    )

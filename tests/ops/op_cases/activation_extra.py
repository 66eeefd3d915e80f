"""Cases of the activation records of ``ops/activation_extra.py``: elu, selu, celu, hardtanh,
hardsigmoid, hardswish, threshold, prelu, mish, softsign, logsigmoid."""

from __future__ import annotations

import buildingai as bai

from .base import TF, Draw, Sample, case, trailing_sizes
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

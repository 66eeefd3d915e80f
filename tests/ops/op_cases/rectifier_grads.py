"""Cases of the rectifiers' gradient ops (``relu_grad``), captured from the backward pass of
their forward op so that the mask input is a real output."""

from __future__ import annotations

import numpy as np

from .base import Draw, Sample, backward_of, case, trailing_sizes


def _relu_grad(d: Draw) -> Sample:
    x = d.floats("n", *trailing_sizes(d), grad=True)
    return d.capture(
        "relu_grad", lambda: backward_of(lambda t: t.relu(), x), symbols={(0, 0): "n", (1, 0): "n"}
    )


def _torch_relu_grad(grad, out):
    return grad * (out != 0)


# values against torch's rule; the gradient flows through grad only (the mask has none)
case(
    "relu_grad",
    _relu_grad,
    dtypes=(np.float32, np.float64),
    torch=_torch_relu_grad,
    grad_inputs=(0,),
    gradgrad=True,
)


def _leaky_relu_grad(d: Draw) -> Sample:
    x = d.floats("n", *trailing_sizes(d), grad=True)
    return d.capture(
        "leaky_relu_grad",
        lambda: backward_of(lambda t: t.leaky_relu(0.2), x),
        symbols={(0, 0): "n", (1, 0): "n"},
    )


def _torch_leaky_relu_grad(grad, x, negative_slope):
    return grad * ((x > 0) + (x <= 0) * negative_slope)


case(
    "leaky_relu_grad",
    _leaky_relu_grad,
    dtypes=(np.float32, np.float64),
    torch=_torch_leaky_relu_grad,
    grad_inputs=(0,),
    gradgrad=True,
)

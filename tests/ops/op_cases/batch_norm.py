"""Cases of batch normalisation in training: its statistics, the normalisation with its affine
map, and the gradient records of its backward."""

from __future__ import annotations

from collections.abc import Callable

import buildingai.nn.functional as F

from .base import (
    NO_ONNX_MAPPING,
    NOT_DIFFERENTIABLE,
    TF,
    Draw,
    Sample,
    backward_of,
    case,
    tested_through,
    torch,
)

TRAINING_ONLY = "training-mode batch statistics: a model is exported in eval mode"


def _input(d: Draw, grad: bool = False):
    """x (n, C, *positions), with 0 to 2 position axes."""
    return d.floats("n", d.size(1, 3), *d.sizes(0, 2, 1, 3), grad=grad)


def _batch_statistics(d: Draw) -> Sample:
    x = _input(d)
    return d.capture("batch_statistics", lambda: F.batch_norm(x, None, None, training=True))


def _torch_batch_statistics(x):
    axes = (0, *range(2, x.ndim))
    return torch.stack([x.mean(dim=axes), x.var(dim=axes, correction=0)])


case(
    "batch_statistics",
    _batch_statistics,
    torch=_torch_batch_statistics,
    no_grad=NOT_DIFFERENTIABLE,
    onnx=TRAINING_ONLY,
)


def _batch_norm(d: Draw) -> Sample:
    x = _input(d)
    channels = x.shape[1]
    weight = d.choice((None, d.floats(channels)))
    bias = None if weight is None else d.choice((None, d.floats(channels)))
    return d.capture("batch_norm", lambda: F.batch_norm(x, None, None, weight, bias, training=True))


def _torch_batch_norm(x, stats, weight=None, bias=None, *, eps):
    # the statistics are x's own: PyTorch computes them from x
    return TF.batch_norm(x, None, None, weight, bias, training=True, eps=eps)


case(
    "batch_norm",
    _batch_norm,
    torch=_torch_batch_norm,
    grad_inputs=(0, 2, 3),
    gradgrad=True,
    onnx=TRAINING_ONLY,
)


def _batch_norm_grads(name: str) -> Callable:
    def make(d: Draw) -> Sample:
        x = _input(d, grad=True)
        weight = d.floats(x.shape[1], grad=True)
        return d.capture(
            name,
            lambda: backward_of(
                lambda a, w: F.batch_norm(a, None, None, w, training=True), x, weight
            ),
        )

    return make


# the statistics are the forward's values, which the backward recomputes from x
for _name in ("batch_norm_grad_sums", "batch_norm_input_grad"):
    case(
        _name,
        _batch_norm_grads(_name),
        no_grad=tested_through("batch_norm"),
        onnx=NO_ONNX_MAPPING,
    )


def _batch_norm_eval(d: Draw) -> Sample:
    x = _input(d)
    channels = x.shape[1]
    mean, var = d.floats(channels), d.floats(channels, low=0.5, high=2.0)
    weight = d.variant((None, d.floats(channels)))
    bias = None if weight is None else d.choice((None, d.floats(channels)))
    return d.capture(
        "batch_norm_eval", lambda: F.batch_norm(x, mean, var, weight, bias, training=False)
    )


case(
    "batch_norm_eval",
    _batch_norm_eval,
    torch=lambda x, m, v, w=None, b=None, *, eps: TF.batch_norm(x, m, v, w, b, eps=eps),
    grad_inputs=(0, 3, 4),  # PyTorch does not differentiate the running statistics
    gradcheck=True,
    gradgrad=True,
)

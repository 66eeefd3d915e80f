"""Cases of the random draws (the dropout keep-mask): ops with no tensor input whose shape may
follow a symbolic size (``dropout_mask(x.shape, p)`` in a traced training step)."""

from __future__ import annotations

import numpy as np

import buildingai as bai

from .base import NOT_DIFFERENTIABLE, Draw, Sample, case


def _bernoulli_mask(d: Draw) -> Sample:
    rest = d.sizes(0, 2)
    p = d.variant((0.0, 0.25, 0.5))
    sample = d.capture("bernoulli_mask", lambda: bai.dropout_mask((d.n, *rest), p))
    sample.symbol_sizes = {"n": d.n}
    sample.symbolic_attrs = lambda sizes: dict(sample.attrs, shape=(sizes["n"], *rest))
    return sample


case(
    "bernoulli_mask",
    _bernoulli_mask,
    dtypes=(np.bool_,),
    no_grad=NOT_DIFFERENTIABLE,
    onnx="a random draw: exported graphs are inference graphs, where dropout draws nothing",
    covered_by=("tests/graph/test_compile.py",),
)

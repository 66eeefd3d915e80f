"""Cases of the index-writing records: index_put and scatter_reduce (``ops/scatter.py``)."""

from __future__ import annotations

import numpy as np

import buildingai as bai

from .base import Draw, Sample, case, torch


def _torch_index(index: tuple) -> tuple:
    return tuple(
        torch.from_numpy(np.array(part)) if hasattr(part, "shape") else part for part in index
    )


def _index_put(d: Draw) -> Sample:
    """x (n, w) written through scatter (repeated indices: the last stays), index_copy,
    masked_scatter, a scattered number and fill_diagonal_."""
    width = d.size(2, 4)
    x = d.floats("n", width)
    form = d.variant(("scatter", "index_copy", "masked_scatter", "value", "fill_diagonal_"))
    if form == "scatter":
        index = d.rng.integers(0, width, size=(d.n, d.size(1, 4)))
        src = d.floats("n", index.shape[1])
        return d.capture("index_put", lambda: x.scatter(1, bai.tensor(index), src))
    if form == "index_copy":
        columns = d.rng.permutation(width)[: d.size(1, width)]
        source = d.floats("n", len(columns))
        return d.capture("index_put", lambda: x.index_copy(1, bai.tensor(columns), source))
    if form == "masked_scatter":
        mask = bai.tensor(d.rng.random(width) < 0.5)
        source = d.floats(d.n * width + 1)
        return d.capture("index_put", lambda: x.masked_scatter(mask, source),
                         symbols={(0, 0): "n"})  # fmt: skip
    if form == "value":
        index = d.rng.integers(0, width, size=(d.n, 1))
        return d.capture("index_put", lambda: x.scatter(1, bai.tensor(index), 0.5))
    return d.capture("index_put", lambda: x.clone().fill_diagonal_(-1.0, wrap=True),
                     symbols={(0, 0): "n"})  # fmt: skip


def _torch_index_put(x, values, *, index):
    out = x.clone()
    out[_torch_index(index)] = values
    return out


case(
    "index_put",
    _index_put,
    torch=_torch_index_put,
    gradgrad=True,
    covered_by=("tests/functions/test_scattering.py",),
)


def _scatter_reduce(d: Draw) -> Sample:
    """x (n, w) with src (n, k) reduced into it along dim 1 (repeated indices combine), by
    product, maximum or minimum, with and without x's own values."""
    width = d.size(2, 4)
    x = d.floats("n", width)
    index = d.rng.integers(0, width, size=(d.n, d.size(1, 5)))
    src = d.floats("n", index.shape[1])
    reduce = d.variant(("prod", "amax", "amin"))
    include_self = d.index % 2 == 0
    return d.capture(
        "scatter_reduce",
        lambda: x.scatter_reduce(1, bai.tensor(index), src, reduce, include_self=include_self),
    )


def _torch_scatter_reduce(x, values, *, index, reduce, include_self):
    """The same reduction on x flattened, at the flat positions the index selects."""
    positions = np.arange(x.numel()).reshape(tuple(x.shape))[index]
    flat = x.reshape(-1).scatter_reduce(
        0, torch.from_numpy(positions).reshape(-1), values.reshape(-1), reduce,
        include_self=include_self,
    )  # fmt: skip
    return flat.reshape(x.shape)


case(
    "scatter_reduce",
    _scatter_reduce,
    torch=_torch_scatter_reduce,
    gradgrad=True,
    onnx_opset=18,
    covered_by=("tests/functions/test_scattering.py",),
)

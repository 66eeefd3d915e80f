"""Cases of the factories (full, arange, eye, linspace): ops with no tensor input, whose sizes
are attributes, symbolic while freezing (``zeros(x.shape[0], 16)``, ``arange(x.shape[1])``)."""

from __future__ import annotations

import numpy as np

import buildingai as bai

from .base import NOT_DIFFERENTIABLE, Draw, Sample, case, torch

NUMBERS = (np.float32, np.float64, np.int64, np.int32)


def _torch_dtype(dtype):
    return getattr(torch, np.dtype(dtype).name)


def _full(d: Draw) -> Sample:
    rest = d.sizes(0, 2)
    fill_value = d.variant((0, 1.5, 3))
    sample = d.capture("full", lambda: bai.full((d.n, *rest), fill_value, dtype=d.dtype))
    sample.symbol_sizes = {"n": d.n}
    sample.symbolic_attrs = lambda sizes: dict(sample.attrs, shape=(sizes["n"], *rest))
    return sample


def _torch_full(*, shape, fill_value, dtype, device):
    return torch.full(shape, fill_value, dtype=_torch_dtype(dtype))


case(
    "full",
    _full,
    dtypes=NUMBERS,
    torch=_torch_full,
    no_grad=NOT_DIFFERENTIABLE,
)


def _arange(d: Draw) -> Sample:
    form = d.variant(("count", "shifted", "strided", "down"))
    if form == "count":  # arange(n)
        sample = d.capture("arange", lambda: bai.arange(d.n, dtype=d.dtype))
        symbolic = {"stop": "n"}
    elif form == "shifted":  # arange(1, n + 1)
        sample = d.capture("arange", lambda: bai.arange(1, d.n + 1, dtype=d.dtype))
        symbolic = {"stop": ("n", 1)}
    elif form == "down":  # arange(n, 0, -1)
        sample = d.capture("arange", lambda: bai.arange(d.n, 0, -1, dtype=d.dtype))
        symbolic = {"start": "n"}
    else:  # arange(0, n, 2): ceil(n / 2) has no c * n + k form
        sample = d.capture("arange", lambda: bai.arange(0, d.n, 2, dtype=d.dtype))
        symbolic = {"stop": "n"}
        sample.symbolic_error = "ceil(n / 2) elements, not c * n + k"

    def symbolic_attrs(sizes):
        attrs = dict(sample.attrs)
        for key, symbol in symbolic.items():
            name, offset = symbol if isinstance(symbol, tuple) else (symbol, 0)
            attrs[key] = sizes[name] + offset
        return attrs

    sample.symbol_sizes, sample.symbolic_attrs = {"n": d.n}, symbolic_attrs
    return sample


def _torch_arange(*, start, stop, step, dtype, device):
    return torch.arange(start, stop, step, dtype=_torch_dtype(dtype))


case("arange", _arange, dtypes=NUMBERS, torch=_torch_arange, no_grad=NOT_DIFFERENTIABLE)


def _eye(d: Draw) -> Sample:
    sample = d.capture("eye", lambda: bai.eye(d.n, d.m, dtype=d.dtype))
    sample.symbol_sizes = {"n": d.n, "m": d.m}
    sample.symbolic_attrs = lambda sizes: dict(sample.attrs, rows=sizes["n"], columns=sizes["m"])
    return sample


def _torch_eye(*, rows, columns, dtype, device):
    return torch.eye(rows, columns, dtype=_torch_dtype(dtype))


case("eye", _eye, dtypes=NUMBERS, torch=_torch_eye, no_grad=NOT_DIFFERENTIABLE)


def _linspace(d: Draw) -> Sample:
    start, stop = d.variant(((0.0, 1.0), (-2.0, 3.0), (1.0, -1.0)))
    sample = d.capture("linspace", lambda: bai.linspace(start, stop, d.n, dtype=d.dtype))
    sample.symbol_sizes = {"n": d.n}
    sample.symbolic_attrs = lambda sizes: dict(sample.attrs, steps=sizes["n"])
    return sample


def _torch_linspace(*, start, stop, steps, dtype, device):
    # computed in float64 and cast, as NumPy computes it
    return torch.linspace(start, stop, steps, dtype=torch.float64).to(_torch_dtype(dtype))


case(
    "linspace",
    _linspace,
    dtypes=(np.float32, np.float64),
    torch=_torch_linspace,
    no_grad=NOT_DIFFERENTIABLE,
)

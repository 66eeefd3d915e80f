"""Cases of the shape and indexing ops."""

from __future__ import annotations

import math

import numpy as np

import buildingai as bai
from buildingai.functions.index import zeros_index_add

from .base import (
    NO_ONNX_MAPPING,
    NOT_DIFFERENTIABLE,
    TF,
    Draw,
    Sample,
    backward_of,
    case,
    torch,
    torch_dim,
    trailing_sizes,
)

# ----- shape --------------------------------------------------------------------------------------


def _reshape(d: Draw) -> Sample:
    rest = d.sizes(1, 2, 2, 3)
    x = d.floats("n", *rest)
    count = math.prod(rest)
    target = d.choice(((-1,), (-1, count), (x.shape[0], count, 1)))
    symbolic_attrs = None
    if target[0] == x.shape[0]:

        def symbolic_attrs(sizes):
            return {"shape": (sizes["n"], count, 1)}

    return d.capture("reshape", lambda: x.reshape(target), symbolic_attrs=symbolic_attrs)


case(
    "reshape",
    _reshape,
    torch=lambda x, *, shape: x.reshape(shape),
    gradgrad=True,
    covered_by=("tests/ops/test_shape.py",),
)


def _expand(d: Draw) -> Sample:
    rest = d.sizes(1, 2, 2, 3)
    x = d.floats("n", *(1 for _ in rest))
    target = (d.n,) + rest
    return d.capture(
        "expand",
        lambda: x.expand(target),
        symbolic_attrs=lambda sizes: {"shape": (sizes["n"],) + rest},
    )


case("expand", _expand, torch=lambda x, *, shape: x.expand(shape))


def _permute(d: Draw) -> Sample:
    x = d.floats("n", *d.sizes(1, 2, 2, 4))
    order = tuple(int(a) for a in d.rng.permutation(x.ndim))
    if order == tuple(range(x.ndim)):  # the identity permutes nothing: no op is called
        order = order[1:] + order[:1]
    return d.capture("permute", lambda: x.permute(*order))


case("permute", _permute, torch=lambda x, *, axes: x.permute(axes))


def _squeeze(d: Draw) -> Sample:
    x = d.floats("n", 1, d.size(2, 3), 1)
    axis = d.choice((1, -1, None))
    return d.capture("squeeze", lambda: x.squeeze(axis))


case("squeeze", _squeeze, torch=lambda x, *, axes: x.squeeze(torch_dim(axes) or ()))


def _unsqueeze(d: Draw) -> Sample:
    x = d.floats("n", *trailing_sizes(d))
    axis = d.choice((0, -1, 1))
    return d.capture("unsqueeze", lambda: x.unsqueeze(axis))


def _torch_unsqueeze(x, *, axes):
    rank = x.ndim + len(axes)
    for axis in sorted(a % rank for a in axes):
        x = x.unsqueeze(axis)
    return x


case("unsqueeze", _unsqueeze, torch=_torch_unsqueeze)


def _concatenate(d: Draw) -> Sample:
    rest = d.sizes(1, 2, 1, 3)
    parts = [d.floats("n", *rest[:-1], d.size(1, 3)) for _ in range(d.size(2, 3))]
    return d.capture("concatenate", lambda: bai.concatenate(parts, axis=-1))


case(
    "concatenate",
    _concatenate,
    torch=lambda *arrays, axis: torch.cat(arrays, dim=axis),
    gradgrad=True,
)


def _pad(d: Draw) -> Sample:
    x = d.floats("n", d.size(3, 4), d.size(3, 4))
    mode = d.choice(("constant", "reflect", "replicate", "circular"))
    widths = ((0, 0), (d.size(0, 2), d.size(0, 2)), (d.size(0, 2), d.size(1, 2)))
    return d.capture("pad", lambda: x.pad(widths, mode=mode, value=0.5))


def _torch_pad(x, *, widths, mode, value):
    flat = [w for before_after in reversed(widths[1:]) for w in before_after]
    if mode == "constant":
        return TF.pad(x, flat, mode=mode, value=value)
    return TF.pad(x, flat, mode=mode)  # reflect, replicate and circular pad (C, H, W) inputs


case(
    "pad",
    _pad,
    torch=_torch_pad,
    gradgrad=True,
    onnx_opset=19,  # circular padding (Pad's "wrap" mode)
    covered_by=("tests/ops/test_shape.py",),
)


def _pad_adjoint(d: Draw) -> Sample:
    x = d.floats("n", d.size(3, 4), d.size(3, 4), grad=True)
    mode = d.choice(("reflect", "replicate", "circular"))
    widths = ((0, 0), (d.size(0, 2), d.size(1, 2)), (d.size(1, 2), d.size(0, 2)))
    return d.capture(
        "pad_adjoint",
        lambda: backward_of(lambda t: t.pad(widths, mode=mode), x),
        symbols={(0, 0): "n"},
    )


case("pad_adjoint", _pad_adjoint, gradcheck=True, onnx=NO_ONNX_MAPPING)


def _unfold_geometry(d: Draw) -> tuple:
    axis, size = d.choice((0, 1, -1)), d.size(1, 3)
    return axis, size, d.size(1, 3)


def _unfold_axis(d: Draw) -> Sample:
    x = d.floats("n", d.size(3, 6), d.size(3, 5))
    axis, size, step = _unfold_geometry(d)
    sample = d.capture("unfold_axis", lambda: x.unfold(axis, size, step))
    if axis == 0 and step > 1:
        sample.symbolic_error = "(n - size) // step windows along n, not c * n + k"
    return sample


def _unfold_axis_adjoint(d: Draw) -> Sample:
    x = d.floats("n", d.size(3, 6), d.size(3, 5), grad=True)
    axis, size, step = _unfold_geometry(d)
    return d.capture(
        "unfold_axis_adjoint",
        lambda: backward_of(lambda t: t.unfold(axis, size, step), x, create_graph=True),
        symbols={(0, 0): "n"},
    )


# the windows along "n", the symbolic axis, are exported only where its size is fixed
case(
    "unfold_axis",
    _unfold_axis,
    torch=lambda x, *, axis, size, step: x.unfold(axis, size, step),
    gradgrad=True,
    covered_by=("tests/functions/test_sliding.py",),
)
case("unfold_axis_adjoint", _unfold_axis_adjoint, gradcheck=True, onnx=NO_ONNX_MAPPING)


# ----- indexing -----------------------------------------------------------------------------------


def _getitem(d: Draw) -> Sample:
    x = d.floats("n", d.size(3, 5), d.size(2, 4))
    index = d.variant(
        (
            (slice(None), 1),
            (slice(None), slice(1, None), slice(None, None, 2)),
            (Ellipsis, None, 0),
            (slice(None), slice(None, None, -1)),
            (slice(None), -1, slice(1, 2)),
            (slice(1, None),),  # n - 1 rows
            (slice(None, None, 2),),
        )
    )
    sample = d.capture("getitem", lambda: x[index])
    if index == (slice(None, None, 2),):
        sample.symbolic_error = "every second row of n is ceil(n / 2), not c * n + k"
    return sample


case(
    "getitem",
    _getitem,
    gradcheck=True,
    gradgrad=True,
    covered_by=("tests/ops/test_index.py",),
)


def _index(d: Draw) -> Sample:
    x = d.floats("n", d.size(3, 5), d.size(2, 3))
    rows = d.rng.integers(0, x.shape[1], size=d.size(1, 4))
    columns = d.rng.integers(-x.shape[2], x.shape[2], size=(2, d.size(1, 2)))
    index = d.variant(((slice(None), rows), (slice(None), slice(None), columns)))
    return d.capture("index", lambda: x[index])


case(
    "index",
    _index,
    torch=lambda x, *, index: x[
        tuple(torch.as_tensor(i) if hasattr(i, "shape") else i for i in index)
    ],
    gradgrad=True,
    covered_by=("tests/ops/test_index.py",),
)


def _zeros_index_add(d: Draw) -> Sample:
    width = d.size(3, 5)
    rows = d.rng.integers(0, width, size=d.size(2, 5))  # repeats add up
    values = d.floats("n", len(rows))
    sample = d.capture(
        "zeros_index_add", lambda: zeros_index_add(values, (d.n, width), (slice(None), rows))
    )
    sample.symbolic_attrs = lambda sizes: dict(sample.attrs, shape=(sizes["n"], width))
    return sample


case(
    "zeros_index_add",
    _zeros_index_add,
    gradcheck=True,
    gradgrad=True,
    covered_by=("tests/ops/test_index.py",),
)


def _one_hot(d: Draw) -> Sample:
    classes = d.size(3, 6)
    indices = d.ints("n", *trailing_sizes(d, 0, 1), high=classes, dtype=d.dtype)
    return d.capture("one_hot", lambda: bai.one_hot(indices, classes))


case(
    "one_hot",
    _one_hot,
    dtypes=(np.int64, np.int32),
    torch=lambda t, *, num_classes: TF.one_hot(t.long(), num_classes),
    no_grad=NOT_DIFFERENTIABLE,
)

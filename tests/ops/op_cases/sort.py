"""Cases of the ordering and triangle records: sort_indices, gather_elements, tril, triu."""

from __future__ import annotations

import buildingai as bai

from .base import NOT_DIFFERENTIABLE, Draw, Sample, case, torch


def _sort_indices(d: Draw) -> Sample:
    """x (n, m) or (n, m, k); along an axis, all positions or the first k, either order."""
    x = d.floats("n", "m", *d.sizes(0, 1, 2, 4))
    axis = d.variant((-1, 0, 1))
    extent = x.shape[axis]
    k = d.variant((None, 1, extent))
    descending = d.choice((False, True))
    if k is None:
        return d.capture("sort_indices", lambda: bai.argsort(x, dim=axis, descending=descending))
    return d.capture("sort_indices", lambda: bai.topk(x, k, dim=axis, largest=descending))


def _torch_sort_indices(x, *, axis, k, descending):
    order = torch.sort(x, dim=axis, descending=descending, stable=True).indices
    return order if k is None else order.narrow(axis, 0, k)


case(
    "sort_indices",
    _sort_indices,
    torch=_torch_sort_indices,
    no_grad=NOT_DIFFERENTIABLE,
    covered_by=("tests/functions/test_sorting.py",),
)


def _gather_elements(d: Draw) -> Sample:
    """x (n, m) gathered along one axis by an int64 index no larger than x off that axis."""
    x = d.floats("n", "m")
    axis = d.variant((0, 1, -1))
    if axis == 0:
        index = d.ints(d.size(1, 4), "m", high=x.shape[0])
    else:
        index = d.ints("n", d.size(1, 4), high=x.shape[1])
    return d.call("gather_elements", x, index, axis=axis)


case(
    "gather_elements",
    _gather_elements,
    torch=lambda x, index, *, axis: torch.gather(x, axis, index),
    gradgrad=True,
    gradcheck=True,
    covered_by=("tests/functions/test_sorting.py",),
)


def triangle(name: str) -> None:
    def make(d: Draw) -> Sample:
        x = d.floats(*d.sizes(0, 1, 1, 3), "n", "m")
        diagonal = d.variant((0, -1, 1, 2, -3))
        return d.capture(name, lambda: getattr(bai, name)(x, diagonal))

    case(
        name,
        make,
        torch=lambda x, *, diagonal: getattr(torch, name)(x, diagonal),
        gradgrad=True,
        covered_by=("tests/functions/test_triangle.py",),
    )


triangle("tril")
triangle("triu")

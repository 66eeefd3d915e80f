"""Cases of the reductions, scans and sum_to."""

from __future__ import annotations

from collections.abc import Callable

import buildingai as bai

from .base import (
    NOT_DIFFERENTIABLE,
    Draw,
    Sample,
    case,
    torch,
    torch_dim,
)

# ----- reductions ---------------------------------------------------------------------------------


def _reduction_input(d: Draw, **bounds) -> tuple:
    """x (n, m) or (n, m, k), and an axis (an int, a tuple or None) taken in turn."""
    x = d.floats("n", "m", *d.sizes(0, 1, 2, 4), **bounds)
    axis = d.variant((-1, 0, (0, -1), None, 1))
    return x, axis


def reduction(name: str, function: Callable, keepdims_choices=(False, True), **options):
    """x -> x reduced over ``axis`` (kept as size 1 with keepdims). The op may see a tensor
    derived from the drawn one (``x > 0``), so the symbolic axes of input 0 are named here."""

    def make(d: Draw) -> Sample:
        x, axis = _reduction_input(d, **BOUNDS.get(name, {}))
        keepdims = d.choice(keepdims_choices)
        return d.capture(
            name, lambda: function(x, axis, keepdims), symbols={(0, 0): "n", (0, 1): "m"}
        )

    case(name, make, **options)


BOUNDS = {"prod": {"low": 0.5, "high": 1.5}, "vector_norm": {"low": 0.2}}

reduction(
    "sum",
    lambda x, a, k: x.sum(axis=a, keepdims=k),
    torch=lambda x, *, axes, keepdims: x.sum(dim=torch_dim(axes), keepdim=keepdims),
    gradgrad=True,
)
reduction(
    "mean",
    lambda x, a, k: x.mean(axis=a, keepdims=k),
    torch=lambda x, *, axes, keepdims: x.mean(dim=torch_dim(axes), keepdim=keepdims),
)
reduction(
    "prod",
    lambda x, a, k: x.prod(axis=a, keepdims=k),
    torch=lambda x, *, axes, keepdims: _torch_prod(x, axes, keepdims),
    gradgrad=True,
)
reduction(
    "max",
    lambda x, a, k: x.max(axis=a, keepdims=k),
    torch=lambda x, *, axes, keepdims: torch.amax(x, dim=torch_dim(axes) or (), keepdim=keepdims),
)
reduction(
    "min",
    lambda x, a, k: x.min(axis=a, keepdims=k),
    torch=lambda x, *, axes, keepdims: torch.amin(x, dim=torch_dim(axes) or (), keepdim=keepdims),
)
reduction(
    "logsumexp",
    lambda x, a, k: x.logsumexp(axis=a, keepdims=k),
    torch=lambda x, *, axes, keepdims: torch.logsumexp(
        x, dim=torch_dim(axes) or tuple(range(x.ndim)), keepdim=keepdims
    ),
    gradgrad=True,
)
reduction(
    "var",
    lambda x, a, k: x.var(axis=a, keepdims=k, correction=0 if a is None else 1),
    torch=lambda x, *, axes, keepdims, correction: torch.var(
        x, dim=torch_dim(axes), correction=correction, keepdim=keepdims
    ),
    gradgrad=True,
)
reduction(
    "std",
    lambda x, a, k: x.std(axis=a, keepdims=k),
    torch=lambda x, *, axes, keepdims, correction: torch.std(
        x, dim=torch_dim(axes), correction=correction, keepdim=keepdims
    ),
)
reduction(
    "vector_norm",
    lambda x, a, k: x.norm(p=3 if a == -1 else 2, dim=a, keepdim=k),
    torch=lambda x, *, ord, axes, keepdims: torch.linalg.vector_norm(
        x, ord, dim=torch_dim(axes), keepdim=keepdims
    ),
    gradgrad=True,
)
reduction(
    "all",
    lambda x, a, k: (x > 0).all(axis=a, keepdims=k),
    torch=lambda x, *, axes, keepdims: _torch_predicate(torch.all, x, axes, keepdims),
    no_grad=NOT_DIFFERENTIABLE,
)
reduction(
    "any",
    lambda x, a, k: (x > 1).any(axis=a, keepdims=k),
    torch=lambda x, *, axes, keepdims: _torch_predicate(torch.any, x, axes, keepdims),
    no_grad=NOT_DIFFERENTIABLE,
)
reduction(
    "count_nonzero",
    lambda x, a, k: x.round().count_nonzero(axis=a, keepdims=k),
    torch=lambda x, *, axes, keepdims: _torch_count_nonzero(x, axes, keepdims),
    no_grad=NOT_DIFFERENTIABLE,
)


def _torch_prod(x, axes, keepdims):
    for axis in sorted(axes if axes is not None else range(x.ndim), reverse=True):
        x = x.prod(dim=axis, keepdim=keepdims)
    return x


def _torch_predicate(function, x, axes, keepdims):
    axes = tuple(range(x.ndim)) if axes is None else tuple(axes)
    return function(x, dim=axes, keepdim=keepdims)


def _torch_count_nonzero(x, axes, keepdims):
    axes = tuple(range(x.ndim)) if axes is None else tuple(axes)
    count = torch.count_nonzero(x, dim=axes)
    if keepdims:
        count = count.reshape([1 if a in axes else s for a, s in enumerate(x.shape)])
    return count


def arg_extremum(name: str, method: str, reference: Callable) -> None:
    def make(d: Draw) -> Sample:
        x = d.floats("n", *d.sizes(0, 2, 2, 4))
        axis = d.choice((0, -1, None))
        keepdims = d.choice((False, True)) if axis is not None else False
        return d.capture(name, lambda: getattr(x, method)(axis=axis, keepdims=keepdims))

    case(
        name,
        make,
        torch=lambda x, *, axis, keepdims: reference(x, dim=axis, keepdim=keepdims),
        no_grad=NOT_DIFFERENTIABLE,
    )


arg_extremum("argmax", "argmax", torch.argmax)
arg_extremum("argmin", "argmin", torch.argmin)


def scan(name: str, method: str) -> None:
    def make(d: Draw) -> Sample:
        x = d.floats("n", *d.sizes(0, 2, 2, 4), low=0.5, high=1.5)
        axis = d.choice((0, -1))
        exclusive, reverse = d.choice((False, True)), d.choice((False, True))
        function = getattr(bai.functions.reduce, method)
        return d.capture(name, lambda: function(x, axis, exclusive=exclusive, reverse=reverse))

    case(
        name,
        make,
        torch=lambda x, *, axis, exclusive, reverse: _torch_scan(
            method, x, axis, exclusive, reverse
        ),
        gradgrad=True,
        **({"onnx": "ONNX has no cumulative product operator"} if name == "cumprod" else {}),
    )


def _torch_scan(method, x, axis, exclusive, reverse):
    if reverse:
        x = x.flip(axis)
    if exclusive:
        identity = torch.zeros_like if method == "cumsum" else torch.ones_like
        first = identity(x.narrow(axis, 0, 1))
        x = torch.cat([first, x.narrow(axis, 0, x.shape[axis] - 1)], dim=axis)
    out = getattr(torch, method)(x, dim=axis)
    return out.flip(axis) if reverse else out


scan("cumsum", "cumsum")
scan("cumprod", "cumprod")


def _sum_to(d: Draw) -> Sample:
    rest = d.sizes(1, 2, 2, 4)
    x = d.floats("n", *rest)
    target = tuple(d.choice((1, s)) for s in rest)
    if d.choice((False, True)):
        target = (1,) + target
    return d.capture("sum_to", lambda: x.sum_to(target))


case(
    "sum_to",
    _sum_to,
    torch=lambda x, *, shape: x.sum_to_size(shape),
)

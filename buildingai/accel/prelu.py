"""Faster prelu, forward and backward (``ops/activation_extra.py``'s ``prelu``,
``prelu_input_grad`` and ``prelu_weight_grad``), registered against those records.

prelu's slopes broadcast along one axis of x (one per channel) or are a single number, so x is
seen as (N, C, S): the axes before the slopes' axis, that axis, and the axes after it (a single
slope: rows of x's last axis, C = 1). On that view float32 arrays go to the compiled twins
(``kernels/compiled/prelu.py``): the maps in one pass on numba's threads, the slopes' gradient
as per-row masked dot products added per channel. The NumPy kernels they twin, and run where
they do not apply, write the maps as products with a slope array (1 where x > 0), which NumPy
runs several times faster than ``where`` over an irregular sign pattern; both are exact, so
the values are the record's. Slopes that broadcast along several axes run the record.
"""

from __future__ import annotations

import math

import numpy as np

from ..ops.activation_extra import PRELU, PRELU_INPUT_GRAD, PRELU_WEIGHT_GRAD
from .kernels import compiled
from .kernels.compiled import compiled_twin
from .registry import register

_FLOAT32 = np.dtype(np.float32)


def channel_view(x_shape: tuple, weight_shape: tuple) -> tuple | None:
    """(N, C, S) with x reshaped to it holding weight's slopes along axis 1 (C = 1 for a single
    slope: rows of x's last axis), or None where weight does not broadcast along one axis of
    x or is longer than x."""
    ndim = len(x_shape)
    if ndim == 0 or len(weight_shape) > ndim:
        return None
    padded = (1,) * (ndim - len(weight_shape)) + tuple(weight_shape)
    axes = [axis for axis, size in enumerate(padded) if size != 1]
    if not axes:
        return (math.prod(x_shape[:-1]), 1, x_shape[-1])
    (axis,) = axes if len(axes) == 1 else (None,)
    if axis is None or padded[axis] != x_shape[axis]:
        return None
    return (math.prod(x_shape[:axis]), x_shape[axis], math.prod(x_shape[axis + 1 :]))


# ----- NumPy kernels on (N, C, S) arrays and (C,) slopes, each the reference of its twin -------


def _slopes(x, weight, out) -> None:
    """out = 1 where x > 0, else the channel's slope: (1 - positive) * weight + positive, exact
    for every finite slope (0 * w + 1 and 1 * w + 0)."""
    positive = np.greater(x, 0)
    np.subtract(1, positive, out=out, casting="unsafe")
    out *= weight[:, None]
    out += positive


@compiled_twin("prelu.prelu_channels")
def _prelu_channels(xp, x, weight, out) -> None:
    """out = x where x > 0, else weight[c] * x, for x and out (N, C, S), weight (C,)."""
    _slopes(x, weight, out)
    out *= x


@compiled_twin("prelu.prelu_input_grad_channels")
def _prelu_input_grad_channels(xp, g, x, weight, out) -> None:
    """out = g where x > 0, else weight[c] * g, for g, x and out (N, C, S), weight (C,)."""
    _slopes(x, weight, out)
    out *= g


@compiled_twin("prelu.prelu_weight_grad_channels")
def _prelu_weight_grad_channels(xp, g, x, out) -> None:
    """out (C,) = the sum over axes 0 and 2 of g * x where not x > 0, for g and x (N, C, S)."""
    if not np.isfinite(g).all():  # inf * 0 is NaN: where x > 0 the term must stay 0
        g = np.where(x > 0, 0, g)
    terms = np.multiply(g, np.minimum(x, 0))  # min(x, 0): x where not x > 0, NaN kept
    np.sum(terms, axis=(0, 2), out=out)


# ----- the registered kernels ---------------------------------------------------------------------


def _map_fits(xp, *arrays) -> bool:
    """NumPy arrays of one shape (x, and grad before it) and slopes (the last) that broadcast
    along one axis of them, with a float result."""
    *tensors, weight = arrays
    if not all(type(array) is np.ndarray for array in arrays):
        return False
    first = tensors[0]
    return (
        np.result_type(*arrays).kind == "f"
        and all(array.shape == first.shape for array in tensors)
        and channel_view(first.shape, weight.shape) is not None
    )


def _channels(array, view, dtype):
    """``array`` as the (N, C, S) view in ``dtype`` (contiguous, a copy where it must be)."""
    return np.ascontiguousarray(array, dtype).reshape(view)


def _map(kernel, dtype, *arrays):
    """``kernel``'s map of ``arrays`` (tensors, then slopes) in ``dtype``: the twin on float32,
    the NumPy kernel elsewhere."""
    *tensors, weight = arrays
    shape = tensors[0].shape
    view = channel_view(shape, weight.shape)
    inputs = [_channels(array, view, dtype) for array in tensors]
    slopes = np.ascontiguousarray(weight, dtype).reshape(view[1])
    out = np.empty(view, dtype)
    if dtype != _FLOAT32 or not compiled.run(kernel, [*inputs, slopes, out]):
        kernel(np, *inputs, slopes, out)
    return out.reshape(shape)


def prelu(ctx, xp, x, weight):
    """One pass through the twin (float32), or the product with the slope array."""
    return _map(_prelu_channels, PRELU.output_dtype(x, weight), x, weight)


def prelu_input_grad(ctx, xp, grad, x, weight):
    """One pass through the twin (float32), or grad times the slope array."""
    dtype = PRELU_INPUT_GRAD.output_dtype(grad, x, weight)
    return _map(_prelu_input_grad_channels, dtype, grad, x, weight)


def prelu_weight_grad(ctx, xp, grad, x, weight):
    """The twin's per-row masked dot products (float32), or one product and a sum."""
    dtype = np.result_type(grad.dtype, x.dtype, weight.dtype)
    view = channel_view(x.shape, weight.shape)
    g, values = _channels(grad, view, dtype), _channels(x, view, dtype)
    out = np.empty(view[1], dtype)
    if dtype != _FLOAT32 or not compiled.run(_prelu_weight_grad_channels, [g, values, out]):
        _prelu_weight_grad_channels(np, g, values, out)
    return out.reshape(weight.shape)


register(
    PRELU,
    _map_fits,
    prelu,
    name="prelu.fused",
    description="x times its slope (1 or weight) per channel: one compiled pass on float32",
)
register(
    PRELU_INPUT_GRAD,
    _map_fits,
    prelu_input_grad,
    name="prelu_input_grad.fused",
    description="grad times its slope (1 or weight) per channel: one compiled pass on float32",
)
register(
    PRELU_WEIGHT_GRAD,
    _map_fits,
    prelu_weight_grad,
    name="prelu_weight_grad.fused",
    description="per-row masked dot products added per channel, cut across numba's threads",
)

"""Where a tensor's elements are non-zero: ``nonzero`` and ``argwhere``, and
``computed_from``, how every function that finds positions or sets from the values (``unique``,
``searchsorted``...) returns them.

The positions depend on the data (in their count), so they carry no gradient and a frozen graph
refuses them.
"""

from __future__ import annotations

import numpy as np

from ..autograd.tensor import Tensor
from ..backend.device import array_namespace

_INT64 = np.dtype(np.int64)


def computed_from(array, *sources) -> Tensor:
    """A tensor over ``array``, computed from the values of ``sources`` (arrays) outside the
    recorded ops. NumPy functions such as ``nonzero`` return plain arrays; the result takes the
    array subclass of a source that has one, because a subclass marks values that depend on a
    traced input, which freezing must refuse rather than hold as a constant."""
    for source in sources:
        kind = type(source)
        if kind is not np.ndarray and issubclass(kind, np.ndarray) and type(array) is np.ndarray:
            return Tensor(array.view(kind))
    return Tensor(array)


def nonzero(input: Tensor, *, as_tuple: bool = False):  # noqa: A002 - PyTorch's name
    """The int64 positions of the non-zero elements of ``input`` (NaN counts as non-zero), in
    C order: (z, ndim), one row per element; with ``as_tuple`` a tuple of ndim tensors (z,).

    A 0-d tensor gives (z, 0), or with ``as_tuple`` one tensor (z,) (as a one-element 1-D
    tensor), z being 1 or 0, as in PyTorch. No gradient.
    """
    array = input.array
    xp = array_namespace(array)
    if array.ndim == 0:
        count = int(bool(array != 0))
        if as_tuple:
            return (computed_from(xp.arange(count, dtype=_INT64), array),)
        return computed_from(xp.zeros((count, 0), dtype=_INT64), array)
    positions = [axis_positions.astype(_INT64) for axis_positions in xp.nonzero(array)]
    if as_tuple:
        return tuple(computed_from(axis_positions, array) for axis_positions in positions)
    return computed_from(xp.stack(positions, axis=1), array)


def argwhere(input: Tensor) -> Tensor:  # noqa: A002 - PyTorch's name
    """The int64 positions of the non-zero elements of ``input``: (z, ndim), as ``nonzero``."""
    return nonzero(input)

"""``TensorSpec``: the shape and dtype a frozen graph accepts for one input, with symbolic
dimensions (``None`` or a name) for sizes that may change from call to call."""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from ..backend.dtypes import as_dtype
from ..errors import ArgumentError


@dataclass(frozen=True)
class TensorSpec:
    """One input of a frozen graph.

    ``shape`` holds ints (fixed sizes), names (symbolic sizes; inputs sharing a name share the
    size) or ``None``. An unnamed ``None`` at axis 0 is the symbol ``batch``, elsewhere
    ``dim<axis>``: inputs with an unnamed ``None`` at the same axis share that size, as a
    batch of token ids and its padding mask do. Name dimensions to say otherwise.

    Example: ``TensorSpec((None, 784))``, ``TensorSpec(("batch", "seq"), dtype="int64")``.
    """

    shape: tuple
    dtype: object = "float32"
    name: str | None = None

    def __post_init__(self) -> None:
        shape = tuple(self.shape)
        for extent in shape:
            ok = extent is None or isinstance(extent, (str, int))
            if not ok or (isinstance(extent, int) and extent < 0):
                raise ArgumentError(
                    f"TensorSpec shape {shape}: each dimension must be a non-negative int, a "
                    f"name or None, got {extent!r}"
                )
        object.__setattr__(self, "shape", shape)
        object.__setattr__(self, "dtype", np.dtype(as_dtype(self.dtype)))

    @functools.cached_property
    def symbols(self) -> tuple:
        """The symbol of each dimension (None for fixed ones); read on every call of a frozen
        graph, so worked out once."""
        return tuple(symbol_of(extent, axis) for axis, extent in enumerate(self.shape))

    def __repr__(self) -> str:
        dims = ", ".join("None" if d is None else repr(d) for d in self.shape)
        name = f", name={self.name!r}" if self.name else ""
        return f"TensorSpec(({dims}{',' if len(self.shape) == 1 else ''}), {self.dtype}{name})"


def symbol_of(extent, axis: int) -> str | None:
    """The symbol a spec dimension stands for, or None when it is a fixed size."""
    if isinstance(extent, str):
        return extent
    if extent is None:
        return "batch" if axis == 0 else f"dim{axis}"
    return None

"""The einops backend for BuildingAI tensors: ``einops.rearrange``, ``reduce``, ``repeat``,
``einsum``, ``pack`` and ``unpack`` work on them, with gradients, as they do on PyTorch's.

einops finds a backend by subclass of its ``AbstractBackend`` whose ``framework_name`` is an
imported module. So when einops is installed, importing ``buildingai.nn`` imports it (pure
Python, nothing started) and defines ``BuildingAIBackend``, whatever the order of the user's
imports. Every method is made of BuildingAI's own differentiable ops.
"""

from __future__ import annotations

import numpy as np

from .. import functions
from ..autograd.tensor import Tensor
from ..backend.dtypes import is_floating
from . import einops_layers

try:
    from einops._backends import AbstractBackend
except ImportError:  # einops is optional: pip install "buildingai[einops]"
    AbstractBackend = None


def _reduce_each_axis(x: Tensor, operation: str, axes) -> Tensor:
    """``prod``, ``any`` and ``all`` over several axes, from the last so the others keep their
    positions."""
    for axis in sorted(axes, reverse=True):
        x = getattr(x, operation)(axis=axis)
    return x


if AbstractBackend is not None:

    class BuildingAIBackend(AbstractBackend):
        """How einops reshapes, permutes, reduces, repeats and multiplies BuildingAI tensors."""

        framework_name = "buildingai"

        def is_appropriate_type(self, tensor) -> bool:
            return isinstance(tensor, Tensor)

        def from_numpy(self, x: np.ndarray) -> Tensor:
            tensor = functions.as_tensor(x)
            if is_floating(tensor.dtype):
                tensor.requires_grad_(True)  # as einops' own backends do, for its gradient tests
            return tensor

        def to_numpy(self, x: Tensor) -> np.ndarray:
            return x.detach().numpy()

        def arange(self, start: int, stop: int) -> Tensor:
            return functions.arange(start, stop, dtype="int64")

        def shape(self, x: Tensor) -> tuple[int, ...]:
            return tuple(x.shape)

        def reshape(self, x: Tensor, shape) -> Tensor:
            return x.reshape(tuple(shape))

        def transpose(self, x: Tensor, axes) -> Tensor:
            return x.permute(tuple(axes))

        def reduce(self, x: Tensor, operation: str, axes) -> Tensor:
            axes = tuple(axes)
            if operation == "min":
                return x.amin(axis=axes)
            if operation == "max":
                return x.amax(axis=axes)
            if operation in ("sum", "mean"):
                return getattr(x, operation)(axis=axes)
            if operation in ("prod", "any", "all"):
                return _reduce_each_axis(x, operation, axes)
            raise NotImplementedError(f"[einops] unknown reduction {operation!r}")

        def stack_on_zeroth_dimension(self, tensors: list) -> Tensor:
            return functions.stack(list(tensors))

        def add_axis(self, x: Tensor, new_position: int) -> Tensor:
            return x.unsqueeze(new_position)

        def add_axes(self, x: Tensor, n_axes: int, pos2len: dict) -> Tensor:
            # new axes of length 1, broadcast (a view, no copy) to the lengths asked for
            sizes = [-1] * n_axes
            for position, length in pos2len.items():
                x = x.unsqueeze(position)
                sizes[position] = length
            return x.expand(*sizes)

        def tile(self, x: Tensor, repeats) -> Tensor:
            return functions.tile(x, tuple(repeats))

        def concat(self, tensors, axis: int) -> Tensor:
            return functions.cat(list(tensors), axis)

        def is_float_type(self, x: Tensor) -> bool:
            return is_floating(x.dtype)

        def layers(self):
            return einops_layers

        def einsum(self, pattern: str, *x: Tensor) -> Tensor:
            return functions.einsum(pattern, *x)


__all__: list[str] = []  # registered with einops by subclassing; nothing to import from here

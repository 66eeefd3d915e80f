"""``Rearrange`` and ``Reduce``: einops' layers as BuildingAI modules (no parameters), for
``Sequential(..., Rearrange("b c h w -> b (c h w)"), ...)``.

They need einops (``pip install "buildingai[einops]"``); without it, constructing one raises an
``ImportError`` that says so. einops keeps its layers per framework inside its own package, so
they are imported from here: ``from buildingai.nn import Rearrange, Reduce``.
"""

from __future__ import annotations

from typing import Any

from ..autograd.tensor import Tensor
from .module import Module

try:
    from einops.layers import RearrangeMixin, ReduceMixin
except ImportError:  # einops is optional
    RearrangeMixin = ReduceMixin = None


if RearrangeMixin is not None:

    class Rearrange(RearrangeMixin, Module):
        """``einops.rearrange(x, pattern, **axes_lengths)`` as a layer:
        ``Rearrange("b c (h p1) (w p2) -> b (h w) (p1 p2 c)", p1=16, p2=16)``."""

        def forward(self, x: Tensor) -> Tensor:
            return self._apply_recipe(x)

    class Reduce(ReduceMixin, Module):
        """``einops.reduce(x, pattern, reduction, **axes_lengths)`` as a layer:
        ``Reduce("b c h w -> b c", "mean")`` is global average pooling."""

        def forward(self, x: Tensor) -> Tensor:
            return self._apply_recipe(x)

else:

    class _NeedsEinops(Module):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            raise ImportError(
                f"{type(self).__name__} needs einops, which is not installed; "
                'install it with pip install "buildingai[einops]" (or pip install einops)'
            )

    class Rearrange(_NeedsEinops):
        """einops' Rearrange layer (needs einops)."""

    class Reduce(_NeedsEinops):
        """einops' Reduce layer (needs einops)."""


__all__ = ["Rearrange", "Reduce"]

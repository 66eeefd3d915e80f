"""Three-dimensional convolutions as functions, as PyTorch's."""

from __future__ import annotations

__all__: list = []

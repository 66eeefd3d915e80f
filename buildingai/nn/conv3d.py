"""Three-dimensional convolution layers, as PyTorch's."""

from __future__ import annotations

__all__: list = []

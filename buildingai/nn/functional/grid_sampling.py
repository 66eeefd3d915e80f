"""Sampling an image at a grid of points, as PyTorch's."""

from __future__ import annotations

__all__: list = []

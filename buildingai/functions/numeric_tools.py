"""Numeric tools PyTorch lists beside its reductions, with PyTorch's names."""

from __future__ import annotations

__all__: list = []

TENSOR_METHODS: dict = {}

"""Element-wise math beyond ``elementwise.py``, with PyTorch's names."""

from __future__ import annotations

__all__: list = []

TENSOR_METHODS: dict = {}

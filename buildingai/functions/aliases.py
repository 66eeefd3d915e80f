"""PyTorch's other names for functions BuildingAI has under one name."""

from __future__ import annotations

__all__: list = []

TENSOR_METHODS: dict = {}

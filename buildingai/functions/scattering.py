"""(being written)"""

from __future__ import annotations

__all__: list[str] = []

TENSOR_METHODS: dict = {}

"""In-place ops (add_, mul_, zero_, ...) guarded by version counters."""

from __future__ import annotations

__all__: list[str] = []

TENSOR_METHODS: dict = {}

"""Neural-network primitives: softmax, log_softmax, dropout, embedding."""

from __future__ import annotations

__all__: list[str] = []

TENSOR_METHODS: dict = {}

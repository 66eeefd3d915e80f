"""Turn logged values (tensors, NumPy scalars, numbers) into plain Python numbers for trackers."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np


def as_number(value: Any) -> float | int:
    """A Python number from a 0-d or one-element tensor or array, a NumPy scalar or a number."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, (int, float)):
        return value
    if hasattr(value, "item"):  # Tensor, NumPy array or scalar
        try:
            return value.item()
        except (ValueError, RuntimeError) as error:
            raise ValueError(
                f"a logged metric must be a single number; got a value of shape "
                f"{tuple(getattr(value, 'shape', ()))} ({error})"
            ) from None
    return float(np.asarray(value))


def numbers(metrics: Mapping[str, Any]) -> dict[str, float | int]:
    """``{name: number}`` from a metrics mapping whose values may be tensors."""
    return {str(name): as_number(value) for name, value in metrics.items()}


def flatten(params: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested mappings (a Config, a dict of dicts) as one level with dotted keys:
    ``{"optim": {"lr": 0.1}}`` -> ``{"optim.lr": 0.1}``."""
    flat: dict[str, Any] = {}
    for key, value in params.items():
        name = f"{prefix}{key}"
        if hasattr(value, "to_dict"):
            value = value.to_dict()
        if isinstance(value, Mapping):
            flat.update(flatten(value, prefix=f"{name}."))
        else:
            flat[name] = value
    return flat

"""Collation: turning a list of dataset items into one batch.

``default_collate`` stacks NumPy arrays, Tensors and numbers into Tensors with a new leading batch
axis, recursing into tuples, lists, dicts and named tuples, so a batch has the structure of one
item. Strings (and other objects) are gathered into lists.
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..autograd.tensor import Tensor
from ..backend import dtypes as _dtypes
from ..errors import BuildingAIError, ShapeError


def _stack(arrays: list[np.ndarray]) -> np.ndarray:
    shapes = {array.shape for array in arrays}
    if len(shapes) != 1:
        listed = ", ".join(str(shape) for shape in sorted(shapes, key=str))
        raise ShapeError(
            f"[collate] cannot stack items of different shapes into a batch: {listed}",
            help="make the dataset return equal shapes (e.g. RandomCrop/pad), or pass a "
            "collate_fn such as buildingai.data.text.collate_sequences that pads",
        )
    return np.stack(arrays)


def default_collate(batch: Sequence[Any]) -> Any:
    """Merge a list of items into a batch.

    - arrays / Tensors of shape ``S`` -> one Tensor ``(B, *S)`` (dtypes kept);
    - Python ints -> int64 ``(B,)``, bools -> bool ``(B,)``, floats -> float32 ``(B,)`` (the
      default float dtype, as ``buildingai.tensor`` does); NumPy scalars keep their dtype;
    - tuples, lists, named tuples and dicts -> the same container of collated fields;
    - strings, bytes and None -> a list of the values.
    """
    if len(batch) == 0:
        raise BuildingAIError("[collate] cannot collate an empty batch")
    first = batch[0]
    if isinstance(first, Tensor):
        return Tensor(_stack([item.array for item in batch]))
    if isinstance(first, np.ndarray):
        if first.dtype.kind in "USO":  # strings or Python objects: no numeric stacking
            return list(batch)
        return Tensor(_stack([np.asarray(item) for item in batch]))
    if isinstance(first, np.generic):
        return Tensor(np.asarray(batch, dtype=first.dtype))
    if isinstance(first, bool):
        return Tensor(np.asarray(batch, dtype=np.bool_))
    if isinstance(first, numbers.Integral):
        return Tensor(np.asarray(batch, dtype=np.int64))
    if isinstance(first, numbers.Real):
        return Tensor(np.asarray(batch, dtype=_dtypes.default_float_dtype))
    if isinstance(first, (str, bytes)) or first is None:
        return list(batch)
    if isinstance(first, Mapping):
        missing = [i for i, item in enumerate(batch) if set(item) != set(first)]
        if missing:
            raise BuildingAIError(
                f"[collate] dict items have different keys: item 0 has {sorted(first)}, "
                f"item {missing[0]} has {sorted(batch[missing[0]])}",
                help="return the same keys from every item, or pass a custom collate_fn",
            )
        return {key: default_collate([item[key] for item in batch]) for key in first}
    if isinstance(first, tuple) and hasattr(first, "_fields"):  # named tuple
        return type(first)(*(default_collate(list(field)) for field in zip(*batch)))
    if isinstance(first, (tuple, list)):
        lengths = {len(item) for item in batch}
        if len(lengths) != 1:
            raise BuildingAIError(
                f"[collate] sequence items have different lengths {sorted(lengths)}",
                help="every item must have the same number of fields; for variable-length "
                "sequences use buildingai.data.text.collate_sequences",
            )
        fields = [default_collate(list(field)) for field in zip(*batch)]
        return fields if isinstance(first, list) else tuple(fields)
    raise BuildingAIError(
        f"[collate] default_collate does not know how to batch items of type "
        f"{type(first).__name__}",
        help="return arrays, numbers, strings, or tuples/lists/dicts of them from the dataset, "
        "or pass collate_fn=... to the DataLoader",
    )


def default_convert(item: Any) -> Any:
    """Without batching (``batch_size=None``): arrays and numbers become Tensors, recursively."""
    if isinstance(item, Tensor):
        return item
    if isinstance(item, np.ndarray) and item.dtype.kind not in "USO":
        return Tensor(item)
    if isinstance(item, np.generic):
        return Tensor(np.asarray(item))
    if isinstance(item, Mapping):
        return {key: default_convert(value) for key, value in item.items()}
    if isinstance(item, tuple) and hasattr(item, "_fields"):
        return type(item)(*(default_convert(value) for value in item))
    if isinstance(item, (tuple, list)):
        return type(item)(default_convert(value) for value in item)
    return item

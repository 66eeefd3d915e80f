"""Questions about dtypes: ``finfo`` and ``iinfo``, the limits of a dtype, as
``torch.finfo(x.dtype).eps`` asks them; ``promote_types``, ``result_type`` and ``can_cast``,
PyTorch's promotion rules (``ops/promotion.py``, which every op's dtype follows).

BuildingAI's dtypes are NumPy's (bfloat16 is ``ml_dtypes``'), so these read NumPy's and
ml_dtypes' tables and return the numbers as Python floats and ints, as PyTorch does.
"""

from __future__ import annotations

import numpy as np

from ..backend.dtypes import as_dtype, bfloat16, get_default_dtype
from ..errors import DTypeError
from ..ops import promotion

try:  # bfloat16's table, where bfloat16 exists
    import ml_dtypes
except ImportError:  # pragma: no cover - depends on the environment
    ml_dtypes = None


class finfo:  # noqa: N801 - PyTorch's name
    """The limits of a floating dtype (the default float dtype when none is given):
    ``bits``, ``eps``, ``max``, ``min``, ``tiny`` (= ``smallest_normal``), ``resolution`` and
    ``dtype`` (its name)."""

    def __init__(self, type=None) -> None:  # noqa: A002 - PyTorch's name
        dtype = get_default_dtype() if type is None else as_dtype(type)
        if bfloat16 is not None and dtype == bfloat16:
            table = ml_dtypes.finfo(dtype)
        elif dtype.kind == "f":
            table = np.finfo(dtype)
        else:
            raise DTypeError(
                f"[finfo] {dtype} is not a floating dtype",
                help="use iinfo for integer dtypes",
            )
        self.dtype = str(dtype)
        self.bits = int(table.bits)
        self.eps = float(table.eps)
        self.max = float(table.max)
        self.min = float(table.min)
        self.tiny = self.smallest_normal = float(table.smallest_normal)
        self.resolution = 10.0 ** -int(table.precision)  # as NumPy and PyTorch give it

    def __repr__(self) -> str:
        return (
            f"finfo(resolution={self.resolution:g}, min={self.min:g}, max={self.max:g}, "
            f"eps={self.eps:g}, smallest_normal={self.smallest_normal:g}, tiny={self.tiny:g}, "
            f"dtype={self.dtype})"
        )


class iinfo:  # noqa: N801 - PyTorch's name
    """The limits of an integer dtype: ``bits``, ``max``, ``min`` and ``dtype`` (its name)."""

    def __init__(self, type) -> None:  # noqa: A002 - PyTorch's name
        dtype = as_dtype(type)
        if dtype.kind not in "iu":
            raise DTypeError(
                f"[iinfo] {dtype} is not an integer dtype", help="use finfo for floating dtypes"
            )
        table = np.iinfo(dtype)
        self.dtype = str(dtype)
        self.bits, self.max, self.min = int(table.bits), int(table.max), int(table.min)

    def __repr__(self) -> str:
        return f"iinfo(min={self.min}, max={self.max}, dtype={self.dtype})"


def promote_types(type1, type2) -> np.dtype:
    """The smallest dtype both dtypes fit in, by PyTorch's rules (not NumPy's): a float wins
    over any integer (int64 with float16 is float16), float16 with bfloat16 is float32."""
    return promotion.promote_types(as_dtype(type1), as_dtype(type2))


def result_type(tensor1, tensor2) -> np.dtype:
    """The dtype an element-wise op of ``tensor1`` and ``tensor2`` (tensors or Python numbers)
    computes in: tensors with dimensions decide among themselves; a 0-d tensor or a number
    counts only when of a higher category (a float meeting integers)."""
    return promotion.result_type(tensor1, tensor2)


# PyTorch's categories: a cast may keep or raise its category, never lower it
_CATEGORY = {"b": 0, "u": 1, "i": 1, "f": 2, "V": 2, "c": 3}  # (bfloat16's NumPy kind is "V")


def can_cast(from_, to) -> bool:  # noqa: A002 - PyTorch's names
    """Whether PyTorch's promotion allows casting ``from_`` to ``to``: within a category (bool,
    integer, float, complex) always, even to fewer bits; to a lower category never (float to
    int is False, int to float True)."""
    return _CATEGORY[as_dtype(from_).kind] <= _CATEGORY[as_dtype(to).kind]


__all__ = ["can_cast", "finfo", "iinfo", "promote_types", "result_type"]

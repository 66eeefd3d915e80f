"""``finfo`` and ``iinfo``: the limits of a dtype, as ``torch.finfo(x.dtype).eps`` asks them.

BuildingAI's dtypes are NumPy's (bfloat16 is ``ml_dtypes``'), so these read NumPy's and
ml_dtypes' tables and return the numbers as Python floats and ints, as PyTorch does.
"""

from __future__ import annotations

import numpy as np

from ..backend.dtypes import as_dtype, bfloat16, get_default_dtype
from ..errors import DTypeError

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


__all__ = ["finfo", "iinfo"]

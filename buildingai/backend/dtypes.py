"""The dtype table. BuildingAI dtypes are NumPy dtype objects, so ``x.dtype == np.float32`` holds
and arrays move between NumPy, CuPy and BuildingAI without translation. bfloat16 comes from
``ml_dtypes`` when it is installed."""

from __future__ import annotations

import numpy as np

from ..errors import DTypeError

float16 = np.dtype("float16")
float32 = np.dtype("float32")
float64 = np.dtype("float64")
int8 = np.dtype("int8")
uint8 = np.dtype("uint8")
int16 = np.dtype("int16")
int32 = np.dtype("int32")
int64 = np.dtype("int64")
bool_ = np.dtype("bool")

try:  # optional: bfloat16 for mixed precision
    import ml_dtypes

    bfloat16: np.dtype | None = np.dtype(ml_dtypes.bfloat16)
except ImportError:  # pragma: no cover - depends on the environment
    bfloat16 = None

# The dtype of tensors made from Python floats, of factories without a dtype, and of integer
# operands promoted by a float op. Read it with get_default_dtype(); set_default_dtype changes it.
default_float_dtype = float32

_BY_NAME = {
    "float16": float16, "half": float16,
    "float32": float32, "float": float32,
    "float64": float64, "double": float64,
    "int8": int8, "uint8": uint8, "int16": int16,
    "int32": int32, "int": int32,
    "int64": int64, "long": int64,
    "bool": bool_,
}  # fmt: skip


def as_dtype(dtype) -> np.dtype:
    """Normalise a dtype given as a name, a NumPy/ml_dtypes type or a dtype object."""
    if isinstance(dtype, np.dtype):
        return dtype
    if isinstance(dtype, str):
        if dtype == "bfloat16":
            if bfloat16 is None:
                raise DTypeError(
                    "bfloat16 needs the ml_dtypes package, which is not installed",
                    help="pip install 'buildingai[bf16]'",
                )
            return bfloat16
        if dtype in _BY_NAME:
            return _BY_NAME[dtype]
        raise DTypeError(
            f"unknown dtype {dtype!r}",
            help=f"use one of {sorted(_BY_NAME) + ['bfloat16']}",
        )
    try:
        return np.dtype(dtype)
    except TypeError as exc:
        raise DTypeError(f"cannot interpret {dtype!r} as a dtype") from exc


def is_floating(dtype: np.dtype) -> bool:
    """True for float16/32/64 and bfloat16: the dtypes that can carry gradients."""
    return dtype.kind == "f" or (bfloat16 is not None and dtype == bfloat16)


def get_default_dtype() -> np.dtype:
    """The default floating dtype (float32 unless ``set_default_dtype`` changed it), as
    ``torch.get_default_dtype``."""
    return default_float_dtype


def set_default_dtype(dtype) -> None:
    """Make ``dtype`` (float16, bfloat16, float32 or float64) the default floating dtype, as
    ``torch.set_default_dtype``: for tensors made from Python floats, for factories called
    without a dtype (``zeros``, ``rand``...), for new layers' parameters and for integer
    operands of a float op. It is one setting for the whole process."""
    global default_float_dtype
    chosen = as_dtype(dtype)
    if chosen.kind not in "fV" or chosen.itemsize not in (2, 4, 8):
        raise TypeError(
            f"set_default_dtype: the default dtype must be a floating dtype (float16, bfloat16, "
            f"float32 or float64), got {chosen}"
        )
    default_float_dtype = chosen

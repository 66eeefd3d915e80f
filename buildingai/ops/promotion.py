"""PyTorch's dtype promotion, for NumPy/CuPy arrays, Tensors and ``ValueSpec`` s alike.

NumPy and PyTorch disagree where an integer meets a float (NumPy widens ``int64 + float32`` to
float64), where a 0-d tensor meets a dimensioned one (NumPy lets a 0-d float64 widen a float32
tensor; PyTorch does not), and where float16 meets bfloat16. Forward computations and ``infer``
both take their dtypes from ``result_type`` here, so they cannot drift apart.
"""

from __future__ import annotations

import numpy as np

from ..backend import dtypes

INTEGRAL = "biu"  # dtype kinds: bool, signed and unsigned integers
_BOOL = np.dtype(bool)
_INT64 = np.dtype(np.int64)
_FLOAT32 = np.dtype(np.float32)


def is_float_dtype(dtype: np.dtype) -> bool:
    """float16/32/64 and bfloat16 (an ml_dtypes type, NumPy kind 'V')."""
    return dtype.kind == "f" or dtype.kind == "V"


def promote_types(a: np.dtype | None, b: np.dtype | None) -> np.dtype | None:
    """PyTorch's ``promote_types``: the smallest dtype both fit in, a float winning over any
    integer (``int64 + float16`` is float16, where NumPy says float64) and float16 meeting
    bfloat16 in float32. None stands for "no operand yet"."""
    if a is None or a == b:
        return b
    if b is None:
        return a
    a_float, b_float = is_float_dtype(a), is_float_dtype(b)
    if a_float and b_float:
        if a.itemsize == b.itemsize == 2:  # float16 and bfloat16
            return _FLOAT32
        return a if a.itemsize > b.itemsize else b
    if a_float:
        return a
    if b_float:
        return b
    return np.promote_types(a, b)


def _combine(higher: np.dtype | None, lower: np.dtype | None) -> np.dtype | None:
    """PyTorch's rule between priority tiers (tensors with dimensions > 0-d tensors > Python
    scalars): a lower tier counts only when it is of a higher category (bool < integer <
    float), and then as a dtype of its own (``int8 tensor + 0-d float64`` is float64)."""
    if higher is None:
        return lower
    if lower is None or is_float_dtype(higher):
        return higher
    if higher == _BOOL or is_float_dtype(lower):
        return promote_types(higher, lower)
    return higher


def result_type(*operands) -> np.dtype:
    """The dtype PyTorch gives an element-wise op of ``operands``: arrays, Tensors or
    ``ValueSpec`` s (anything with ``dtype`` and ``shape``) and Python scalars; None is skipped.

    Tensors with dimensions promote among themselves; a 0-d tensor or a Python scalar changes
    the result only when it is of a higher category (a float meeting integers, an integer
    meeting bools). A Python float then stands for the default float dtype, a Python int for
    int64.
    """
    dimensioned = zero_dim = scalar = None
    for value in operands:
        dtype = getattr(value, "dtype", None)
        if dtype is not None:
            if len(value.shape):
                dimensioned = promote_types(dimensioned, np.dtype(dtype))
            else:
                zero_dim = promote_types(zero_dim, np.dtype(dtype))
        elif isinstance(value, bool):
            scalar = promote_types(scalar, _BOOL)
        elif isinstance(value, int):
            scalar = promote_types(scalar, _INT64)
        elif isinstance(value, float):
            scalar = promote_types(scalar, np.dtype(dtypes.default_float_dtype))
    result = _combine(dimensioned, _combine(zero_dim, scalar))
    return _FLOAT32 if result is None else result


def float_dtype(dtype: np.dtype) -> np.dtype:
    """``dtype`` itself if floating, else the default float dtype (float-only functions of
    integers and bools, as in PyTorch)."""
    return dtype if is_float_dtype(dtype) else np.dtype(dtypes.default_float_dtype)


def cast_operands(operands: tuple, dtype: np.dtype) -> tuple:
    """Arrays among ``operands`` cast to ``dtype`` (copies only where the dtype differs);
    Python scalars stay, as they take the array's dtype in NumPy."""
    return tuple(
        value.astype(dtype) if hasattr(value, "dtype") and value.dtype != dtype else value
        for value in operands
    )


def as_float(x):
    """Integer and boolean arrays become the default float dtype, as in PyTorch."""
    if x.dtype.kind in INTEGRAL:
        return x.astype(dtypes.default_float_dtype)
    return x


def with_scalar(dtype, scalar) -> np.dtype:
    """PyTorch's result dtype of a tensor of ``dtype`` and a Python scalar (``result_type``
    for this common case, in a few comparisons)."""
    if is_float_dtype(dtype):
        return dtype
    if type(scalar) is float:
        return np.dtype(dtypes.default_float_dtype)
    if type(scalar) is int and dtype.kind == "b":
        return _INT64
    return dtype


def pair_dtype(a, b) -> np.dtype:
    """``result_type(a, b)``, quicker when one operand is a Python scalar."""
    if not hasattr(a, "dtype") and not hasattr(b, "dtype"):  # two Python numbers
        return result_type(a, b)
    if not hasattr(a, "dtype"):
        return with_scalar(b.dtype, a)
    if not hasattr(b, "dtype"):
        return with_scalar(a.dtype, b)
    return result_type(a, b)


def torch_dtype(ufunc, a, b, out, want=None):
    """``out = ufunc(a, b)`` again, in PyTorch's result dtype ``want`` (by default
    ``result_type(a, b)``), where NumPy's differs: an integer meeting a float (NumPy widens
    ``int64 + float32`` to float64), a 0-d tensor meeting a dimensioned one (it does not widen
    it in PyTorch), bfloat16 meeting a Python float (ml_dtypes widens it to float32)."""
    if want is None:
        scalar = type(b)
        if (scalar is float or scalar is int) and out.dtype is getattr(a, "dtype", None):
            return out  # a Python number is weak in both libraries: it kept the array's dtype
        want = pair_dtype(a, b)
    if out.dtype == want:
        return out
    operands = cast_operands((a, b), want)
    if operands[0] is a and operands[1] is b:
        return out.astype(want)  # only a Python scalar widened it (bfloat16 in ml_dtypes)
    out = ufunc(*operands)
    return out if out.dtype == want else out.astype(want)

"""Math precision: the dtype matrix products and convolutions compute in.

``set_math_precision(name)`` sets the process-wide default; ``with math_precision(name):`` sets it
for the calling thread inside the block only. The settings:

- ``"fp32"``: float32 operands are multiplied in float32 (the default).
- ``"tf32"``: on CUDA, cuBLAS multiplies float32 matrices on TF32 tensor cores (10-bit mantissa
  inputs, float32 accumulation). NumPy has no TF32 kernel: on the CPU the products stay in fp32,
  and a warning says so once.
- ``"bf16"`` / ``"fp16"``: float32 operands of matmul, linear and conv are rounded to bfloat16 /
  float16 and multiplied with float32 accumulation; the result stays float32. NumPy has no
  low-precision GEMM, so on the CPU this is the rounding of the inputs followed by a float32 GEMM
  (the numerics of a low-precision tensor-core GEMM, not its speed).

Whatever the setting, float16 and bfloat16 operands on the CPU are multiplied by a float32 GEMM
(their products are exact in float32, and the sum is accumulated in float32) and the result
rounded to their dtype: NumPy's own float16 / bfloat16 products run without BLAS.
"""

from __future__ import annotations

import contextlib
import contextvars
import warnings

import numpy as np

from . import device as _device
from . import dtypes

PRECISIONS = ("fp32", "tf32", "bf16", "fp16")
_FLOAT32 = np.dtype(np.float32)
_FLOAT64 = np.dtype(np.float64)
_ROUNDING = {
    "fp32": None,
    "tf32": None,
    "bf16": dtypes.bfloat16,
    "fp16": np.dtype(np.float16),
}

_default = "fp32"
_SCOPED: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "buildingai_math_precision", default=None
)
_warned_tf32_on_cpu = False
# The dtypes whose products are multiplied as stored whatever a thread has set: float64 always,
# float32 until a precision other than "fp32" is set anywhere (process default or a block). Until
# then a float32 product needs no look at the thread's setting, which every matmul would pay for.
MULTIPLIED_AS_STORED = {_FLOAT64, _FLOAT32}


def _checked(name: str) -> str:
    if name not in PRECISIONS:
        raise ValueError(
            f"[math_precision] unknown precision {name!r}; choose one of {', '.join(PRECISIONS)}"
        )
    if name == "bf16" and _ROUNDING["bf16"] is None:
        raise ImportError("math_precision('bf16') needs ml_dtypes: pip install 'buildingai[bf16]'")
    if name != "fp32":
        MULTIPLIED_AS_STORED.discard(_FLOAT32)
    return name


def set_math_precision(name: str) -> None:
    """Set the process-wide default precision of matmul and conv: "fp32", "tf32", "bf16" or
    "fp16" (``with math_precision(...)`` overrides it on one thread)."""
    global _default
    _default = _checked(name)
    _apply_to_cupy(get_math_precision())


def get_math_precision() -> str:
    """The precision in force on this thread."""
    scoped = _SCOPED.get()
    return _default if scoped is None else scoped


@contextlib.contextmanager
def math_precision(name: str):
    """``with math_precision("bf16"): ...`` sets the precision on this thread inside the block."""
    token = _SCOPED.set(_checked(name))
    _apply_to_cupy(name)
    try:
        yield name
    finally:
        _SCOPED.reset(token)
        _apply_to_cupy(get_math_precision())


_TORCH_NAMES = {"highest": "fp32", "high": "tf32", "medium": "bf16"}


def set_float32_matmul_precision(precision: str) -> None:
    """PyTorch's spelling of ``set_math_precision``: "highest" is "fp32", "high" is "tf32"
    (float32 on the CPU, which has no TF32 kernel), "medium" is "bf16"."""
    if precision not in _TORCH_NAMES:
        raise ValueError(
            f"set_float32_matmul_precision: precision must be 'highest', 'high' or 'medium', "
            f"got {precision!r}"
        )
    set_math_precision(_TORCH_NAMES[precision])


def get_float32_matmul_precision() -> str:
    """The precision in force in PyTorch's words: "highest", "high" or "medium" ("fp16",
    which PyTorch has no name for, reads "medium")."""
    return {"fp32": "highest", "tf32": "high"}.get(get_math_precision(), "medium")


def describe() -> str:
    """The setting in force, and what it means on this machine (for ``buildingai info``)."""
    name = get_math_precision()
    meaning = {
        "fp32": "matmul/conv in float32",
        "tf32": "TF32 tensor cores on CUDA; float32 on the CPU",
        "bf16": "matmul/conv inputs rounded to bfloat16, float32 accumulation",
        "fp16": "matmul/conv inputs rounded to float16, float32 accumulation",
    }[name]
    return f"{name} ({meaning}); switch: buildingai.set_math_precision / math_precision"


# ----- what matmul and conv ask -----------------------------------------------------------------


def gemm_result_dtype(a, b):
    """None when ``a`` and ``b`` (NumPy arrays) are multiplied as they are; otherwise the dtype
    of the result of the float32 GEMM that ``gemm_operand`` prepares them for."""
    a_dtype, b_dtype = a.dtype, b.dtype
    if a_dtype is b_dtype and a_dtype.itemsize != 2:  # one dtype, not a half one: the common case
        if a_dtype is _FLOAT32 and a_dtype not in MULTIPLIED_AS_STORED:
            return _float32_rounded(a)
        return None
    if type(a) is not np.ndarray:  # CuPy multiplies float16 natively with float32 accumulation
        return None
    if a_dtype.itemsize == 2 or b_dtype.itemsize == 2:  # float16 / bfloat16 (or int16)
        return dtypes_result(a, b)
    if a_dtype != _FLOAT32 or b_dtype != _FLOAT32:
        return None
    return _float32_rounded(a)


def _float32_rounded(a):
    """For float32 operands: float32 when the precision in force rounds them first ("bf16",
    "fp16"), None when they are multiplied as they are ("fp32", "tf32" on the CPU, CuPy)."""
    scoped = _SCOPED.get()
    name = _default if scoped is None else scoped
    if name == "fp32" or type(a) is not np.ndarray:
        return None
    if name == "tf32":
        _warn_tf32_on_cpu_once()
        return None
    return _FLOAT32


def gemm_operand(array):
    """``array`` as the float32 operand of the GEMM: float16 / bfloat16 widened exactly; float32
    rounded to the precision in force first ("bf16" / "fp16")."""
    if _is_half(array.dtype):
        return array.astype(_FLOAT32)
    rounding = _ROUNDING[get_math_precision()]
    if rounding is None or array.dtype != _FLOAT32:
        return array
    return array.astype(rounding).astype(_FLOAT32)


def dtypes_result(a, b) -> np.dtype:
    """The dtype of a product of ``a`` and ``b`` when one of them is float16 or bfloat16: their
    own when they agree, float64 with a float64, else float32 (float16 with bfloat16, too)."""
    if a.dtype == b.dtype:
        return a.dtype
    if _FLOAT64 in (a.dtype, b.dtype):
        return _FLOAT64
    return _FLOAT32


def _is_half(dtype: np.dtype) -> bool:
    """float16 or bfloat16 (ml_dtypes' floats are NumPy kind "V")."""
    return dtype.itemsize == 2 and dtype.kind in "fV"


def _warn_tf32_on_cpu_once() -> None:
    global _warned_tf32_on_cpu
    if not _warned_tf32_on_cpu:
        _warned_tf32_on_cpu = True
        warnings.warn(
            "math_precision('tf32'): NumPy has no TF32 kernel, so CPU matmul and conv compute "
            "in float32",
            RuntimeWarning,
            stacklevel=4,
        )


def _apply_to_cupy(name: str) -> None:
    """Switch cuBLAS's float32 compute type to TF32 (or back), where CuPy is loaded."""
    cupy = _device._cupy
    if cupy is None:
        return
    try:  # CuPy keeps cuBLAS's compute type per dtype in this private module
        from cupy._core import _routines_linalg as linalg
    except ImportError:
        return
    if not hasattr(linalg, "set_compute_type"):
        return
    compute_type = linalg.COMPUTE_TYPE_TF32 if name == "tf32" else linalg.COMPUTE_TYPE_DEFAULT
    linalg.set_compute_type(cupy.float32, compute_type)

"""How a tensor's memory is handed to a backend: the NumPy array itself when it is contiguous and of
a dtype the backend reduces natively, else a contiguous working copy written back afterwards."""

from __future__ import annotations

import numpy as np

from ..backend.device import array_namespace
from ..errors import DTypeError

REDUCE_OPS = ("sum", "mean", "max", "min", "prod")
# bool has no arithmetic: sum and max are "any", prod and min are "all"
BOOL_OPS = {"sum": "lor", "max": "lor", "prod": "land", "min": "land"}


def is_bfloat16(dtype: np.dtype) -> bool:
    return dtype.name == "bfloat16"


def wire_array(array: np.ndarray) -> np.ndarray:
    """The bytes of ``array`` as a dtype every backend can move (bfloat16 as its raw uint16 bits),
    sharing memory. Used by the collectives that copy values without combining them."""
    if is_bfloat16(array.dtype):
        return array.view(np.uint16)
    return array


def reduce_op_for(dtype: np.dtype, op: str, collective: str) -> str:
    """The backend reduction for ``op`` on ``dtype`` ("sum", "max", ..., "lor", "land")."""
    if op not in REDUCE_OPS:
        raise DTypeError(
            f"[{collective}] unknown op {op!r}",
            help=f"use one of {', '.join(repr(name) for name in REDUCE_OPS)}",
        )
    if dtype.kind == "b":
        if op == "mean":
            raise DTypeError(
                f"[{collective}] op='mean' is undefined for a bool tensor",
                help="use op='sum' (any) or op='min' (all), or convert to a float dtype first",
            )
        return BOOL_OPS[op]
    if op == "mean" and dtype.kind in "iu":
        raise DTypeError(
            f"[{collective}] op='mean' on an integer tensor ({dtype}) would truncate",
            help="reduce with op='sum' and divide, or convert to a float dtype first",
        )
    if dtype.kind not in "iufV" or (dtype.kind == "V" and not is_bfloat16(dtype)):
        raise DTypeError(f"[{collective}] cannot reduce a tensor of dtype {dtype}")
    return "sum" if op == "mean" else op


class Staged:
    """A contiguous array a backend reduces in place, and how to write it back into ``target``.

    ``array`` is ``target`` itself on the fast path (contiguous, natively reducible dtype), else a
    copy: contiguous, and float32 for a dtype the backend cannot reduce (bfloat16, or float16 on an
    MPI without it). ``finish(divide_by)`` divides for a mean and copies back when needed.
    """

    __slots__ = ("target", "array")

    def __init__(self, target: np.ndarray, native_float16: bool = True) -> None:
        self.target = target
        xp = array_namespace(target)
        dtype = target.dtype
        widen = is_bfloat16(dtype) or (dtype == np.float16 and not native_float16)
        if widen:
            self.array = target.astype(np.float32)  # always a new, contiguous array
        elif not target.flags.c_contiguous:
            self.array = xp.ascontiguousarray(target)
        else:
            self.array = target

    def finish(self, divide_by: int = 1) -> None:
        xp = array_namespace(self.target)
        if divide_by != 1:
            xp.divide(self.array, divide_by, out=self.array, casting="unsafe")
        if self.array is not self.target:
            xp.copyto(self.target, self.array, casting="unsafe")


def contiguous(array: np.ndarray) -> np.ndarray:
    """``array`` if C-contiguous, else a contiguous copy."""
    return array if array.flags.c_contiguous else array_namespace(array).ascontiguousarray(array)

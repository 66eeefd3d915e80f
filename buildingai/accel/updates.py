"""The in-place updates of a hand-written optimizer (``m.lerp_(g, 1 - beta1)``,
``v.addcmul_(g, g, value=1 - beta2)``, ``p.addcdiv_(m, denom, value=-lr)``) as one kernel each,
beside the out-of-place formulas ``functions/inplace_math.py`` otherwise runs (two or three
ops, their temporaries, and a copy back).

``fused_update`` takes a call where nothing records or watches it (the caller checks) and the
operands are NumPy float arrays of the tensor's shape and dtype, C-contiguous and not partly
overlapping it; the kernels (``kernels/updates.py``) write into the tensor's array, through
their compiled twins for float32, cut across threads when large. Everywhere else it declines
and the formulas run.
"""

from __future__ import annotations

import functools

import numpy as np

from .kernels import updates
from .kernels.split import elementwise
from .registry import register_switch

FUSED_UPDATES = register_switch(
    "updates.fused",
    description="lerp_, addcmul_ and addcdiv_ outside the graph as one pass each (a "
    "hand-written optimizer's updates), instead of their formulas' two or three ops",
)
_KERNELS = {"lerp_": updates.lerp, "addcmul_": updates.addcmul, "addcdiv_": updates.addcdiv}
_SCALAR = {"lerp_": "weight", "addcmul_": "value", "addcdiv_": "value"}
_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def fused_update(name: str, x, operands: tuple, scalar) -> bool:
    """``x = name's formula(x, *operands, scalar)`` written into the array ``x`` by one kernel,
    and True; False, having done nothing, where the kernel does not take the call."""
    if not FUSED_UPDATES.active or not _fits(x, operands):
        return False
    kernel = functools.partial(_KERNELS[name], **{_SCALAR[name]: scalar})
    elementwise(np, kernel, (x, *operands), (x,))
    return True


def _fits(x, operands: tuple) -> bool:
    if type(x) is not np.ndarray or x.dtype not in _FLOATS or not x.size:
        return False
    if not (x.flags.c_contiguous and x.flags.writeable):
        return False
    for operand in operands:
        if type(operand) is not np.ndarray or operand.dtype != x.dtype:
            return False
        if operand.shape != x.shape or not operand.flags.c_contiguous:
            return False
        # the same array is read and written at each entry in turn; a shifted view is not
        if operand is not x and np.may_share_memory(operand, x):
            return False
    return True

"""Array kernels of the in-place updates a hand-written optimizer makes (``lerp_``,
``addcmul_``, ``addcdiv_``): each the out-of-place formula of ``functions/pointwise_compositions``
with its roundings in the same order, written into ``out`` (which may be ``x`` itself) in a
few passes over flat arrays of one shape, and marked with its compiled twin
(``compiled/updates.py``: one pass on numba's threads). ``kernel(xp, *inputs, out, **scalar)``.
"""

from __future__ import annotations

from .compiled import compiled_twin


@compiled_twin("updates.lerp", params=("weight",))
def lerp(xp, x, end, out, *, weight) -> None:
    """out = x + weight * (end - x)."""
    step = xp.subtract(end, x)
    step *= weight
    xp.add(x, step, out=out)


@compiled_twin("updates.addcmul", params=("value",))
def addcmul(xp, x, tensor1, tensor2, out, *, value) -> None:
    """out = x + value * tensor1 * tensor2 (the product left to right)."""
    step = xp.multiply(tensor1, value)
    step *= tensor2
    xp.add(x, step, out=out)


@compiled_twin("updates.addcdiv", params=("value",))
def addcdiv(xp, x, tensor1, tensor2, out, *, value) -> None:
    """out = x + value * tensor1 / tensor2 (the product, then the quotient)."""
    step = xp.multiply(tensor1, value)
    step /= tensor2
    xp.add(x, step, out=out)

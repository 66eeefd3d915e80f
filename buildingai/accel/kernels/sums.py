"""The array kernel of a large sum of two float32 arrays on several threads, for ``add.threads``
and ``sum_into.threads`` (``accel/sums.py``): ``a + b`` and the backward engine's in-place sums
of gradients. NumPy adds on the calling thread alone; where the next kernel reads
the sum on several threads, each thread then fetches its rows from the other core's cache. The
compiled twin (``compiled/sums.py``) cuts the sum into the same contiguous parts a row kernel
takes, and gives NumPy's bits (one rounding per element)."""

from __future__ import annotations

from .compiled import compiled_twin


@compiled_twin("sums.add", threads_only=True)
def add(xp, a, b, out) -> None:
    """out = a + b for flat arrays of one length (out may be a)."""
    xp.add(a, b, out=out)

"""Random draws as ops, so a traced training step draws fresh values on every run.

A dropout keep-mask is drawn by ``BERNOULLI_MASK`` through dispatch: a static graph records the
draw as a node (its shape may follow a symbolic size) and its executor draws again each time it
runs, from the same generator in the same order as eager execution. Records that draw are
``effectful``: graph passes never merge, fold or drop them.
"""

from __future__ import annotations

import math

import numpy as np

from ..backend.device import Device
from .abstract import ValueSpec, bytes_of
from .base import Op


class BernoulliMask(Op):
    """A bool array of ``shape``: each element True with probability ``1 - p`` (a keep-mask),
    drawn from ``generator`` (the default generator when None) on ``device``.

    The draw is ``uniform[0, 1) >= p`` in float32, as ``dropout_mask`` has always drawn it, so a
    seed gives the same mask as before."""

    name = "bernoulli_mask"
    save_inputs = False
    differentiable = False
    effectful = True

    def forward(self, ctx, xp, *, shape, p, generator=None, device="cpu"):
        from ..backend.random import resolve_generator

        rng = resolve_generator(generator).backend_generator(Device(device))
        return rng.random(tuple(shape), dtype="float32") >= p

    def infer(self, *, shape, p, generator=None, device="cpu") -> ValueSpec:
        return ValueSpec(tuple(shape), np.dtype(bool), device)

    def cost(self, *, shape, p, generator=None, device="cpu") -> tuple:
        # one uniform draw and one comparison per element
        out = self.infer(shape=shape, p=p)
        count = math.prod(shape) if all(isinstance(s, int) for s in shape) else None
        return (count if count is not None else bytes_of(out), 0, bytes_of(out))


BERNOULLI_MASK = BernoulliMask()

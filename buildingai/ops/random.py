"""Random draws as ops, so a traced step draws fresh values on every run.

Every draw (``rand``, ``randn``, ``randint``, ``randperm``, ``normal``, ``bernoulli``,
``multinomial``, a dropout keep-mask, a distribution's noise) goes through dispatch as one of
these records. A static graph (``compile``, ``freeze``) then holds the draw as a node (its shape
may follow a symbolic size) and its executor draws again each time it runs, from the same
generator in the same order as eager execution: a traced step and an eager step seeded alike
draw the same numbers. Records that draw are ``effectful``: graph passes never merge, fold or
drop them.

Each record draws from ``generator`` (the default generator when None) on ``device``. A draw is
made in float64 and cast to ``dtype``, so a seed gives the same numbers in every dtype.
"""

from __future__ import annotations

import numpy as np

from ..backend.device import Device, device_of
from .abstract import ValueSpec, broadcast_shapes, bytes_of
from .base import Op
from .creation import FULL


def _stream(generator, device):
    """The NumPy (or CuPy) generator that draws for ``device``."""
    from ..backend.random import resolve_generator  # the backend's generators, read per call

    return resolve_generator(generator).backend_generator(Device(device))


class Draw(Op):
    """A draw that reads no tensor: ``shape``, ``dtype``, ``generator`` and ``device``
    attributes, one output of ``shape``."""

    save_inputs = False
    differentiable = False
    effectful = True

    def infer(self, *, shape, dtype, generator=None, device="cpu", **_) -> ValueSpec:
        return ValueSpec(tuple(shape), np.dtype(dtype), device)

    def cost(self, *, shape, dtype, generator=None, device="cpu", **_) -> tuple:
        # one draw per element (the element count is the byte count of a bool array)
        draws = bytes_of(ValueSpec(tuple(shape), np.dtype(bool), device))
        return (draws, 0, bytes_of(ValueSpec(tuple(shape), np.dtype(dtype), device)))


class Uniform(Draw):
    """``shape`` samples uniform in [0, 1) (``rand``)."""

    name = "rand"

    def forward(self, ctx, xp, *, shape, dtype, generator=None, device="cpu"):
        draws = _stream(generator, device).random(tuple(shape), dtype=np.float64)
        return draws.astype(dtype, copy=False)


class StandardNormal(Draw):
    """``shape`` standard normal samples (``randn``)."""

    name = "randn"

    def forward(self, ctx, xp, *, shape, dtype, generator=None, device="cpu"):
        draws = _stream(generator, device).standard_normal(tuple(shape), dtype=np.float64)
        return draws.astype(dtype, copy=False)


class Integers(Draw):
    """``shape`` integers uniform in [low, high) (``randint``)."""

    name = "randint"

    def forward(self, ctx, xp, *, shape, dtype, low, high, generator=None, device="cpu"):
        return _stream(generator, device).integers(low, high, size=tuple(shape), dtype=dtype)


class Permutation(Draw):
    """A random permutation of ``0 .. n - 1`` (``randperm``): ``shape`` is ``(n,)``."""

    name = "randperm"

    def forward(self, ctx, xp, *, shape, dtype, generator=None, device="cpu"):
        (n,) = shape
        return _stream(generator, device).permutation(n).astype(dtype, copy=False)


class BernoulliMask(Draw):
    """A bool array of ``shape``: each element True with probability ``1 - p`` (a keep-mask).

    The draw is ``uniform[0, 1) >= p`` in float32, as ``dropout_mask`` has always drawn it, so a
    seed gives the same mask as before."""

    name = "bernoulli_mask"

    def infer(self, *, shape, p, generator=None, device="cpu") -> ValueSpec:
        return ValueSpec(tuple(shape), np.dtype(bool), device)

    def cost(self, *, shape, p, generator=None, device="cpu") -> tuple:
        return super().cost(shape=shape, dtype=bool, device=device)

    def forward(self, ctx, xp, *, shape, p, generator=None, device="cpu"):
        return _stream(generator, device).random(tuple(shape), dtype="float32") >= p


def _zero_gradients(ctx) -> tuple:
    """A zero gradient for each tensor input, as PyTorch gives its non-reparameterised draws:
    the output requires grad, so a loss that uses it still reaches its other terms."""
    return tuple(
        FULL(shape=tuple(x.shape), fill_value=0, dtype=x.dtype, device=str(x.device))
        for x in ctx.inputs
    )


class Bernoulli(Op):
    """``bernoulli(p)``: 1 with probability ``p``, else 0, element-wise; same shape and dtype
    as ``p``. Its gradient is zero (as PyTorch's)."""

    name = "bernoulli"
    save_inputs = False
    effectful = True

    def forward(self, ctx, xp, p, *, generator=None):
        draws = xp.asarray(_stream(generator, device_of(p)).random(p.shape, dtype=np.float64))
        return (draws < p).astype(p.dtype)

    def backward(self, ctx, grad):
        return _zero_gradients(ctx)

    def infer(self, p, *, generator=None) -> ValueSpec:
        return p


class Normal(Op):
    """``normal(mean, std)``: one sample of N(mean, std^2) per element of their broadcast
    shape, drawn as ``mean + std * randn``. Its gradient is zero (as PyTorch's ``normal``;
    ``prob.Normal(...).rsample()`` is the reparameterised draw)."""

    name = "normal"
    save_inputs = False
    effectful = True

    def forward(self, ctx, xp, mean, std, *, generator=None):
        shape = xp.broadcast_shapes(mean.shape, std.shape)
        noise = _stream(generator, device_of(mean)).standard_normal(shape, dtype=np.float64)
        return (mean + std * xp.asarray(noise)).astype(mean.dtype, copy=False)

    def backward(self, ctx, grad):
        return _zero_gradients(ctx)

    def infer(self, mean, std, *, generator=None) -> ValueSpec:
        return ValueSpec(broadcast_shapes(mean.shape, std.shape), mean.dtype, mean.device)


UNIFORM, STANDARD_NORMAL, INTEGERS, PERMUTATION = (
    Uniform(),
    StandardNormal(),
    Integers(),
    Permutation(),
)
BERNOULLI_MASK, BERNOULLI, NORMAL = BernoulliMask(), Bernoulli(), Normal()

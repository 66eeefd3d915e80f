"""Neural-network primitives: softmax, log_softmax, dropout (with a visible mask), embedding."""

from __future__ import annotations

import numbers

from ..autograd.dispatch import apply
from ..autograd.tensor import Tensor
from ..backend.device import Device
from ..backend.random import Generator
from ..errors import ArgumentError, ShapeError
from ..ops import nn as ops
from ..ops.random import BERNOULLI_MASK
from ._common import check_scalar_axis, normalize_axis, pick
from .creation import as_tensor, astype
from .inplace import _in_place


def _softmax_like(op, x: Tensor, axis, dim, dtype) -> Tensor:
    axis = pick("axis", axis, "dim", dim, -1)
    if dtype is not None:
        x = astype(x, dtype)
    if x.ndim == 0:  # a scalar is a one-element distribution
        check_scalar_axis(axis, op.name)
        return apply(op, x.reshape(1), axis=0).reshape(())
    return apply(op, x, axis=normalize_axis(axis, x.ndim, op.name))


def softmax(x: Tensor, axis: int | None = None, *, dim: int | None = None, dtype=None) -> Tensor:
    """``exp(x) / sum(exp(x))`` along ``axis`` (alias ``dim``, default -1), numerically stable
    for logits of any size. x: any shape -> same shape, each slice along ``axis`` summing to 1.
    ``dtype`` casts the input first (e.g. compute in float32 from float16 logits)."""
    return _softmax_like(ops.SOFTMAX, x, axis, dim, dtype)


def log_softmax(
    x: Tensor, axis: int | None = None, *, dim: int | None = None, dtype=None
) -> Tensor:
    """``log(softmax(x))`` along ``axis`` (alias ``dim``, default -1), computed without forming
    ``softmax`` so that very negative log-probabilities stay finite and exact."""
    return _softmax_like(ops.LOG_SOFTMAX, x, axis, dim, dtype)


def _check_probability(p) -> float:
    if not isinstance(p, numbers.Real) or not 0.0 <= p <= 1.0:
        raise ArgumentError(
            f"[dropout] p must be a probability in [0, 1], got {p!r}",
            help="p is the probability of dropping an element (0 keeps everything)",
        )
    return float(p)


def dropout_mask(shape, p: float = 0.5, generator: Generator | None = None, device=None) -> Tensor:
    """A boolean keep-mask of ``shape``: each element is True with probability ``1 - p``.

    Drawn from ``generator`` (the default generator when None) on ``device`` (CPU when None),
    so the same seed gives the same mask.
    """
    p = _check_probability(p)
    device = Device("cpu") if device is None else Device(device)
    # an op, so a traced training step draws a fresh mask each time it runs
    return apply(BERNOULLI_MASK, shape=tuple(shape), p=p, generator=generator, device=str(device))


def dropout(
    input: Tensor,  # noqa: A002 - PyTorch's name
    p: float = 0.5,
    training: bool = True,
    inplace: bool = False,
    *,
    generator: Generator | None = None,
    mask: Tensor | None = None,
) -> Tensor:
    """Inverted dropout: zero each element with probability ``p`` and scale the survivors by
    ``1 / (1 - p)``, so the expected value is unchanged and evaluation needs no rescaling.

    input: any shape -> same shape. PyTorch's signature: ``inplace=True`` writes the result into
    ``input`` and returns ``input``. The keep-mask is drawn from ``generator`` (see ``dropout_mask``),
    or given as ``mask`` (bool, broadcastable to ``input``: ``(N, C, 1, 1)`` drops whole channels) to
    reuse or inspect one. ``p == 0`` or ``training=False`` return ``input`` itself; ``p == 1`` gives
    zeros (with a zero gradient).
    """
    p = _check_probability(p)
    if not training or (p == 0.0 and mask is None):
        return input
    if mask is None:
        mask = dropout_mask(input.shape, p, generator, input.device)
    elif not isinstance(mask, Tensor):
        mask = as_tensor(mask)
    scale = 0.0 if p == 1.0 else 1.0 / (1.0 - p)
    if inplace:
        return _dropout_in_place(input, mask, scale)
    return apply(ops.DROPOUT, input, mask, scale=scale)


def _dropout_in_place(x: Tensor, mask: Tensor, scale: float) -> Tensor:
    """``x`` with its values replaced by the dropout of them (``inplace=True``): recorded like
    the out-of-place op, as the tensor's in-place methods are."""

    def compute(previous: Tensor) -> Tensor:
        return apply(ops.DROPOUT, previous, mask, scale=scale)

    def write(array) -> None:  # nothing records or observes: scale the kept values in place
        array *= mask.array
        array *= scale

    return _in_place(x, "dropout(inplace=True)", (mask,), compute, write)


def embedding(indices, weight: Tensor, padding_idx: int | None = None) -> Tensor:
    """Look up rows of ``weight``: indices (any shape, integers), weight (num_embeddings, dim)
    -> indices.shape + (dim,).

    The gradient adds up over repeated indices; the row at ``padding_idx`` (negative counts from
    the end) receives none, so it stays as initialised (usually zeros).
    """
    if not isinstance(indices, Tensor):
        indices = as_tensor(indices)
    if padding_idx is not None:
        count = weight.shape[0] if weight.ndim else 0
        if not -count <= padding_idx < count:
            raise ShapeError(
                f"[embedding] padding_idx {padding_idx} is out of range for {count} embeddings",
                help=f"use an index in [{-count}, {count - 1}], or None",
            )
        padding_idx %= count
    return apply(ops.EMBEDDING, indices, weight, padding_idx=padding_idx)


__all__ = ["softmax", "log_softmax", "dropout", "dropout_mask", "embedding"]

TENSOR_METHODS = {"softmax": softmax, "log_softmax": log_softmax}

"""Connectionist temporal classification loss with PyTorch's signature: ``ctc_loss`` on
(T, N, C) or unbatched (T, C) log-probabilities, padded or concatenated targets."""

from __future__ import annotations

import numpy as np

from ...autograd.dispatch import apply
from ...autograd.tensor import Tensor
from ...functions.creation import as_tensor
from ...ops.ctc import CTC_LOSS
from .loss import _reduction

__all__ = ["ctc_loss"]


def _lengths(lengths, device) -> Tensor:
    """Lengths given as a Tensor, an int or a sequence of ints, as a Tensor (integers stay
    integers; a float Tensor reaches the op's dtype check)."""
    if isinstance(lengths, Tensor):
        return lengths
    return as_tensor(np.asarray(lengths, dtype=np.int64), device=device)


def ctc_loss(
    log_probs: Tensor,
    targets,
    input_lengths,
    target_lengths,
    blank: int = 0,
    reduction: str = "mean",
    zero_infinity: bool = False,
) -> Tensor:
    """The CTC loss: the negative log-likelihood of each target summed over its alignments.

    log_probs: (T, N, C) or (T, C) log-probabilities (``log_softmax`` over C); targets: (N, S)
    padded, 1-D (sum(target_lengths)) concatenated, or (S,) for one sample; input_lengths and
    target_lengths: (N,) (or one value) Tensors, ints or sequences of ints. ``reduction``:
    ``'none'`` -> (N,) (or () unbatched), ``'sum'``, or ``'mean'`` (each loss divided by its
    target length, at least 1, then averaged over the batch). ``zero_infinity`` turns the
    infinite loss of an input too short for its target into 0, with a zero gradient.
    """
    reduction = _reduction("ctc_loss", None, None, reduction)
    device = log_probs.device
    targets = targets if isinstance(targets, Tensor) else as_tensor(np.asarray(targets))
    input_lengths = _lengths(input_lengths, device)
    target_lengths = _lengths(target_lengths, device)
    unbatched = log_probs.ndim == 2
    if unbatched:  # one sample: a batch of one, squeezed at the end
        log_probs = log_probs.unsqueeze(1)
        targets = targets.unsqueeze(0)
        input_lengths = input_lengths.reshape(1)
        target_lengths = target_lengths.reshape(1)
    if targets.dtype.kind == "f":  # PyTorch reads float labels as integers
        targets = targets.astype(np.int64)
    loss = apply(
        CTC_LOSS,
        log_probs,
        targets,
        input_lengths,
        target_lengths,
        blank=int(blank),
        reduction=reduction,
        zero_infinity=bool(zero_infinity),
    )
    return loss.squeeze(0) if unbatched and reduction == "none" else loss

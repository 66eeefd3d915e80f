"""The CTC loss module: holds ``blank``, ``reduction`` and ``zero_infinity`` and calls
``nn.functional.ctc.ctc_loss``."""

from __future__ import annotations

from ..autograd.tensor import Tensor
from .functional.ctc import ctc_loss
from .loss import _Loss

__all__ = ["CTCLoss"]


class CTCLoss(_Loss):
    """Connectionist temporal classification loss (see ``ctc_loss``).

    log_probs (T, N, C) or (T, C); targets (N, S) padded or 1-D concatenated; input_lengths and
    target_lengths (N,). -> (N,) with ``reduction='none'``, else ().
    """

    def __init__(self, blank: int = 0, reduction: str = "mean", zero_infinity: bool = False):
        super().__init__(reduction=reduction)
        self.blank = blank
        self.zero_infinity = zero_infinity

    def forward(self, log_probs: Tensor, targets: Tensor, input_lengths, target_lengths) -> Tensor:
        return ctc_loss(
            log_probs,
            targets,
            input_lengths,
            target_lengths,
            self.blank,
            self.reduction,
            self.zero_infinity,
        )

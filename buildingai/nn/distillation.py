"""Knowledge distillation (Hinton, Vinyals and Dean, 2015): a student learns from a teacher's
softened outputs as well as from the labels."""

from __future__ import annotations

from ..autograd.tensor import Tensor
from . import functional as F
from .module import Module


def distillation_loss(
    student_logits: Tensor,
    teacher_logits: Tensor,
    targets: Tensor | None,
    temperature: float = 4.0,
    alpha: float = 0.9,
) -> Tensor:
    """``alpha * T**2 * KL(softmax(t / T) || softmax(s / T)) + (1 - alpha) * CE(s, targets)``.

    student_logits, teacher_logits: (N, C); targets: (N,) class indices (None with
    ``alpha=1``). The KL term is summed over classes and averaged over the batch (PyTorch's
    ``kl_div(..., reduction='batchmean')``); the cross-entropy is the batch mean at temperature
    1. ``T**2`` keeps the soft term's gradients on the scale of the hard term's as ``T`` grows.
    The teacher's logits are detached: the teacher gets no gradient from this loss.
    """
    if temperature <= 0:
        raise ValueError(f"[DistillationLoss] temperature must be > 0, got {temperature}")
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"[DistillationLoss] alpha must be in [0, 1], got {alpha}")
    if tuple(student_logits.shape) != tuple(teacher_logits.shape):
        raise ValueError(
            f"[DistillationLoss] student logits {tuple(student_logits.shape)} and teacher logits "
            f"{tuple(teacher_logits.shape)} must have the same shape (N, C)"
        )
    log_student = F.log_softmax(student_logits / temperature, dim=-1)
    log_teacher = F.log_softmax(teacher_logits.detach() / temperature, dim=-1)
    soft = F.kl_div(log_student, log_teacher, reduction="batchmean", log_target=True)
    loss = soft * (alpha * temperature**2)
    if alpha < 1.0:
        if targets is None:
            raise ValueError(
                "[DistillationLoss] targets are None but alpha < 1 needs them for the "
                "cross-entropy term; pass the labels, or alpha=1.0 for teacher-only training"
            )
        loss = loss + F.cross_entropy(student_logits, targets) * (1.0 - alpha)
    return loss


class DistillationLoss(Module):
    """``DistillationLoss(temperature, alpha)(student_logits, teacher_logits, targets)``: see
    ``distillation_loss`` for the formula and conventions (shapes (N, C), (N, C), (N,))."""

    def __init__(self, temperature: float = 4.0, alpha: float = 0.9) -> None:
        super().__init__()
        self.temperature = temperature
        self.alpha = alpha

    def forward(
        self, student_logits: Tensor, teacher_logits: Tensor, targets: Tensor | None = None
    ) -> Tensor:
        return distillation_loss(
            student_logits, teacher_logits, targets, self.temperature, self.alpha
        )

    def extra_repr(self) -> str:
        return f"temperature={self.temperature}, alpha={self.alpha}"

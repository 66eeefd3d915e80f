"""DistillationLoss against a PyTorch reference of Hinton's formula, in float64."""

from __future__ import annotations

import numpy as np
import pytest

import buildingai as bai
from buildingai import nn

torch = pytest.importorskip("torch")
F_torch = torch.nn.functional


def _reference(student, teacher, targets, temperature, alpha):
    soft = F_torch.kl_div(
        F_torch.log_softmax(student / temperature, dim=-1),
        F_torch.softmax(teacher / temperature, dim=-1),
        reduction="batchmean",
    )
    return alpha * temperature**2 * soft + (1 - alpha) * F_torch.cross_entropy(student, targets)


@pytest.mark.parametrize(("temperature", "alpha"), [(1.0, 0.5), (4.0, 0.9), (2.5, 0.0), (3.0, 1.0)])
def test_value_and_gradients_match_torch(temperature, alpha):
    rng = np.random.default_rng(0)
    student = rng.standard_normal((6, 10)) * 3
    teacher = rng.standard_normal((6, 10)) * 3
    targets = rng.integers(0, 10, 6)
    ours_s = bai.tensor(student, requires_grad=True)
    ours_t = bai.tensor(teacher, requires_grad=True)
    loss = nn.DistillationLoss(temperature, alpha)(ours_s, ours_t, bai.tensor(targets))
    loss.backward()
    theirs_s = torch.tensor(student, requires_grad=True)
    expected = _reference(
        theirs_s, torch.tensor(teacher), torch.tensor(targets), temperature, alpha
    )
    expected.backward()
    np.testing.assert_allclose(loss.item(), expected.item(), rtol=1e-12)
    np.testing.assert_allclose(ours_s.grad.numpy(), theirs_s.grad.numpy(), rtol=1e-10, atol=1e-14)
    assert ours_t.grad is None  # the teacher is detached


def test_equal_logits_leave_only_the_label_term():
    logits = bai.tensor(np.random.default_rng(1).standard_normal((4, 3)))
    targets = bai.tensor(np.array([0, 2, 1, 1]))
    loss = nn.DistillationLoss(temperature=2.0, alpha=0.25)(logits, logits, targets)
    expected = 0.75 * nn.functional.cross_entropy(logits, targets).item()
    np.testing.assert_allclose(loss.item(), expected, rtol=1e-12)


def test_bad_settings_name_the_values():
    logits = bai.zeros(2, 3)
    with pytest.raises(ValueError, match="temperature must be > 0, got 0"):
        nn.DistillationLoss(temperature=0)(logits, logits, bai.tensor(np.array([0, 1])))
    with pytest.raises(ValueError, match=r"\(2, 3\) and teacher logits \(2, 4\)"):
        nn.DistillationLoss()(logits, bai.zeros(2, 4), bai.tensor(np.array([0, 1])))
    with pytest.raises(ValueError, match="alpha=1.0 for teacher-only"):
        nn.DistillationLoss(alpha=0.5)(logits, logits, None)


def test_issue_spelling():
    temperature, alpha = 3.0, 0.7
    rng = np.random.default_rng(2)
    student_logits = bai.tensor(rng.standard_normal((5, 10)), requires_grad=True)
    teacher_logits = bai.tensor(rng.standard_normal((5, 10)))
    targets = bai.tensor(rng.integers(0, 10, 5))
    loss = nn.DistillationLoss(temperature, alpha)(student_logits, teacher_logits, targets)
    loss.backward()
    assert loss.item() > 0 and student_logits.grad.shape == (5, 10)

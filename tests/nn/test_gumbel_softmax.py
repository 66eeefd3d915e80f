"""``F.gumbel_softmax``: samples follow the categorical distribution of the logits, soft samples
sum to 1, hard ones are one-hot with the soft sample's gradient, and a compiled function draws
new noise on every call."""

from __future__ import annotations

import numpy as np

import buildingai as bai
import buildingai.nn.functional as F

PROBABILITIES = np.array([0.1, 0.2, 0.7])


def test_hard_samples_follow_the_logits_distribution():
    bai.manual_seed(0)
    logits = bai.tensor(np.log(np.tile(PROBABILITIES, (4000, 1))))
    samples = F.gumbel_softmax(logits, tau=0.5, hard=True).numpy()
    assert set(np.unique(samples)) == {0.0, 1.0}
    np.testing.assert_array_equal(samples.sum(1), 1.0)
    np.testing.assert_allclose(samples.mean(0), PROBABILITIES, atol=0.03)  # 3 standard errors


def test_soft_samples_sum_to_one_along_dim():
    bai.manual_seed(1)
    logits = bai.randn(3, 5, 4)
    for dim in (0, 1, -1):
        soft = F.gumbel_softmax(logits, tau=2.0, dim=dim).numpy()
        np.testing.assert_allclose(soft.sum(dim), 1.0, rtol=1e-6)
        assert (soft > 0).all()
    hard = F.gumbel_softmax(logits, hard=True, dim=1).numpy()
    np.testing.assert_array_equal(hard.sum(1), 1.0)


def test_hard_samples_take_the_soft_samples_gradient():
    """Straight through: the same noise (same seed) gives the same gradient hard or soft."""
    weights = bai.tensor(np.arange(12.0).reshape(4, 3))
    gradients = []
    for hard in (False, True):
        bai.manual_seed(2)
        logits = bai.tensor(np.log(np.tile(PROBABILITIES, (4, 1))), requires_grad=True)
        (F.gumbel_softmax(logits, tau=0.7, hard=hard) * weights).sum().backward()
        gradients.append(logits.grad.numpy())
    np.testing.assert_allclose(gradients[1], gradients[0], rtol=1e-12)


def test_a_compiled_function_draws_new_noise_each_call():
    sample = bai.compile(lambda x: F.gumbel_softmax(x, tau=0.3))
    x = bai.zeros(8, 5)
    assert not np.array_equal(sample(x).numpy(), sample(x).numpy())

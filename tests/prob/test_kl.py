"""kl_divergence closed forms against torch.distributions.kl_divergence in float64, with
gradients; the registry's lookup and its error for a missing pair."""

from __future__ import annotations

import numpy as np
import pytest

import buildingai as bai
from buildingai import prob
from buildingai.prob import kl_divergence, register_kl

torch = pytest.importorskip("torch")
D = torch.distributions

_SPD_P = np.array([[2.0, 0.3, -0.4], [0.3, 1.5, 0.2], [-0.4, 0.2, 1.0]])
_SPD_Q = np.array([[1.0, -0.2, 0.0], [-0.2, 0.8, 0.1], [0.0, 0.1, 2.5]])

# family -> (ours, torch's, parameters of p, parameters of q)
PAIRS = {
    "normal": (prob.Normal, D.Normal, [[0.3, -1.0], [0.5, 2.0]], [[0.0, 1.0], [1.0, 0.7]]),
    "laplace": (prob.Laplace, D.Laplace, [[0.3, -1.0], [0.5, 2.0]], [[0.0, 1.0], [1.0, 0.7]]),
    "uniform": (prob.Uniform, D.Uniform, [[0.2, -1.0], [0.5, 2.0]], [[0.0, -3.0], [1.0, 2.5]]),
    "gamma": (prob.Gamma, D.Gamma, [[0.5, 3.0], [1.0, 0.3]], [[2.0, 1.5], [0.7, 4.0]]),
    "beta": (prob.Beta, D.Beta, [[0.5, 3.0], [1.0, 0.3]], [[2.0, 1.5], [0.7, 4.0]]),
    "bernoulli": (
        lambda p: prob.Bernoulli(probs=p), lambda p: D.Bernoulli(probs=p),
        [[0.1, 0.6, 0.99]], [[0.5, 0.2, 0.9]],
    ),
    "categorical": (
        lambda p: prob.Categorical(logits=p), lambda p: D.Categorical(logits=p),
        [[[0.1, 0.6, -2.0], [1.0, 1.0, 1.0]]], [[[0.5, 0.2, 0.9], [3.0, -1.0, 0.0]]],
    ),
    "mvn": (
        lambda m, c: prob.MultivariateNormal(m, covariance_matrix=c),
        lambda m, c: D.MultivariateNormal(m, covariance_matrix=c),
        [[0.1, -0.2, 0.3], _SPD_P], [[1.0, 0.0, -1.0], _SPD_Q],
    ),
    "independent": (
        lambda a, b: prob.Independent(prob.Normal(a, b), 1),
        lambda a, b: D.Independent(D.Normal(a, b), 1),
        [[[0.3, -1.0], [2.0, 0.0]], [[0.5, 2.0], [0.1, 1.0]]],
        [[[0.0, 1.0], [0.0, 0.0]], [[1.0, 0.7], [1.0, 1.0]]],
    ),
}  # fmt: skip


@pytest.mark.parametrize("name", list(PAIRS))
def test_closed_form_and_gradients_match_torch(name):
    ours_family, torch_family, p_args, q_args = PAIRS[name]
    leaves = [np.asarray(a, dtype=np.float64) for a in p_args + q_args]
    ours = [bai.tensor(a, dtype=bai.float64, requires_grad=True) for a in leaves]
    theirs = [torch.tensor(a, requires_grad=True) for a in leaves]
    split = len(p_args)
    kl = kl_divergence(ours_family(*ours[:split]), ours_family(*ours[split:]))
    their_kl = D.kl_divergence(torch_family(*theirs[:split]), torch_family(*theirs[split:]))
    np.testing.assert_allclose(kl.numpy(), their_kl.detach().numpy(), rtol=1e-10, atol=1e-12)
    grads = bai.grad(kl.sum(), ours)
    their_grads = torch.autograd.grad(their_kl.sum(), theirs)
    for got, expected in zip(grads, their_grads):
        np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-9, atol=1e-10)


def test_uniform_outside_the_support_is_infinite():
    kl = kl_divergence(prob.Uniform(0.0, 2.0), prob.Uniform(0.5, 3.0))
    assert kl.item() == np.inf


def test_missing_pair_names_both_families_and_the_fix():
    with pytest.raises(
        NotImplementedError, match=r"(?s)KL\(Gamma \|\| Normal\).*register_kl\(Gamma, Normal\)"
    ):
        kl_divergence(prob.Gamma(1.0, 1.0), prob.Normal(0.0, 1.0))


def test_register_kl_adds_a_rule_that_subclasses_inherit():
    class Shifted(prob.Normal):
        pass

    calls = []

    @register_kl(Shifted, prob.Laplace)
    def _shifted_laplace(p, q):
        calls.append((p, q))
        return bai.tensor(1.5)

    assert kl_divergence(Shifted(0.0, 1.0), prob.Laplace(0.0, 1.0)).item() == 1.5
    # a subclass still finds the Normal-Normal rule
    np.testing.assert_allclose(
        kl_divergence(Shifted(0.0, 1.0), prob.Normal(1.0, 1.0)).numpy(), 0.5, rtol=1e-6
    )
    with pytest.raises(bai.ArgumentError, match="two Distribution subclasses"):
        register_kl(prob.Normal, int)

"""Parameters that carry a posterior: the issue's BayesianNN verbatim, the per-thread record
behind ``Parameter.kl_divergence()``, and BayesianLinear / BayesianConv2d against PyTorch."""

from __future__ import annotations

import threading
from types import SimpleNamespace

import numpy as np
import pytest

import buildingai
import buildingai as bai
from buildingai.nn import BayesianConv2d, BayesianLinear, Module, Parameter
from buildingai.prob import Distribution, sample

torch = pytest.importorskip("torch")
D = torch.distributions


# The issue's code, verbatim.
# fmt: off
class BayesianNN(Module):
    def __init__(self):
        self.w_mean = Parameter(buildingai.zeros(100, 10))
        self.w_std = Parameter(buildingai.ones(100, 10))
    def forward(self, x):
        w = sample(Distribution.Normal(self.w_mean, self.w_std))
        return x @ w
    def elbo(self, data):
        outputs = self(data.inputs)
        log_lik = Distribution.Normal(outputs, 1.0).log_prob(data.labels)
        kl = sum(p.kl_divergence() for p in self.parameters())
        return log_lik - kl
# fmt: on


def test_the_issue_snippet_runs_and_matches_torch():
    model = BayesianNN().double()
    rng = np.random.default_rng(0)
    mean, std = rng.normal(0, 0.3, (100, 10)), rng.uniform(0.2, 1.5, (100, 10))
    with bai.no_grad():
        model.w_mean.copy_(bai.tensor(mean))
        model.w_std.copy_(bai.tensor(std))
    data = SimpleNamespace(
        inputs=bai.tensor(rng.normal(size=(8, 100))), labels=bai.tensor(rng.normal(size=(8, 10)))
    )
    bai.manual_seed(11)
    elbo = model.elbo(data)
    bai.manual_seed(11)
    noise = bai.randn(100, 10, dtype=bai.float64).numpy()  # the draw sample() made

    t_mean = torch.tensor(mean, requires_grad=True)
    t_std = torch.tensor(std, requires_grad=True)
    w = t_mean + t_std * torch.tensor(noise)
    outputs = torch.tensor(data.inputs.numpy()) @ w
    log_lik = D.Normal(outputs, 1.0).log_prob(torch.tensor(data.labels.numpy()))
    kl = D.kl_divergence(D.Normal(t_mean, t_std), D.Normal(0.0, 1.0)).sum()
    expected = log_lik - kl
    np.testing.assert_allclose(elbo.numpy(), expected.detach().numpy(), rtol=1e-10)
    assert model.w_std.kl_divergence().item() == 0.0  # the KL is counted once, on w_mean
    np.testing.assert_allclose(model.w_mean.kl_divergence().item(), kl.item(), rtol=1e-12)

    grads = bai.grad(elbo.sum(), [model.w_mean, model.w_std])
    expected_grads = torch.autograd.grad(expected.sum(), [t_mean, t_std])
    for got, want in zip(grads, expected_grads):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-9, atol=1e-10)


def test_a_parameter_without_a_distribution_has_zero_kl():
    free = Parameter(bai.ones(3))
    assert free.kl_divergence().item() == 0.0 and free.kl_divergence().shape == ()


def test_posterior_built_through_a_transform_is_found_and_the_latest_sample_wins():
    mu = Parameter(bai.zeros(4, dtype=bai.float64))
    rho = Parameter(bai.full((4,), -1.0, dtype=bai.float64))
    std = bai.softplus(rho)
    sample(Distribution.Normal(mu, std))
    first = mu.kl_divergence().item()
    expected = D.kl_divergence(
        D.Normal(0.0, torch.nn.functional.softplus(torch.tensor(-1.0))), D.Normal(0.0, 1.0)
    )
    assert first == pytest.approx(4 * expected.item())
    assert rho.kl_divergence().item() == 0.0
    # a new sample replaces the record: here with a prior of its own
    prior = Distribution.Normal(bai.zeros(4, dtype=bai.float64), 2.0)
    sample(Distribution.Normal(mu, std), prior=prior)
    expected = D.kl_divergence(
        D.Normal(0.0, torch.nn.functional.softplus(torch.tensor(-1.0))), D.Normal(0.0, 2.0)
    )
    assert mu.kl_divergence().item() == pytest.approx(4 * expected.item())


def test_records_are_per_thread():
    mu = Parameter(bai.zeros(3, dtype=bai.float64))
    barrier = threading.Barrier(2, timeout=10)
    results = {}

    def worker(std):
        sample(Distribution.Normal(mu, bai.full((3,), std, dtype=bai.float64)))
        barrier.wait()  # both threads have sampled before either reads
        results[std] = mu.kl_divergence().item()

    threads = [threading.Thread(target=worker, args=(s,)) for s in (0.5, 2.0)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=10)
    for std in (0.5, 2.0):
        expected = 3 * D.kl_divergence(D.Normal(0.0, std), D.Normal(0.0, 1.0)).item()
        assert results[std] == pytest.approx(expected)
    assert mu.kl_divergence().item() == 0.0  # nothing was sampled on this thread


def test_bayesian_linear_samples_its_weights_and_its_kl_matches_torch():
    bai.manual_seed(0)
    layer = BayesianLinear(3, 2, rho_init=-1.0).double()
    x = bai.tensor(np.random.default_rng(1).normal(size=(5, 3)))
    bai.manual_seed(3)
    out = layer(x)
    bai.manual_seed(3)
    bias_noise = bai.randn(2, dtype=bai.float64).numpy()  # forward draws the bias first
    weight_noise = bai.randn(2, 3, dtype=bai.float64).numpy()

    t = {name: torch.tensor(p.numpy(), requires_grad=True) for name, p in layer.named_parameters()}
    softplus = torch.nn.functional.softplus
    weight = t["weight_mu"] + softplus(t["weight_rho"]) * torch.tensor(weight_noise)
    bias = t["bias_mu"] + softplus(t["bias_rho"]) * torch.tensor(bias_noise)
    expected = torch.tensor(x.numpy()) @ weight.T + bias
    np.testing.assert_allclose(out.numpy(), expected.detach().numpy(), rtol=1e-10)

    kl = layer.kl_divergence()
    t_kl = sum(
        D.kl_divergence(D.Normal(t[n + "_mu"], softplus(t[n + "_rho"])), D.Normal(0.0, 1.0)).sum()
        for n in ("weight", "bias")
    )
    np.testing.assert_allclose(kl.item(), t_kl.item(), rtol=1e-10)
    recorded = sum(p.kl_divergence() for p in layer.parameters())
    np.testing.assert_allclose(recorded.item(), kl.item(), rtol=1e-12)
    loss = out.sum() + kl
    grads = bai.grad(loss, list(layer.parameters()))
    t_grads = torch.autograd.grad(expected.sum() + t_kl, list(t.values()))
    for got, want in zip(grads, t_grads):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-9, atol=1e-12)


def test_bayesian_conv2d_shapes_kl_and_spread():
    bai.manual_seed(0)
    layer = BayesianConv2d(2, 3, 3, padding=1, prior_std=0.5, rho_init=-2.0)
    x = bai.randn(2, 2, 6, 6)
    first, second = layer(x), layer(x)
    assert first.shape == (2, 3, 6, 6)
    assert not np.allclose(first.numpy(), second.numpy())  # fresh weights on every call
    softplus = torch.nn.functional.softplus
    expected = sum(
        D.kl_divergence(
            D.Normal(
                torch.tensor(getattr(layer, n + "_mu").numpy()).double(),
                softplus(torch.tensor(getattr(layer, n + "_rho").numpy()).double()),
            ),
            D.Normal(0.0, 0.5),
        ).sum()
        for n in ("weight", "bias")
    )
    np.testing.assert_allclose(layer.kl_divergence().item(), expected.item(), rtol=1e-5)
    with pytest.raises(bai.ArgumentError, match="divisible by groups=2"):
        BayesianConv2d(3, 4, 3, groups=2)
    with pytest.raises(bai.ArgumentError, match="prior_std must be positive, got 0"):
        BayesianLinear(2, 2, prior_std=0)

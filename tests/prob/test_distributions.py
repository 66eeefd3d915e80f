"""Every distribution against torch.distributions in float64: log_prob, entropy, mean,
variance, shapes, reparameterised gradients (with the noise fixed), sample moments with a
seeded generator, and argument validation."""

from __future__ import annotations

import numpy as np
import pytest

import buildingai as bai
from buildingai.prob import (
    Bernoulli,
    Beta,
    Categorical,
    Distribution,
    Gamma,
    Independent,
    Laplace,
    MultivariateNormal,
    Normal,
    Uniform,
    sample,
)

torch = pytest.importorskip("torch")
D = torch.distributions


def _pair(array):
    """The same float64 values as a buildingai leaf and a torch leaf, both requiring grad."""
    array = np.asarray(array, dtype=np.float64)
    return (
        bai.tensor(array, dtype=bai.float64, requires_grad=True),
        torch.tensor(array, requires_grad=True),
    )


def _close(ours, theirs, rtol=1e-10, atol=1e-12):
    theirs = theirs.detach().numpy() if isinstance(theirs, torch.Tensor) else theirs
    np.testing.assert_allclose(np.asarray(ours.numpy()), theirs, rtol=rtol, atol=atol)


_SPD = np.array([[2.0, 0.3, -0.4], [0.3, 1.5, 0.2], [-0.4, 0.2, 1.0]])
_TRIL = np.linalg.cholesky(_SPD)


# (name, our builder, torch builder, parameter arrays, values for log_prob)
CASES = {
    "normal": (
        lambda a, b: Normal(a, b), lambda a, b: D.Normal(a, b),
        [[0.3, -1.0, 2.0], [0.5, 2.0, 0.1]], [1.0, 2.0, 1.9],
    ),
    "uniform": (
        lambda a, b: Uniform(a, b), lambda a, b: D.Uniform(a, b),
        [[0.0, -1.0, 2.0], [1.0, 3.0, 2.5]], [0.5, 2.0, 2.2],
    ),
    "laplace": (
        lambda a, b: Laplace(a, b), lambda a, b: D.Laplace(a, b),
        [[0.3, -1.0, 2.0], [0.5, 2.0, 0.1]], [1.0, -3.0, 2.05],
    ),
    "gamma": (
        lambda a, b: Gamma(a, b), lambda a, b: D.Gamma(a, b),
        [[0.5, 2.0, 7.5], [1.0, 0.3, 4.0]], [0.2, 3.0, 2.0],
    ),
    "beta": (
        lambda a, b: Beta(a, b), lambda a, b: D.Beta(a, b),
        [[0.5, 2.0, 7.5], [1.5, 0.3, 4.0]], [0.2, 0.9, 0.6],
    ),
    "bernoulli_probs": (
        lambda p: Bernoulli(probs=p), lambda p: D.Bernoulli(probs=p),
        [[0.1, 0.5, 0.93]], [1.0, 0.0, 1.0],
    ),
    "bernoulli_logits": (
        lambda p: Bernoulli(logits=p), lambda p: D.Bernoulli(logits=p),
        [[-3.0, 0.5, 40.0]], [1.0, 0.0, 0.0],
    ),
    "categorical_probs": (
        lambda p: Categorical(probs=p), lambda p: D.Categorical(probs=p),
        [[[0.2, 0.5, 0.3], [1.0, 2.0, 1.0]]], [2, 0],
    ),
    "categorical_logits": (
        lambda p: Categorical(logits=p), lambda p: D.Categorical(logits=p),
        [[[0.2, -1.5, 3.0], [1.0, 2.0, 1.0]]], [1, 2],
    ),
    "mvn_full": (
        lambda m, c: MultivariateNormal(m, covariance_matrix=c),
        lambda m, c: D.MultivariateNormal(m, covariance_matrix=c),
        [[0.1, -0.2, 0.3], _SPD], [[1.0, 0.5, -0.5], [0.0, 0.0, 0.0]],
    ),
    "mvn_tril": (
        lambda m, s: MultivariateNormal(m, scale_tril=s),
        lambda m, s: D.MultivariateNormal(m, scale_tril=s),
        [[[0.1, -0.2, 0.3], [1.0, 0.0, 0.0]], _TRIL], [[1.0, 0.5, -0.5], [0.0, 0.0, 0.0]],
    ),
    "mvn_diag": (
        lambda m, v: MultivariateNormal(m, covariance_diag=v),
        lambda m, v: D.MultivariateNormal(m, covariance_matrix=torch.diag_embed(v)),
        [[0.1, -0.2, 0.3], [0.5, 2.0, 1.5]], [[1.0, 0.5, -0.5]],
    ),
    "independent_normal": (
        lambda a, b: Independent(Normal(a, b), 1),
        lambda a, b: D.Independent(D.Normal(a, b), 1),
        [[[0.3, -1.0], [2.0, 0.0]], [[0.5, 2.0], [0.1, 1.0]]], [[1.0, 2.0], [0.5, 0.5]],
    ),
}  # fmt: skip


def _build(name):
    ours_make, torch_make, params, value = CASES[name]
    pairs = [_pair(p) for p in params]
    ours = ours_make(*(p[0] for p in pairs))
    theirs = torch_make(*(p[1] for p in pairs))
    return ours, theirs, pairs, value


@pytest.mark.parametrize("name", list(CASES))
def test_log_prob_entropy_shapes_and_their_gradients_match_torch(name):
    ours, theirs, pairs, value = _build(name)
    assert ours.batch_shape == tuple(theirs.batch_shape)
    assert ours.event_shape == tuple(theirs.event_shape)
    is_index = name.startswith("categorical")
    our_value = bai.tensor(np.asarray(value), dtype=bai.int64 if is_index else bai.float64)
    their_value = torch.tensor(value, dtype=torch.int64 if is_index else torch.float64)
    log_prob, their_log_prob = ours.log_prob(our_value), theirs.log_prob(their_value)
    _close(log_prob, their_log_prob)
    entropy, their_entropy = ours.entropy(), theirs.entropy()
    _close(entropy, their_entropy)
    total = log_prob.sum() + entropy.sum()
    their_total = their_log_prob.sum() + their_entropy.sum()
    grads = bai.grad(total, [p[0] for p in pairs])
    their_grads = torch.autograd.grad(their_total, [p[1] for p in pairs])
    for got, expected in zip(grads, their_grads):
        _close(got, expected, rtol=1e-9, atol=1e-10)
    if not is_index:
        _close(ours.mean, theirs.mean)
        _close(ours.variance, theirs.variance)


class _FixedNoise:
    """A generator stand-in whose draws are fixed arrays: rsample then uses known noise."""

    def __init__(self, normal=None, uniform=None):
        self.normal, self.uniform = normal, uniform

    def backend_generator(self, device):
        return self

    def standard_normal(self, shape, dtype=np.float64):
        return self.normal.reshape(shape).astype(dtype)

    def random(self, shape, dtype=np.float64):
        return self.uniform.reshape(shape).astype(dtype)


@pytest.mark.parametrize(
    "name", ["normal", "laplace", "uniform", "mvn_full", "mvn_tril", "independent_normal"]
)
def test_rsample_gradients_with_fixed_noise_match_torch(name, monkeypatch):
    ours, theirs, pairs, _ = _build(name)
    shape = (4,) + tuple(theirs.batch_shape) + tuple(theirs.event_shape)
    rng = np.random.default_rng(3)
    normal, uniform = rng.standard_normal(shape), rng.uniform(0.05, 0.95, size=shape)
    import buildingai.backend.random as module  # where the draw records find their generator

    monkeypatch.setattr(module, "resolve_generator", lambda generator: _FixedNoise(normal, uniform))
    drawn = ours.rsample((4,))
    if name == "uniform":
        expected = theirs.low + (theirs.high - theirs.low) * torch.tensor(uniform)
    elif name == "laplace":
        u = torch.tensor(uniform) * 2 - 1
        expected = theirs.loc - theirs.scale * u.sign() * torch.log1p(-u.abs())
    elif name.startswith("mvn"):
        expected = theirs.loc + (theirs.scale_tril @ torch.tensor(normal).unsqueeze(-1)).squeeze(-1)
    else:
        base = theirs.base_dist if name.startswith("indep") else theirs
        expected = base.loc + base.scale * torch.tensor(normal)
    _close(drawn, expected)
    weights = np.random.default_rng(4).standard_normal(shape)
    grads = bai.grad((drawn * bai.tensor(weights)).sum(), [p[0] for p in pairs])
    their_grads = torch.autograd.grad(
        (expected * torch.tensor(weights)).sum(), [p[1] for p in pairs]
    )
    for got, want in zip(grads, their_grads):
        _close(got, want, rtol=1e-9, atol=1e-10)


def test_gamma_rsample_gradient_is_the_implicit_one_torch_uses():
    concentration, their_concentration = _pair([0.3, 1.0, 2.5, 9.0, 60.0])
    generator = bai.Generator(seed=1)
    drawn = Gamma(concentration, 1.0).rsample((200,), generator=generator)  # (200, 5)
    weights = np.random.default_rng(0).standard_normal(drawn.shape)
    (ours,) = bai.grad((drawn * bai.tensor(weights)).sum(), [concentration])
    z = torch.tensor(drawn.numpy())
    alpha = their_concentration.detach().expand_as(z)
    # the gradient record standard_gamma_slope against PyTorch's own implicit gradient
    slope = torch._standard_gamma_grad(alpha, z)
    expected = (slope * torch.tensor(weights)).sum(0)
    _close(ours, expected, rtol=2e-3, atol=1e-6)  # PyTorch's approximation is good to ~1e-4


def test_gamma_and_beta_reparameterised_gradients_are_unbiased():
    # d/da E[x] by the average pathwise gradient: Gamma mean a/b, Beta mean c1/(c1+c0)
    generator = bai.Generator(seed=2)
    a = bai.tensor(2.0, dtype=bai.float64, requires_grad=True)
    b = bai.tensor(3.0, dtype=bai.float64, requires_grad=True)
    gamma_draw = Gamma(a, b).rsample((20000,), generator=generator).mean()
    grads = bai.grad(gamma_draw, [a, b])
    assert grads[0].item() == pytest.approx(1 / 3, rel=0.03)
    assert grads[1].item() == pytest.approx(-2 / 9, rel=0.03)
    beta_draw = Beta(a, b).rsample((20000,), generator=generator).mean()
    grads = bai.grad(beta_draw, [a, b])
    assert grads[0].item() == pytest.approx(3 / 25, rel=0.05)
    assert grads[1].item() == pytest.approx(-2 / 25, rel=0.05)


@pytest.mark.parametrize("name", list(CASES))
def test_sample_moments_with_a_seeded_generator(name):
    ours, theirs, _, _ = _build(name)
    generator = bai.Generator(seed=5)
    draws = ours.sample((40000,), generator=generator)
    assert not draws.requires_grad
    assert draws.shape == (40000,) + ours.batch_shape + ours.event_shape
    again = ours.sample((40000,), generator=bai.Generator(seed=5))
    np.testing.assert_array_equal(draws.numpy(), again.numpy())
    values = draws.numpy().astype(np.float64)
    if name.startswith("categorical"):
        counts = np.stack([(values == k).mean(0) for k in range(3)], axis=-1)
        np.testing.assert_allclose(counts, theirs.probs.detach().numpy(), atol=0.01)
        return
    mean, std = theirs.mean.detach().numpy(), theirs.stddev.detach().numpy()
    np.testing.assert_allclose(values.mean(0), mean, atol=0.03 * std.max() + 1e-3)
    np.testing.assert_allclose(values.std(0), std, rtol=0.03, atol=1e-3)


def test_distribution_names_and_sample_function():
    assert Distribution.Normal is Normal and Distribution.MultivariateNormal is MultivariateNormal
    mean = bai.zeros(3, requires_grad=True)
    draw = sample(Distribution.Normal(mean, 1.0))
    assert draw.requires_grad and draw.shape == (3,)
    assert sample(Bernoulli(probs=0.5), (5,)).shape == (5,)


@pytest.mark.parametrize(
    "build, message",
    [
        (lambda: Normal(0.0, -1.0), r"\[Normal\] scale must be positive; got -1"),
        (lambda: Normal(bai.zeros(2), bai.ones(3)), r"do not broadcast together: loc \(2,\), scale \(3,\)"),
        (lambda: Uniform(1.0, 0.0), r"\[Uniform\] high - low must be positive"),
        (lambda: Gamma(0.0, 1.0), r"\[Gamma\] concentration must be positive; got 0"),
        (lambda: Beta(1.0, -2.0), r"\[Beta\] concentration0 must be positive; got -2"),
        (lambda: Bernoulli(probs=1.5), r"\[Bernoulli\] probs must be in \[0, 1\]; got 1.5"),
        (lambda: Bernoulli(), r"give exactly one of probs and logits"),
        (lambda: Categorical(probs=[0.5, -0.1]), r"probs must be non-negative"),
        (lambda: MultivariateNormal(bai.zeros(2), covariance_matrix=-bai.eye(2)), r"not positive definite"),
        (lambda: MultivariateNormal(bai.zeros(2), scale_tril=bai.eye(3)), r"must be \(\.\.\., 2, 2\)"),
        (lambda: Independent(Normal(0.0, 1.0), 1), r"reinterpreted_batch_ndims=1 but the base has batch shape \(\)"),
        (lambda: Categorical(probs=[0.5, 0.5]).log_prob(2), r"an integer category in \[0, 2\)"),
    ],
)  # fmt: skip
def test_invalid_arguments_are_named_with_their_values(build, message):
    with pytest.raises((bai.BuildingAIError, ValueError), match=message):
        build()


def test_rsample_is_refused_with_the_alternative_for_discrete_families():
    with pytest.raises(NotImplementedError, match="score-function estimator"):
        Bernoulli(probs=0.3).rsample()

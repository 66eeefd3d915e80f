"""Random draws in static graphs: every draw is an effectful record, so a compiled step and a
frozen graph draw fresh values on every run, from the generator the user seeded, equal to the
eager run's draws for the same seed."""

import numpy as np
import pytest

import buildingai
import buildingai as bai
import buildingai.nn.functional as F
from buildingai import TensorSpec, float32, nn, prob

STEPS = 5


class VAE(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.encoder = nn.Linear(8, 2 * 3)
        self.decoder = nn.Linear(3, 8)

    def forward(self, x):
        mu, log_var = self.encoder(x).chunk(2, axis=-1)
        z = prob.Normal(mu, (0.5 * log_var).exp()).rsample()
        return self.decoder(z), mu, log_var


def vae_losses(compiled: bool) -> list:
    bai.manual_seed(0)
    model = VAE()
    optimizer = bai.optim.Adam(model.parameters(), lr=1e-2)

    def step(x):
        optimizer.zero_grad()
        reconstruction, mu, log_var = model(x)
        kl = -0.5 * (1 + log_var - mu * mu - log_var.exp()).sum(axis=-1).mean()
        loss = F.mse_loss(reconstruction, x) + kl
        loss.backward()
        optimizer.step()
        return loss

    run = buildingai.compile(step, [TensorSpec((None, 8), float32)]) if compiled else step
    x = bai.tensor(np.random.default_rng(1).standard_normal((4, 8)).astype(np.float32))
    return [run(x).item() for _ in range(STEPS)]


def noise_losses(compiled: bool) -> list:
    bai.manual_seed(0)
    model = nn.Linear(6, 1)
    optimizer = bai.optim.SGD(model.parameters(), lr=0.0)  # fixed weights: only the noise moves

    def step(x):
        optimizer.zero_grad()
        noisy = x + 0.1 * bai.randn(*x.shape)
        loss = model(noisy).pow(2).mean()
        loss.backward()
        optimizer.step()
        return loss

    run = buildingai.compile(step, [TensorSpec((None, 6), float32)]) if compiled else step
    x = bai.ones(5, 6)
    return [run(x).item() for _ in range(STEPS)]


@pytest.mark.parametrize("losses", [vae_losses, noise_losses], ids=["vae", "noise"])
def test_a_compiled_step_draws_fresh_noise_each_step_as_eager_does(losses):
    eager, compiled = losses(False), losses(True)
    assert compiled == eager  # bit for bit: the same draws, in the same order
    assert len(set(compiled)) == STEPS  # and a new draw at every step


DRAWS = {
    "rand": lambda x: bai.rand(x.shape[0], 3),
    "randn": lambda x: bai.randn(x.shape[0], 3) + x,
    "randint": lambda x: bai.randint(0, 100, (4,)),
    "randperm": lambda x: bai.randperm(7),
    "normal": lambda x: bai.normal(x, 1.0),
    "bernoulli": lambda x: bai.bernoulli(x.sigmoid()),
    "multinomial": lambda x: bai.multinomial(x.exp(), 2),
    "Normal.rsample": lambda x: prob.Normal(x, 1.0).rsample(),
    "Normal.sample": lambda x: prob.Normal(x, 1.0).sample((2,)),
    "Gamma.rsample": lambda x: prob.Gamma(x.exp(), 1.0).rsample(),
    "Beta.sample": lambda x: prob.Beta(x.exp(), 2.0).sample(),
    "Bernoulli.sample": lambda x: prob.Bernoulli(logits=x).sample(),
    "Categorical.sample": lambda x: prob.Categorical(logits=x).sample(),
    "Uniform.rsample": lambda x: prob.Uniform(x, x + 1).rsample(),
    "Laplace.rsample": lambda x: prob.Laplace(x, 1.0).rsample(),
}


@pytest.mark.parametrize("name", DRAWS)
def test_a_frozen_graph_draws_again_on_every_call_as_eager_does(name):
    draw = DRAWS[name]
    x = bai.tensor(np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3))
    bai.manual_seed(3)
    eager = [draw(x).numpy() for _ in range(3)]
    static = bai.freeze(draw, [TensorSpec((2, 3), float32)])
    bai.manual_seed(3)
    frozen = [static(x).numpy() for _ in range(3)]
    for a, b in zip(eager, frozen):
        np.testing.assert_array_equal(a, b)
    assert not all(np.array_equal(eager[0], e) for e in eager[1:]), "the draws never changed"


def test_an_explicit_generator_is_the_one_a_frozen_graph_draws_from():
    generator = bai.Generator(seed=11)
    static = bai.freeze(lambda x: x + bai.randn(2, 3, generator=generator),
                        [TensorSpec((2, 3), float32)])  # fmt: skip
    x = bai.zeros(2, 3)
    generator.manual_seed(11)
    first = static(x).numpy()
    generator.manual_seed(11)
    np.testing.assert_array_equal(static(x).numpy(), first)
    np.testing.assert_array_equal(
        first, bai.randn(2, 3, generator=generator.manual_seed(11)).numpy()
    )


def test_a_frozen_graph_checks_distribution_parameters_on_every_call():
    """The parameter checks are ``require`` records: a graph traced on a valid scale still
    refuses a negative one later, naming the family and the value (freeze traces on random
    inputs, so the scale is made positive inside the call and negative by a later input)."""

    def draw(log_scale, shift):
        return prob.Normal(0.0, log_scale.exp() + shift).rsample()

    static = bai.freeze(draw, [TensorSpec((3,), float32), TensorSpec((3,), float32)])
    static(bai.zeros(3), bai.zeros(3))
    with pytest.raises(
        bai.errors.ArgumentError, match=r"\[Normal\] scale must be positive; got -2"
    ):
        static(bai.zeros(3), bai.tensor([0.0, -3.0, 0.0]))

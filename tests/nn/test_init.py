"""nn.init: statistics of each initialiser on large tensors, fans and gains against PyTorch,
reproducibility through generators, and error messages."""

from __future__ import annotations

import math

import numpy as np
import pytest

import buildingai as bai
from buildingai.nn import Linear, Parameter, init

torch = pytest.importorskip("torch")

LARGE = (400, 500)  # 200k samples: the standard error of a std estimate is about 0.2 %


def _stats(tensor):
    values = tensor.numpy().astype(np.float64)
    return values.mean(), values.std()


@pytest.mark.parametrize(
    "shape",
    [(3, 4), (5, 3, 7), (8, 4, 3, 3), (2, 3, 2, 2, 2), (1, 1), (0, 4), (6, 0, 3)],
)
def test_fans_match_pytorch(shape):
    ours = init._calculate_fan_in_and_fan_out(bai.zeros(*shape))
    assert ours == torch.nn.init._calculate_fan_in_and_fan_out(torch.zeros(shape))
    assert init.calculate_fan_in_and_fan_out(bai.zeros(*shape)) == ours


def test_fans_need_two_dimensions():
    with pytest.raises(ValueError, match=r"fewer than 2 dimensions \(shape \(5,\)\)"):
        init._calculate_fan_in_and_fan_out(bai.zeros(5))


@pytest.mark.parametrize(
    "nonlinearity, param",
    [("linear", None), ("conv2d", None), ("conv_transpose3d", None), ("sigmoid", None),
     ("tanh", None), ("relu", None), ("leaky_relu", None), ("leaky_relu", 0.2),
     ("leaky_relu", 1), ("selu", None)],
)  # fmt: skip
def test_gains_match_pytorch(nonlinearity, param):
    expected = torch.nn.init.calculate_gain(nonlinearity, param)
    assert init.calculate_gain(nonlinearity, param) == pytest.approx(expected)


def test_gain_errors():
    with pytest.raises(ValueError, match="unsupported nonlinearity 'swish'"):
        init.calculate_gain("swish")
    with pytest.raises(ValueError, match="negative_slope True is not a number"):
        init.calculate_gain("leaky_relu", True)


def test_uniform_and_normal_statistics():
    x = bai.empty(*LARGE)
    assert init.uniform_(x, -1.0, 3.0) is x
    values = x.numpy()
    assert values.min() >= -1.0 and values.max() < 3.0
    mean, std = _stats(x)
    assert mean == pytest.approx(1.0, abs=0.02) and std == pytest.approx(
        4 / math.sqrt(12), rel=0.01
    )
    init.normal_(x, mean=2.0, std=0.5)
    mean, std = _stats(x)
    assert mean == pytest.approx(2.0, abs=0.01) and std == pytest.approx(0.5, rel=0.01)


def _truncated_moments(mean, std, a, b):
    """Mean and standard deviation of N(mean, std**2) conditioned on [a, b]."""
    alpha, beta = (a - mean) / std, (b - mean) / std
    pdf = lambda z: math.exp(-0.5 * z * z) / math.sqrt(2 * math.pi)
    cdf = lambda z: 0.5 * (1 + math.erf(z / math.sqrt(2)))
    mass = cdf(beta) - cdf(alpha)
    shift = (pdf(alpha) - pdf(beta)) / mass
    variance = 1 + (alpha * pdf(alpha) - beta * pdf(beta)) / mass - shift**2
    return mean + std * shift, std * math.sqrt(variance)


@pytest.mark.parametrize(
    "mean, std, a, b", [(0.0, 1.0, -2.0, 2.0), (1.0, 0.02, 0.99, 1.5), (0.0, 0.02, -2.0, 2.0)]
)
def test_trunc_normal_statistics_match_the_truncated_distribution(mean, std, a, b):
    x = bai.empty(*LARGE)
    init.trunc_normal_(x, mean=mean, std=std, a=a, b=b)
    values = x.numpy()
    assert values.min() >= a and values.max() <= b
    expected_mean, expected_std = _truncated_moments(mean, std, a, b)
    assert _stats(x)[0] == pytest.approx(expected_mean, abs=0.01 * expected_std)
    assert _stats(x)[1] == pytest.approx(expected_std, rel=0.01)


def test_trunc_normal_with_zero_std_is_the_clipped_mean():
    x = bai.empty(3, 3)
    init.trunc_normal_(x, mean=0.3, std=0.0)
    assert (x.numpy() == np.float32(0.3)).all()
    init.trunc_normal_(x, mean=5.0, std=0.0)
    assert (x.numpy() == 2.0).all()


def test_trunc_normal_errors():
    with pytest.raises(ValueError, match="needs a < b"):
        init.trunc_normal_(bai.empty(3), a=1.0, b=0.0)
    with pytest.raises(ValueError, match="needs std >= 0"):
        init.trunc_normal_(bai.empty(3), std=-1.0)
    with pytest.raises(ValueError, match=r"holds only .* choose \[a, b\] closer to the mean"):
        init.trunc_normal_(bai.empty(3), a=10.0, b=11.0)


@pytest.mark.parametrize("shape", [(300, 700), (64, 32, 3, 3)])
def test_xavier_statistics(shape):
    x = bai.empty(*shape)
    fan_in, fan_out = init._calculate_fan_in_and_fan_out(x)
    expected = 2.0 * math.sqrt(2.0 / (fan_in + fan_out))
    init.xavier_uniform_(x, gain=2.0)
    assert np.abs(x.numpy()).max() <= math.sqrt(3) * expected
    assert _stats(x)[1] == pytest.approx(expected, rel=0.02)
    init.xavier_normal_(x, gain=2.0)
    assert _stats(x)[0] == pytest.approx(0.0, abs=expected * 0.02)
    assert _stats(x)[1] == pytest.approx(expected, rel=0.02)


@pytest.mark.parametrize("mode", ["fan_in", "fan_out"])
@pytest.mark.parametrize("nonlinearity, a", [("relu", 0.0), ("leaky_relu", 0.2), ("tanh", 0.0)])
def test_kaiming_statistics(mode, nonlinearity, a):
    x = bai.empty(64, 48, 3, 3)
    fan = dict(zip(("fan_in", "fan_out"), init._calculate_fan_in_and_fan_out(x)))[mode]
    expected = init.calculate_gain(nonlinearity, a) / math.sqrt(fan)
    init.kaiming_uniform_(x, a=a, mode=mode, nonlinearity=nonlinearity)
    assert np.abs(x.numpy()).max() <= math.sqrt(3) * expected
    assert _stats(x)[1] == pytest.approx(expected, rel=0.02)
    init.kaiming_normal_(x, a=a, mode=mode, nonlinearity=nonlinearity)
    assert _stats(x)[1] == pytest.approx(expected, rel=0.02)


def test_kaiming_errors_and_empty_tensors():
    with pytest.raises(ValueError, match="mode 'fan_avg' is not supported"):
        init.kaiming_uniform_(bai.empty(3, 3), mode="fan_avg")
    empty = bai.empty(0, 3)
    assert (
        init.kaiming_normal_(empty) is empty and init.kaiming_uniform_(bai.empty(3, 0)) is not None
    )


@pytest.mark.parametrize("shape", [(6, 4), (4, 6), (5, 2, 3)])
def test_orthogonal(shape):
    x = bai.empty(*shape, dtype="float64")
    init.orthogonal_(x, gain=3.0)
    flat = x.numpy().reshape(shape[0], -1) / 3.0
    rows, cols = flat.shape
    product = flat.T @ flat if rows >= cols else flat @ flat.T
    np.testing.assert_allclose(product, np.eye(min(rows, cols)), atol=1e-12)
    with pytest.raises(ValueError, match="2 or more dimensions, got shape"):
        init.orthogonal_(bai.empty(3))


def test_constants_and_aliases():
    x = bai.empty(2, 3)
    assert (init.constant_(x, 0.25).numpy() == 0.25).all()
    assert (init.zeros_(x).numpy() == 0).all() and (init.ones_(x).numpy() == 1).all()
    assert init.xavier_uniform is init.xavier_uniform_ and init.normal is init.normal_


def test_generators_make_draws_reproducible():
    first, second = bai.empty(3, 4), bai.empty(3, 4)
    init.kaiming_uniform_(first, generator=bai.Generator(seed=7))
    init.kaiming_uniform_(second, generator=bai.Generator(seed=7))
    np.testing.assert_array_equal(first.numpy(), second.numpy())
    init.trunc_normal_(first, generator=bai.Generator(seed=1))
    init.trunc_normal_(second, generator=bai.Generator(seed=1))
    np.testing.assert_array_equal(first.numpy(), second.numpy())
    bai.manual_seed(3)
    a = Linear(4, 4).weight.numpy()
    bai.manual_seed(3)
    np.testing.assert_array_equal(Linear(4, 4).weight.numpy(), a)


def test_init_runs_outside_the_graph_on_parameters():
    weight = Parameter(bai.zeros(3, 3))
    before = weight.version
    init.normal_(weight)
    assert weight.is_leaf and weight.grad_fn is None and weight.version == before + 1
    init.orthogonal_(weight)
    init.constant_(weight, 1.0)
    assert weight.is_leaf and weight.requires_grad


def test_dtypes_are_kept():
    half = bai.empty(3, 3, dtype="float16")
    init.normal_(half)
    assert half.dtype == np.float16 and np.isfinite(half.numpy()).all()


def test_linear_default_init_matches_pytorch_statistics():
    layer = Linear(300, 200)
    bound = 1 / math.sqrt(300)
    weight, bias = layer.weight.numpy(), layer.bias.numpy()
    assert np.abs(weight).max() <= bound and np.abs(bias).max() <= bound
    reference = torch.nn.Linear(300, 200).weight.detach().numpy()
    assert weight.std() == pytest.approx(reference.std(), rel=0.03)
    assert weight.std() == pytest.approx(bound / math.sqrt(3), rel=0.03)

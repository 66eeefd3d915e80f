"""lgamma, digamma and polygamma against PyTorch over a wide range: negative arguments
(reflection), poles, large arguments, float32."""

from __future__ import annotations

import numpy as np
import pytest

import buildingai as bai

torch = pytest.importorskip("torch")

_VALUES = np.concatenate(
    [np.linspace(-9.7, 60.0, 1501), [1e-8, 0.5, 1.0, 2.0, 1e3, 1e6, -0.5, -2.5, -1e-3]]
)


def _compare(ours, theirs, rtol, atol):
    ours, theirs = ours.numpy(), theirs.numpy()
    finite = np.isfinite(theirs)
    np.testing.assert_array_equal(np.isfinite(ours), finite)
    np.testing.assert_allclose(ours[finite], theirs[finite], rtol=rtol, atol=atol)


def test_lgamma_and_digamma_in_float64():
    x = bai.tensor(_VALUES, dtype=bai.float64)
    t = torch.tensor(_VALUES)
    _compare(bai.lgamma(x), torch.lgamma(t), rtol=1e-12, atol=1e-12)
    _compare(bai.digamma(x), torch.digamma(t), rtol=1e-11, atol=1e-11)


@pytest.mark.parametrize("n", [1, 2, 3])
def test_polygamma_in_float64(n):
    positive = _VALUES[_VALUES > 0]
    x = bai.tensor(positive, dtype=bai.float64)
    # PyTorch's trigamma is a short series, good to about 1e-9: compare loosely with it
    _compare(bai.polygamma(n, x), torch.special.polygamma(n, torch.tensor(positive)), 1e-8, 1e-14)


def test_polygamma_and_lgamma_against_arbitrary_precision():
    mpmath = pytest.importorskip("mpmath")
    points = np.array([-2.5, -0.3, 0.3, 0.7, 3.2, 12.0, 40.5])
    x = bai.tensor(points, dtype=bai.float64)
    for n in (0, 1, 2):
        exact = [float(mpmath.psi(n, value)) for value in points]
        np.testing.assert_allclose(bai.polygamma(n, x).numpy(), exact, rtol=1e-12)
    exact = [float(mpmath.log(abs(mpmath.gamma(value)))) for value in points]
    np.testing.assert_allclose(bai.lgamma(x).numpy(), exact, rtol=1e-13, atol=1e-14)


def test_poles_and_float32():
    poles = bai.tensor([0.0, -1.0, -2.0], dtype=bai.float64)
    assert np.all(bai.lgamma(poles).numpy() == np.inf)
    digamma = bai.digamma(poles).numpy()
    assert digamma[0] == -np.inf and np.isnan(digamma[1:]).all()
    x = bai.tensor([0.3, 4.5, 20.0], dtype=bai.float32)
    assert bai.lgamma(x).dtype == np.float32 and x.digamma().dtype == np.float32
    np.testing.assert_allclose(
        x.lgamma().numpy(), torch.lgamma(torch.tensor(x.numpy())).numpy(), rtol=1e-6
    )
    assert bai.lgamma(bai.tensor([3])).dtype == np.float32  # integers give the default float


def test_gradients_chain_through_the_orders():
    x = bai.tensor([0.7, 3.2], dtype=bai.float64, requires_grad=True)
    t = torch.tensor([0.7, 3.2], dtype=torch.float64, requires_grad=True)
    (first,) = bai.grad(bai.lgamma(x).sum(), [x], create_graph=True)
    (second,) = bai.grad(first.sum(), [x])
    (t_first,) = torch.autograd.grad(torch.lgamma(t).sum(), [t], create_graph=True)
    (t_second,) = torch.autograd.grad(t_first.sum(), [t])
    np.testing.assert_allclose(first.numpy(), t_first.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(second.numpy(), t_second.numpy(), rtol=1e-8)  # torch's trigamma
    with pytest.raises(ValueError, match=r"\[polygamma\] the order n must be an int >= 0, got -1"):
        bai.polygamma(-1, x)

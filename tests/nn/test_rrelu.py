"""``F.rrelu`` and ``nn.RReLU`` against PyTorch: values and gradients in eval mode (the mean
slope), slopes and gradients in training (each negative element's own slope, uniform in
[lower, upper]), ``inplace=True``, and a frozen call drawing afresh."""

import numpy as np
import pytest

import buildingai as bai
import buildingai.nn.functional as F
from buildingai import nn

torch = pytest.importorskip("torch")

DATA = np.array([[-2.0, -0.5, 0.0, 0.5], [3.0, -1.0, 1e-3, -7.0]])


@pytest.mark.parametrize(("lower", "upper"), [(1 / 8, 1 / 3), (0.0, 0.5), (0.2, 0.2)])
def test_eval_values_and_gradients_match_pytorch(lower, upper):
    x = bai.tensor(DATA, requires_grad=True)
    tx = torch.tensor(DATA, requires_grad=True)
    out = F.rrelu(x, lower, upper)  # training=False by default, as in PyTorch
    expected = torch.nn.functional.rrelu(tx, lower, upper)
    np.testing.assert_allclose(out.numpy(), expected.detach().numpy(), rtol=1e-15)
    (out * bai.tensor(DATA)).sum().backward()
    (expected * torch.tensor(DATA)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-15)


def test_module_in_eval_mode_matches_pytorch():
    ours, theirs = nn.RReLU(0.1, 0.3).eval(), torch.nn.RReLU(0.1, 0.3).eval()
    np.testing.assert_allclose(
        ours(bai.tensor(DATA)).numpy(), theirs(torch.tensor(DATA)).numpy(), rtol=1e-15
    )
    assert repr(ours) == repr(theirs) == "RReLU(lower=0.1, upper=0.3)"
    assert repr(nn.RReLU(inplace=True)) == repr(torch.nn.RReLU(inplace=True))


def _training_slopes(library, module, n=40_000):
    """The slope each negative input got, and the gradient there (which is that slope)."""
    x = library.tensor(-np.ones(n), requires_grad=True)
    out = module(x)
    out.sum().backward()
    slopes = -(out.detach().numpy() if library is torch else out.numpy())
    return slopes, x.grad.numpy()


def test_training_draws_a_slope_per_element_like_pytorch():
    lower, upper = 0.1, 0.4
    for library, layer in ((bai, nn.RReLU(lower, upper)), (torch, torch.nn.RReLU(lower, upper))):
        slopes, grad = _training_slopes(library, layer.train())
        np.testing.assert_allclose(grad, slopes, rtol=1e-12)  # the gradient is the slope drawn
        assert slopes.min() >= lower and slopes.max() <= upper
        assert abs(slopes.mean() - (lower + upper) / 2) < 0.005
        assert abs(slopes.std() - (upper - lower) / 12**0.5) < 0.005
        assert len(np.unique(slopes)) > 30_000  # one draw per element
    positive = bai.tensor(np.ones(5))
    assert nn.RReLU().train()(positive).tolist() == [1.0] * 5


def test_training_follows_the_seed():
    x = bai.tensor(DATA)
    bai.manual_seed(4)
    first = F.rrelu(x, training=True).numpy()
    bai.manual_seed(4)
    np.testing.assert_array_equal(F.rrelu(x, training=True).numpy(), first)
    assert not np.array_equal(F.rrelu(x, training=True).numpy(), first)


def test_inplace_writes_into_the_input():
    x, tx = bai.tensor(DATA.copy()), torch.tensor(DATA.copy())
    assert F.rrelu(x, inplace=True) is x
    torch.nn.functional.rrelu(tx, inplace=True)
    np.testing.assert_allclose(x.numpy(), tx.numpy(), rtol=1e-15)
    assert x.version == 1


def test_a_frozen_training_step_draws_new_slopes():
    def noisy(x):
        return F.rrelu(x, training=True)

    frozen = bai.freeze(noisy, input_signature=[bai.TensorSpec((None, 4), "float32")])
    x = -bai.ones(3, 4)
    assert not np.array_equal(frozen(x).numpy(), frozen(x).numpy())


def test_bad_bounds_are_named():
    with pytest.raises(ValueError, match=r"RReLU expects 0 <= lower <= upper, got lower=0.5"):
        nn.RReLU(0.5, 0.1)
    with pytest.raises(ValueError, match=r"\[rrelu\] expects 0 <= lower <= upper"):
        F.rrelu(bai.ones(2), 0.5, 0.1)

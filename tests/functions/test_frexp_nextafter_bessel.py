"""frexp, nextafter (nextafter_), i0 (i0_) and torch.special's i0e, i1, i1e against PyTorch:
values and dtypes on float32, float64 and integer inputs, edge values (signed zeros,
subnormals, infinities, NaN, large |x|), float64 first and second derivatives, in-place forms
and the errors PyTorch raises."""

from __future__ import annotations

import numpy as np
import pytest

import buildingai as bai

torch = pytest.importorskip("torch")

EDGES = np.array(
    [0.0, -0.0, 5e-324, -5e-324, 1e-310, 1e-40, 1.5, -3.0, 7.99, 8.0, 8.01, 100.0, -250.0,
     700.0, -700.0, 709.0, 710.0, 1e60, 1e300, np.inf, -np.inf, np.nan]
)  # fmt: skip
BESSEL = {
    "i0": torch.special.i0,
    "i0e": torch.special.i0e,
    "i1": torch.special.i1,
    "i1e": torch.special.i1e,
}


def _values(dtype):
    with np.errstate(over="ignore"):
        return np.concatenate([EDGES, np.linspace(-700, 700, 4001)]).astype(dtype)


def _check(ours, theirs, rtol):
    expected = theirs.detach().numpy()
    assert ours.dtype.name == str(theirs.dtype).removeprefix("torch.")
    got = ours.numpy()
    np.testing.assert_array_equal(np.isnan(got), np.isnan(expected))
    np.testing.assert_allclose(got, expected, rtol=rtol, atol=0, equal_nan=True)
    numbers = ~np.isnan(expected)
    np.testing.assert_array_equal(np.signbit(got)[numbers], np.signbit(expected)[numbers])


# ----- frexp (the ops frexp_mantissa and frexp_exponent) -------------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_frexp_matches_torch(dtype):
    x = _values(dtype)
    mantissa, exponent = bai.frexp(bai.Tensor(x))
    expected = torch.frexp(torch.from_numpy(x))
    _check(mantissa, expected.mantissa, rtol=0)
    _check(exponent, expected.exponent, rtol=0)
    assert bai.Tensor(x).frexp().exponent.dtype.name == "int32"


def test_frexp_gradient_is_pytorchs():
    x = np.array([1.5, -3.0, 0.0, 1e-310, 1e-40, 1e60, 0.3])
    ours = bai.Tensor(x, requires_grad=True)
    with np.errstate(over="ignore", divide="ignore"):
        (grad,) = bai.grad(bai.frexp(ours).mantissa.sum(), [ours])
    theirs = torch.tensor(x, requires_grad=True)
    torch.frexp(theirs).mantissa.sum().backward()
    np.testing.assert_array_equal(grad.numpy(), theirs.grad.numpy())
    assert not bai.frexp(ours).exponent.requires_grad


def test_frexp_refuses_integers():
    with pytest.raises(Exception, match=r"\[frexp\].*floating-point"):
        bai.frexp(bai.Tensor(np.array([1, 2])))


# ----- nextafter ----------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_nextafter_matches_torch(dtype):
    a = np.array([0.0, -0.0, 0.0, 1.0, 1.0, -1.0, 5e-324, np.inf, -np.inf, np.nan, 2.0, 1e300])
    b = np.array([-0.0, 1.0, -1.0, 2.0, 0.0, -np.inf, 0.0, 0.0, np.inf, 1.0, np.nan, np.inf])
    with np.errstate(over="ignore"):
        a, b = a.astype(dtype), b.astype(dtype)
    ours = bai.nextafter(bai.Tensor(a), bai.Tensor(b))
    _check(ours, torch.nextafter(torch.from_numpy(a), torch.from_numpy(b)), rtol=0)


def test_nextafter_promotes_broadcasts_and_differentiates():
    a = np.array([[1.0], [2.0]], dtype=np.float32)
    b = np.array([0.0, 3.0, 2.0])
    ours_a, ours_b = bai.Tensor(a, requires_grad=True), bai.Tensor(b, requires_grad=True)
    theirs_a = torch.tensor(a, requires_grad=True)
    theirs_b = torch.tensor(b, requires_grad=True)
    out, expected = bai.nextafter(ours_a, ours_b), torch.nextafter(theirs_a, theirs_b)
    _check(out, expected, rtol=0)
    grads = bai.grad((out * out).sum(), [ours_a, ours_b])
    (expected * expected).sum().backward()
    for got, want in zip(grads, (theirs_a.grad, theirs_b.grad), strict=True):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)


def test_nextafter_in_place_and_errors():
    x = bai.Tensor(np.array([1.0, 2.0]))
    assert x.nextafter_(bai.Tensor(np.array([2.0, 0.0]))) is x
    expected = torch.tensor([1.0, 2.0], dtype=torch.float64)
    expected.nextafter_(torch.tensor([2.0, 0.0], dtype=torch.float64))
    np.testing.assert_array_equal(x.numpy(), expected.numpy())
    with pytest.raises(Exception, match=r"\[nextafter\].*floating-point"):
        bai.nextafter(bai.Tensor(np.array([1])), bai.Tensor(np.array([2])))
    with pytest.raises(Exception, match=r"\[nextafter\].*Tensor"):
        bai.nextafter(bai.Tensor(np.array([1.0])), 2.0)


# ----- Bessel functions ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", BESSEL)
@pytest.mark.parametrize("dtype, rtol", [(np.float64, 1e-14), (np.float32, 2e-6)])
def test_bessel_values_match_torch(name, dtype, rtol):
    x = _values(dtype)
    if dtype == np.float32:  # PyTorch's float32 exp(|x|) overflows past 88.7; ours is float64
        x = x[~(np.abs(x) > 80)]
    with np.errstate(over="ignore"):
        _check(getattr(bai, name)(bai.Tensor(x)), BESSEL[name](torch.from_numpy(x)), rtol)


@pytest.mark.parametrize("name", BESSEL)
def test_bessel_of_integers_gives_float32(name):
    x = np.array([-3, 0, 2, 9])
    ours = getattr(bai, name)(bai.Tensor(x))
    _check(ours, BESSEL[name](torch.from_numpy(x)), rtol=1e-6)


@pytest.mark.parametrize("name", BESSEL)
def test_bessel_first_and_second_derivatives(name):
    x = np.array([0.0, -0.0, 0.4, -1.7, 7.9, 8.2, -15.0, 60.0])
    ours = bai.Tensor(x, requires_grad=True)
    (grad,) = bai.grad(getattr(bai, name)(ours).sum(), [ours], create_graph=True)
    (second,) = bai.grad(grad.sum(), [ours])
    theirs = torch.tensor(x, requires_grad=True)
    (want,) = torch.autograd.grad(BESSEL[name](theirs).sum(), theirs, create_graph=True)
    (want_second,) = torch.autograd.grad(want.sum(), theirs)
    np.testing.assert_allclose(grad.numpy(), want.detach().numpy(), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(second.numpy(), want_second.numpy(), rtol=1e-10, atol=1e-14)


@pytest.mark.parametrize("name", BESSEL)
def test_bessel_gradcheck(name):
    x = bai.Tensor(np.array([0.3, -1.2, 5.0, 9.5]), requires_grad=True)
    assert bai.debug.gradcheck(getattr(bai, name), (x,))


def test_i0_in_place_forms():
    x = bai.Tensor(np.array([0.5, -2.0]))
    assert x.i0_() is x and bai.i0_(x) is x
    expected = torch.tensor([0.5, -2.0], dtype=torch.float64).i0_()
    torch.i0_(expected)
    np.testing.assert_allclose(x.numpy(), expected.numpy(), rtol=1e-14)
    assert not hasattr(bai.Tensor, "i1") and not hasattr(torch.Tensor, "i1")
    with pytest.raises(Exception):  # noqa: B017 - PyTorch raises too: float result, int tensor
        bai.Tensor(np.array([1, 2])).i0_()

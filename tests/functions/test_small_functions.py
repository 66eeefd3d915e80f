"""Small functions PyTorch has (``erfc``, ``erfinv``, ``fmax``, ``fmin``, ``signbit``,
``isposinf``, ``isneginf``, ``isreal``, ``ldexp`` and their in-place forms) against PyTorch:
values, dtypes, shapes, float64 gradients and edge values (NaN, inf, -0.0, ties)."""

import numpy as np
import pytest

import buildingai as bai
from buildingai.errors import AutogradError, DTypeError

torch = pytest.importorskip("torch")

NAN, INF = np.nan, np.inf
EDGES = np.array([-INF, -30.0, -5.5, -1.0, -0.3, -0.0, 0.0, 1e-300, 0.5, 0.9, 1.3, 2.9, 5.9,
                  10.0, 26.5, 27.9, 30.0, INF, NAN])  # fmt: skip
UNIT = np.array([-1.0, -0.999999, -0.9, -0.5, -1e-10, -0.0, 0.0, 0.3, 0.7, 0.99, 0.999999, 1.0,
                 1.5, -2.0, NAN])  # fmt: skip


def _same(ours, theirs, rtol=1e-12):
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert str(ours.dtype) == str(theirs.dtype).removeprefix("torch.")
    np.testing.assert_allclose(ours.numpy(), theirs.detach().numpy(), rtol=rtol, atol=0)


@pytest.mark.parametrize(
    "name",
    [
        "erfc",
        "erfinv",
        "erfc_",
        "erfinv_",
        "isneginf",
        "isposinf",
        "isreal",
        "signbit",
        "fmax",
        "fmin",
        "ldexp",
        "ldexp_",
    ],  # fmt: skip
)
def test_the_same_forms_as_pytorch(name):
    assert hasattr(bai, name) == hasattr(torch, name)
    assert hasattr(bai.Tensor, name) == hasattr(torch.Tensor, name)


def test_erfc_keeps_its_relative_precision_in_the_tail():
    _same(bai.erfc(bai.tensor(EDGES)), torch.erfc(torch.tensor(EDGES)), rtol=1e-13)
    data = EDGES.astype(np.float32)
    _same(bai.tensor(data).erfc(), torch.tensor(data).erfc(), rtol=1e-6)


def test_erfinv_matches_pytorch_and_inverts_erf():
    _same(bai.erfinv(bai.tensor(UNIT)), torch.erfinv(torch.tensor(UNIT)), rtol=1e-9)
    _same(bai.tensor(UNIT.astype(np.float32)).erfinv(), torch.tensor(UNIT.astype(np.float32)).erfinv(),
          rtol=1e-5)  # fmt: skip
    inner = np.linspace(-0.99, 0.99, 41)
    np.testing.assert_allclose(bai.erf(bai.erfinv(bai.tensor(inner))).numpy(), inner, rtol=1e-14)


@pytest.mark.parametrize("name", ["erfc", "erfinv"])
def test_integer_inputs_give_the_default_float_dtype(name):
    data = np.array([0, 1, -1, 2])
    _same(getattr(bai, name)(bai.tensor(data)), getattr(torch, name)(torch.tensor(data)))


@pytest.mark.parametrize("name", ["erfc", "erfinv"])
def test_error_function_gradients_match_pytorch(name):
    data = np.array([-2.5, -0.7, 0.0, 0.4, 0.95]) if name == "erfc" else UNIT[2:-5]
    x, tx = bai.tensor(data, requires_grad=True), torch.tensor(data, requires_grad=True)
    (getattr(bai, name)(x) * bai.tensor(np.arange(1.0, len(data) + 1))).sum().backward()
    (getattr(torch, name)(tx) * torch.tensor(np.arange(1.0, len(data) + 1))).sum().backward()
    _same(x.grad, tx.grad, rtol=1e-9)


def test_error_function_in_place_forms():
    for name in ("erfc_", "erfinv_"):
        ours, theirs = bai.tensor(UNIT[2:-3]), torch.tensor(UNIT[2:-3])
        assert getattr(ours, name)() is ours
        getattr(theirs, name)()
        _same(ours, theirs, rtol=1e-9)
        assert ours.version == 1
    ours, theirs = bai.tensor(EDGES), torch.tensor(EDGES)
    assert bai.erfc_(ours) is ours
    torch.erfc_(theirs)
    _same(ours, theirs, rtol=1e-13)
    with pytest.raises(DTypeError):
        bai.tensor([1, 2]).erfinv_()
    with pytest.raises(AutogradError):
        bai.tensor(UNIT[2:5], requires_grad=True).erfc_()


A = np.array([1.0, NAN, 2.0, 3.0, NAN, -0.0, 0.0, -INF])
B = np.array([NAN, 1.0, 2.0, 1.0, NAN, 0.0, -0.0, 5.0])


@pytest.mark.parametrize("name", ["fmax", "fmin"])
def test_fmax_fmin_ignore_nan_and_send_ties_to_the_input(name):
    x, y = bai.tensor(A, requires_grad=True), bai.tensor(B, requires_grad=True)
    tx, ty = torch.tensor(A, requires_grad=True), torch.tensor(B, requires_grad=True)
    ours, theirs = getattr(bai, name)(x, y), getattr(torch, name)(tx, ty)
    _same(ours, theirs)
    np.testing.assert_array_equal(np.signbit(ours.numpy()), np.signbit(theirs.detach().numpy()))
    ours.sum().backward()
    theirs.sum().backward()
    _same(x.grad, tx.grad)
    _same(y.grad, ty.grad)


@pytest.mark.parametrize("name", ["fmax", "fmin"])
def test_fmax_fmin_dtypes_broadcast_and_methods(name):
    cases = [
        (np.array([[1, 5, -2]]), np.array([[3], [0]])),
        (np.array([1.5, -2.0], dtype=np.float32), np.array([1, 7])),
        (np.array([1.5, NAN]), 0.5),
    ]
    for a, b in cases:
        # PyTorch takes tensors only; BuildingAI also a Python number, as its other binary ops
        ours = getattr(bai.tensor(a), name)(bai.tensor(b) if isinstance(b, np.ndarray) else b)
        theirs = getattr(torch.tensor(a), name)(torch.tensor(b))
        _same(ours, theirs)
    with pytest.raises(DTypeError):
        getattr(bai, name)(bai.tensor([True]), bai.tensor([False]))


SIGNS = np.array([-0.0, 0.0, NAN, -NAN, -1.0, 2.0, -INF, INF])


@pytest.mark.parametrize("name", ["signbit", "isposinf", "isneginf", "isreal"])
@pytest.mark.parametrize(
    "data", [SIGNS, SIGNS.astype(np.float32), np.array([-3, 0, 4]), np.zeros((2, 0))],
    ids=["float64", "float32", "int64", "empty"],
)  # fmt: skip
def test_value_tests_match_pytorch(name, data):
    ours, theirs = bai.tensor(data), torch.tensor(data)
    _same(getattr(bai, name)(ours), getattr(torch, name)(theirs))
    _same(getattr(ours, name)(), getattr(theirs, name)())


@pytest.mark.parametrize(
    "data",
    [
        (np.array([1.5, -2.0, 0.0, INF, NAN]), np.array([3, -2, 4, 1, 2])),
        (np.array([1, -3, 5]), np.array([2, 0, -1])),
        (np.array([1.5, 3.0], dtype=np.float32), np.array([2, 1])),
        (np.array([1.5, 3.0], dtype=np.float32), np.array([2.0, 1.5])),
        (np.array([[0.25], [4.0]]), np.array([1.0, -1.5, 2.0])),
    ],
)
def test_ldexp_matches_pytorch(data):
    a, b = data
    _same(bai.ldexp(bai.tensor(a), bai.tensor(b)), torch.ldexp(torch.tensor(a), torch.tensor(b)))
    _same(bai.tensor(a).ldexp(bai.tensor(b)), torch.tensor(a).ldexp(torch.tensor(b)))


def test_ldexp_gradients_and_in_place_forms_match_pytorch():
    a, b = np.array([1.5, -0.5, 2.0]), np.array([2.0, -1.0, 0.5])
    x, y = bai.tensor(a, requires_grad=True), bai.tensor(b, requires_grad=True)
    tx, ty = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    bai.ldexp(x, y).sum().backward()
    torch.ldexp(tx, ty).sum().backward()
    _same(x.grad, tx.grad)
    _same(y.grad, ty.grad)
    ours, theirs = bai.tensor(a), torch.tensor(a)
    assert ours.ldexp_(bai.tensor([1, 2, 3])) is ours
    theirs.ldexp_(torch.tensor([1, 2, 3]))
    _same(ours, theirs)
    assert bai.ldexp_(ours, bai.tensor(b)) is ours
    torch.ldexp_(theirs, torch.tensor(b))
    _same(ours, theirs)

"""A rounded quotient (``div`` with ``rounding_mode``, ``floor_divide``, ``//``) of float tensors
requires grad with a zero gradient, as ``torch.div(a, b, rounding_mode=...)``: a loss that uses
it still backpropagates through its other terms."""

import numpy as np
import pytest

import buildingai as bai

torch = pytest.importorskip("torch")

A = np.array([[3.5, -2.5, 7.0], [-0.75, 1.25, -9.5]])
B = np.array([2.0, -1.5, 0.5])

FORMS = {
    "div floor": (
        lambda a, b: bai.div(a, b, rounding_mode="floor"),
        lambda a, b: torch.div(a, b, rounding_mode="floor"),
    ),
    "div trunc": (
        lambda a, b: bai.div(a, b, rounding_mode="trunc"),
        lambda a, b: torch.div(a, b, rounding_mode="trunc"),
    ),
    # PyTorch 2.13's floor_divide output requires grad too, but its backward raises
    # "derivative for aten::floor_divide is not implemented"; here it has the zero gradient of
    # torch.div(rounding_mode="floor"), the same quotient
    "floor_divide": (bai.floor_divide, lambda a, b: torch.div(a, b, rounding_mode="floor")),
    "//": (lambda a, b: a // b, lambda a, b: torch.div(a, b, rounding_mode="floor")),
    "// scalar": (
        lambda a, b: a // 2.0 + 3.0 // b,
        lambda a, b: (
            torch.div(a, 2.0, rounding_mode="floor") + torch.div(3.0, b, rounding_mode="floor")
        ),
    ),  # fmt: skip
}


@pytest.mark.parametrize("form", FORMS)
def test_loss_with_a_rounded_quotient_backpropagates_like_torch(form):
    ours_fn, torch_fn = FORMS[form]
    a, b = bai.tensor(A, requires_grad=True), bai.tensor(B, requires_grad=True)
    ta, tb = torch.tensor(A, requires_grad=True), torch.tensor(B, requires_grad=True)
    quotient, expected = ours_fn(a, b), torch_fn(ta, tb)
    assert quotient.requires_grad and expected.requires_grad
    np.testing.assert_array_equal(quotient.numpy(), expected.detach().numpy())
    ((quotient * a).sum() + (b * b).sum()).backward()
    ((expected * ta).sum() + (tb * tb).sum()).backward()
    np.testing.assert_array_equal(a.grad.numpy(), ta.grad.numpy())
    np.testing.assert_array_equal(b.grad.numpy(), tb.grad.numpy())


def test_torch_floor_divide_raises_on_backward_where_ours_gives_zero():
    ta = torch.tensor(A, requires_grad=True)
    with pytest.raises(RuntimeError, match="derivative for aten::floor_divide"):
        torch.floor_divide(ta, 2.0).sum().backward()
    a = bai.tensor(A, requires_grad=True)
    bai.floor_divide(a, 2.0).sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), np.zeros_like(A))


def test_integer_rounded_quotients_stay_integers_without_gradient():
    a, b = bai.tensor([7, -7]), bai.tensor([2, 2])
    for quotient in (a // b, bai.div(a, b, rounding_mode="trunc")):
        assert quotient.dtype == np.int64 and not quotient.requires_grad


def test_remainder_second_derivative_in_the_divisor_like_torch():
    a, b = bai.tensor(A, requires_grad=True), bai.tensor(B, requires_grad=True)
    ta, tb = torch.tensor(A, requires_grad=True), torch.tensor(B, requires_grad=True)
    (grad_b,) = bai.grad((a % b * b).sum(), [b], create_graph=True)
    (torch_grad_b,) = torch.autograd.grad((ta % tb * tb).sum(), [tb], create_graph=True)
    np.testing.assert_allclose(grad_b.numpy(), torch_grad_b.detach().numpy())
    (grad_b * b).sum().backward()
    (torch_grad_b * tb).sum().backward()
    np.testing.assert_allclose(b.grad.numpy(), tb.grad.numpy())
    np.testing.assert_allclose(a.grad.numpy(), ta.grad.numpy())

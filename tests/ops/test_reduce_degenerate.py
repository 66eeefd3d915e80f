"""Gradients of std, var and vector_norm where the formula divides by zero (a constant slice, a
zero vector): PyTorch's subgradient 0, in first and second derivatives, in float64."""

from __future__ import annotations

import numpy as np
import pytest

import buildingai as bai

torch = pytest.importorskip("torch")


def _first_and_second(fn_ours, fn_torch, values, weights):
    """d/dx sum(w * f(x)) and d/dx of (that gradient . v) from both libraries."""
    direction = np.linspace(0.5, 1.5, values.size).reshape(values.shape)
    ours_x = bai.tensor(values.copy(), requires_grad=True)
    (ours_grad,) = bai.grad(
        (fn_ours(ours_x) * bai.tensor(weights)).sum(), [ours_x], create_graph=True
    )
    (ours_second,) = bai.grad((ours_grad * bai.tensor(direction)).sum(), [ours_x])
    theirs_x = torch.tensor(values.copy(), requires_grad=True)
    total = (fn_torch(theirs_x) * torch.tensor(weights)).sum()
    (theirs_grad,) = torch.autograd.grad(total, theirs_x, create_graph=True)
    (theirs_second,) = torch.autograd.grad((theirs_grad * torch.tensor(direction)).sum(), theirs_x)
    return (
        (ours_grad.numpy(), theirs_grad.detach().numpy()),
        (ours_second.numpy(), theirs_second.numpy()),
    )


CONSTANT_ROWS = np.array([[2.0, 2.0, 2.0, 2.0], [1.0, -3.0, 0.5, 2.0], [0.0, 0.0, 0.0, 0.0]])


@pytest.mark.parametrize("correction", [0, 1])
@pytest.mark.parametrize("name", ["std", "var"])
def test_std_and_var_of_constant_rows_have_zero_gradient(name, correction):
    weights = np.array([0.3, -1.2, 2.0])
    first, second = _first_and_second(
        lambda x: getattr(x, name)(axis=1, correction=correction),
        lambda x: getattr(torch, name)(x, dim=1, correction=correction),
        CONSTANT_ROWS,
        weights,
    )
    for ours, theirs in (first, second):
        assert np.all(np.isfinite(ours))
        np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-12)
    assert np.all(first[0][0] == 0) and np.all(first[0][2] == 0)


def test_std_of_a_constant_tensor_over_all_axes():
    x = bai.tensor(np.full((2, 3), 5.0), requires_grad=True)
    x.std().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.zeros((2, 3)))


@pytest.mark.parametrize("order", [2, 3, 1.5, 0.5])
def test_vector_norm_of_zero_rows(order):
    values = np.array([[0.0, 0.0, 0.0], [0.5, -1.0, 2.0]])
    weights = np.array([1.5, -0.5])
    first, second = _first_and_second(
        lambda x: x.norm(ord=order, axis=1),
        lambda x: torch.linalg.vector_norm(x, ord=order, dim=1),
        values,
        weights,
    )
    ours, theirs = first
    assert np.all(np.isfinite(ours))
    np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-12)
    ours, theirs = second
    finite = np.isfinite(theirs)  # where PyTorch's own second derivative is finite
    np.testing.assert_allclose(ours[finite], theirs[finite], rtol=1e-10, atol=1e-12)

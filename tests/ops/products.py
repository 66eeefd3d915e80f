"""A check the product tests share: a linear layer's output and both gradients against NumPy,
in whatever thread arrangement the calling test set up."""

from __future__ import annotations

import numpy as np

import buildingai as bai


def assert_linear_and_its_gradients(seed: int) -> None:
    """y = x w^T for x (12, 20), w (9, 20), and the gradients of sum(y^2), against NumPy."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((12, 20)).astype(np.float32)
    w = rng.standard_normal((9, 20)).astype(np.float32)
    xt, wt = bai.tensor(x, requires_grad=True), bai.tensor(w, requires_grad=True)
    y = bai.nn.functional.linear(xt, wt)
    (y * y).sum().backward()
    np.testing.assert_allclose(y.numpy(), x @ w.T, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(wt.grad.numpy(), 2 * (x @ w.T).T @ x, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(xt.grad.numpy(), 2 * (x @ w.T) @ w, rtol=1e-4, atol=1e-4)

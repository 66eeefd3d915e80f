"""Contractions on bfloat16 stay bfloat16, as in PyTorch: NumPy's ``matmul`` multiplies
ml_dtypes' bfloat16 into float32 and its ``einsum`` rejects bfloat16, so batched matmul, conv2d
(and its adjoints), einsum and layer_norm's gradients compute wider and give bfloat16 back."""

from __future__ import annotations

import numpy as np
import pytest

import buildingai as bai
import buildingai.nn.functional as F

ml_dtypes = pytest.importorskip("ml_dtypes")
BF16 = np.dtype(ml_dtypes.bfloat16)


def _pair(*shape, seed=0):
    """The same values as bfloat16 and as float32."""
    values = np.random.default_rng(seed).uniform(-1, 1, size=shape).astype(BF16)
    return bai.tensor(values), bai.tensor(values.astype(np.float32))


def _close(ours, reference) -> None:
    assert ours.dtype == BF16
    np.testing.assert_allclose(
        ours.numpy().astype(np.float32), reference.numpy(), rtol=2e-2, atol=2e-2
    )


def test_batched_matmul_and_linear():
    (a, a32), (b, b32) = _pair(3, 4, 5), _pair(3, 5, 2, seed=1)
    _close(a @ b, a32 @ b32)
    (w, w32) = _pair(6, 5, seed=2)
    _close(F.linear(a, w), F.linear(a32, w32))


@pytest.mark.parametrize("groups, channels", [(1, 2), (2, 4), (4, 4)], ids=str)
def test_conv2d_forward_and_gradients(groups, channels):
    (x, x32), (w, w32) = _pair(2, channels, 6, 5), _pair(4, channels // groups, 3, 3, seed=1)
    for tensor in (x, x32, w, w32):
        tensor.requires_grad_()
    out, out32 = (
        F.conv2d(x, w, padding=1, groups=groups),
        F.conv2d(x32, w32, padding=1, groups=groups),
    )
    _close(out, out32)
    out.sum().backward()
    out32.sum().backward()
    _close(x.grad, x32.grad)
    _close(w.grad, w32.grad)


def test_einsum():
    (a, a32), (b, b32) = _pair(3, 4, seed=3), _pair(4, 2, seed=4)
    _close(bai.einsum("ij,jk->ik", a, b), bai.einsum("ij,jk->ik", a32, b32))


def test_layer_norm_gradients():
    (x, x32), (w, w32) = _pair(4, 3, 8), _pair(8, seed=5)
    for tensor in (x, x32, w, w32):
        tensor.requires_grad_()
    F.layer_norm(x, (8,), w).sum().backward()
    F.layer_norm(x32, (8,), w32).sum().backward()
    _close(w.grad, w32.grad)
    assert x.grad.dtype == BF16

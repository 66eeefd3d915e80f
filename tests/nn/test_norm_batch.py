"""Batch normalisation's records (``ops/batch_norm.py``) against PyTorch in float64: training
and evaluation, each affine form, running statistics, and derivatives of higher order."""

from __future__ import annotations

import numpy as np
import pytest

import buildingai as bai
import buildingai.nn.functional as F
from tests.helpers import check_op

torch = pytest.importorskip("torch")
TF = torch.nn.functional


def _composite(x, weight=None, bias=None, eps=1e-5):
    """Training batch norm written out, for PyTorch's derivatives of every order."""
    axes = (0, *range(2, x.ndim))
    view = (1, -1) + (1,) * (x.ndim - 2)
    mean = x.mean(dim=axes, keepdim=True)
    out = (x - mean) / torch.sqrt(((x - mean) ** 2).mean(dim=axes, keepdim=True) + eps)
    if weight is not None:
        out = out * weight.reshape(view)
    if bias is not None:
        out = out + bias.reshape(view)
    return out


@pytest.mark.parametrize("x_shape", [(6, 3), (4, 3, 5), (2, 4, 3, 3)], ids=str)
def test_batch_norm_training_forms_match_pytorch(x_shape):
    channels = (x_shape[1],)
    forms = {
        "weight": (lambda x, w: F.batch_norm(x, None, None, w, training=True),
                   lambda x, w: TF.batch_norm(x, None, None, w, training=True)),
        "bias": (lambda x, b: F.batch_norm(x, None, None, None, b, training=True),
                 lambda x, b: TF.batch_norm(x, None, None, None, b, training=True)),
        "none": (lambda x: F.batch_norm(x, None, None, training=True, eps=0.1),
                 lambda x: TF.batch_norm(x, None, None, training=True, eps=0.1)),
    }  # fmt: skip
    for name, (ours, theirs) in forms.items():
        specs = (x_shape,) if name == "none" else (x_shape, channels)
        check_op(ours, *specs, torch_fn=theirs, gradgrad=True)


def test_batch_norm_third_derivative():
    rng = np.random.default_rng(0)
    values = [rng.standard_normal(shape) for shape in ((5, 3, 4), (3,), (3,))]
    c, d = rng.standard_normal((5, 3, 4)), rng.standard_normal((5, 3, 4))
    ours = [bai.Tensor(v, requires_grad=True) for v in values]
    theirs = [torch.tensor(v, requires_grad=True) for v in values]

    def third(out, inputs, grad, tensor):
        first = grad((out**3 * tensor(c)).sum(), inputs, create_graph=True)
        total = (first[0] * first[0] * tensor(d)).sum() + sum((g * g).sum() for g in first[1:])
        second = grad(total, inputs, create_graph=True)
        return grad(sum((h**2).sum() for h in second), inputs)

    ours_k = third(F.batch_norm(ours[0], None, None, *ours[1:], training=True), ours,
                   bai.grad, bai.Tensor)  # fmt: skip
    theirs_k = third(_composite(*theirs), theirs, torch.autograd.grad, torch.tensor)
    for k, kt in zip(ours_k, theirs_k):
        np.testing.assert_allclose(k.numpy(), kt.numpy(), rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("momentum", [0.1, None])
def test_batch_norm_module_running_statistics_match_pytorch(momentum):
    rng = np.random.default_rng(1)
    ours = bai.nn.BatchNorm2d(3, momentum=momentum).to("float64")
    theirs = torch.nn.BatchNorm2d(3, momentum=momentum).double()
    for step in range(3):
        x = rng.standard_normal((4, 3, 5, 5)) * (step + 1) + step
        ours(bai.Tensor(x))
        theirs(torch.tensor(x))
    for name in ("running_mean", "running_var", "num_batches_tracked"):
        np.testing.assert_allclose(getattr(ours, name).numpy(), getattr(theirs, name).numpy(),
                                   rtol=1e-12)  # fmt: skip
    ours.eval(), theirs.eval()
    x = rng.standard_normal((2, 3, 5, 5))
    np.testing.assert_allclose(ours(bai.Tensor(x)).numpy(), theirs(torch.tensor(x)).detach(),
                               rtol=1e-12, atol=1e-12)  # fmt: skip


def test_batch_norm_eval_gradients_of_the_statistics():
    """PyTorch does not differentiate running statistics: compare with the formula."""

    def formula(x, m, v, w, b):
        view = (1, -1) + (1,) * (x.ndim - 2)
        return (x - m.reshape(view)) / torch.sqrt(v.reshape(view) + 1e-5) * w.reshape(view) + (
            b.reshape(view)
        )

    def positive(values):
        return np.abs(values) + 0.5

    rng = np.random.default_rng(2)
    x, mean, var = rng.standard_normal((3, 4, 2)), rng.standard_normal(4), rng.standard_normal(4)
    arrays = [x, mean, positive(var), rng.standard_normal(4), rng.standard_normal(4)]
    ours = [bai.Tensor(a, requires_grad=True) for a in arrays]
    theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
    upstream = rng.standard_normal((3, 4, 2))
    out = F.batch_norm(ours[0], ours[1], ours[2], ours[3], ours[4], training=False)
    grads = bai.grad(out, ours, grad_outputs=bai.Tensor(upstream), create_graph=True)
    expected = torch.autograd.grad(formula(*theirs), theirs, torch.tensor(upstream),
                                   create_graph=True)  # fmt: skip
    for g, gt in zip(grads, expected):
        np.testing.assert_allclose(g.numpy(), gt.detach().numpy(), rtol=1e-10, atol=1e-12)
    second = bai.grad(sum((g * g).sum() for g in grads), ours, allow_unused=True)
    second_t = torch.autograd.grad(sum((g * g).sum() for g in expected), theirs,
                                   allow_unused=True)  # fmt: skip
    for h, ht in zip(second, second_t):
        if ht is None:  # the bias: its gradient does not depend on anything
            assert h is None or not h.numpy().any()
            continue
        np.testing.assert_allclose(h.numpy(), ht.numpy(), rtol=1e-9, atol=1e-11)


@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_in_half_precision_keeps_the_dtype(training):
    x = np.random.default_rng(3).standard_normal((4, 3, 5)).astype(np.float16)
    stats = [bai.zeros(3, dtype="float16"), bai.ones(3, dtype="float16")]
    t = bai.Tensor(x, requires_grad=True)
    out = F.batch_norm(t, *stats, bai.ones(3, dtype="float16"), None, training=training)
    assert out.dtype == np.float16
    out.sum().backward()
    assert t.grad.dtype == np.float16
    expected = TF.batch_norm(torch.tensor(x, dtype=torch.float32), torch.zeros(3),
                             torch.ones(3), training=training)  # fmt: skip
    np.testing.assert_allclose(out.numpy().astype(np.float32), expected.numpy(), atol=5e-3)

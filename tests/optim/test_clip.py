"""Gradient clipping against torch.nn.utils."""

import math

import numpy as np
import pytest
import torch

import buildingai as bai
from buildingai.optim import NonFiniteNormError, clip_grad_norm_, clip_grad_value_

SHAPES = [(3, 4), (5,), (), (0, 2)]


def _pair(seed=0, scale=1.0, shapes=SHAPES):
    rng = np.random.default_rng(seed)
    grads = [rng.standard_normal(shape) * scale for shape in shapes]
    ours = [bai.tensor(np.zeros(shape), requires_grad=True) for shape in shapes]
    theirs = [torch.zeros(shape, dtype=torch.float64, requires_grad=True) for shape in shapes]
    for o, t, g in zip(ours, theirs, grads):
        o.grad = bai.tensor(g.copy())
        t.grad = torch.tensor(g.copy())
    return ours, theirs


@pytest.mark.parametrize("norm_type", [2.0, 1.0, 3.0, 0.5, math.inf, "inf", -math.inf])
@pytest.mark.parametrize("max_norm", [0.5, 1e6])
def test_clip_grad_norm_matches_torch(norm_type, max_norm):
    # torch refuses the infinity norms of a zero-size gradient; ours gives it no weight
    shapes = SHAPES if float(norm_type) not in (math.inf, -math.inf) else SHAPES[:3]
    ours, theirs = _pair(shapes=shapes)
    total = clip_grad_norm_(ours, max_norm, norm_type=norm_type)
    expected = torch.nn.utils.clip_grad_norm_(theirs, max_norm, norm_type=float(norm_type))
    assert isinstance(total, bai.Tensor) and total.shape == ()
    assert abs(total.item() - expected.item()) <= 1e-12 * max(1.0, expected.item())
    for o, t in zip(ours, theirs):
        np.testing.assert_allclose(o.grad.numpy(), t.grad.numpy(), rtol=1e-12, atol=1e-15)


def test_clip_grad_norm_zero_norm_counts_nonzero_entries():
    """norm_type=0 counts the non-zero entries of all gradients together (torch instead counts
    the gradients whose norm is non-zero)."""
    ours, _ = _pair()
    expected = sum(int(np.count_nonzero(p.grad.numpy())) for p in ours)
    assert clip_grad_norm_(ours, 1e6, norm_type=0).item() == expected
    zero_size = bai.tensor(np.zeros((0, 2)), requires_grad=True)
    zero_size.grad = bai.tensor(np.zeros((0, 2)))
    extra = ours[:3] + [zero_size]
    assert clip_grad_norm_(extra, 1e6, norm_type=math.inf).item() == pytest.approx(
        max(np.abs(p.grad.numpy()).max() for p in ours[:3])
    )


def test_clip_grad_norm_single_tensor_and_missing_grads():
    w = bai.tensor([3.0, 4.0], dtype="float64", requires_grad=True)
    w.grad = bai.tensor([3.0, 4.0])
    assert clip_grad_norm_(w, 1.0).item() == pytest.approx(5.0)
    np.testing.assert_allclose(w.grad.numpy(), [0.6, 0.8], rtol=1e-6)
    empty = bai.tensor([1.0], requires_grad=True)
    assert clip_grad_norm_([empty], 1.0).item() == 0.0


def test_clip_grad_norm_float32_and_float16():
    w = bai.tensor(np.full(4, 300.0, dtype=np.float16), requires_grad=True)
    w.grad = bai.tensor(np.full(4, 300.0, dtype=np.float16))
    total = clip_grad_norm_([w], 1.0)
    assert total.item() == pytest.approx(600.0)  # 300**2 * 4 overflows float16 if summed in it
    assert w.grad.dtype == np.float16


def test_clip_grad_norm_non_finite():
    ours, theirs = _pair()
    ours[0].grad.data[0, 0] = np.nan
    theirs[0].grad[0, 0] = float("nan")
    with pytest.raises(NonFiniteNormError, match=r"total norm of order 2.0 .* is nan"):
        clip_grad_norm_(ours, 1.0, error_if_nonfinite=True)
    total = clip_grad_norm_(ours, 1.0)
    expected = torch.nn.utils.clip_grad_norm_(theirs, 1.0)
    assert math.isnan(total.item()) and math.isnan(expected.item())
    assert np.isnan(ours[1].grad.numpy()).all() and torch.isnan(theirs[1].grad).all()


@pytest.mark.parametrize("clip_value", [0.3, 1.5, 0.0])
def test_clip_grad_value_matches_torch(clip_value):
    ours, theirs = _pair(scale=2.0)
    assert clip_grad_value_(ours, clip_value) is None
    torch.nn.utils.clip_grad_value_(theirs, clip_value)
    for o, t in zip(ours, theirs):
        np.testing.assert_array_equal(o.grad.numpy(), t.grad.numpy())


def test_clip_grad_value_rejects_negative():
    with pytest.raises(ValueError, match="clip_value must be >= 0"):
        clip_grad_value_([], -1.0)


def test_clip_hooks_on_an_optimizer():
    ours, theirs = _pair(seed=3, scale=5.0, shapes=SHAPES[:3])
    optimizer = bai.optim.SGD(ours, lr=1.0)
    hook = bai.optim.clip_grad_hook(max_norm=1.0, norm_type=math.inf)
    optimizer.register_step_pre_hook(hook)
    expected = torch.nn.utils.clip_grad_norm_(theirs, 1.0, norm_type=math.inf)
    before = [o.numpy() for o in ours]
    optimizer.step()
    assert hook.last_total_norm == pytest.approx(expected.item(), rel=1e-12)
    for b, o, t in zip(before, ours, theirs):
        np.testing.assert_allclose(o.numpy(), b - t.grad.numpy(), rtol=1e-12, atol=1e-15)
    assert "max_norm=1.0" in repr(hook)

    ours, theirs = _pair(seed=4, scale=5.0)
    optimizer = bai.optim.SGD(ours, lr=1.0)
    optimizer.register_step_pre_hook(bai.optim.clip_value_hook(0.1))
    optimizer.step()
    for o in ours:
        assert np.all(np.abs(o.numpy()) <= 0.1 + 1e-15)


def test_clip_grad_norm_of_large_float32_gradients(accel_on):
    """Gradients large enough for acceleration's BLAS binding: the norm's sum is one ``dot``
    pass per gradient, within float32 round-off of the float64 norm and within 1.5x PyTorch's
    own float32 error, and every gradient is scaled as PyTorch scales it."""
    rng = np.random.default_rng(3)
    shapes = [(1000, 256), (300,), (256, 256)]
    grads = [rng.standard_normal(shape).astype(np.float32) for shape in shapes]
    ours = [bai.tensor(np.zeros(shape, np.float32), requires_grad=True) for shape in shapes]
    theirs = [torch.zeros(shape, requires_grad=True) for shape in shapes]
    for o, t, g in zip(ours, theirs, grads):
        o.grad, t.grad = bai.tensor(g.copy()), torch.tensor(g.copy())
    exact = math.sqrt(sum(float(np.square(g.astype(np.float64)).sum()) for g in grads))
    total = clip_grad_norm_(ours, 1.0).item()
    expected = torch.nn.utils.clip_grad_norm_(theirs, 1.0).item()
    assert abs(total - exact) <= 1e-5 * exact
    assert abs(total - exact) <= max(1.5 * abs(expected - exact), 1e-6 * exact)
    for o, t in zip(ours, theirs):
        np.testing.assert_allclose(o.grad.numpy(), t.grad.numpy(), rtol=1e-4, atol=1e-9)

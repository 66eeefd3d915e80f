"""``Gradients``: grad's result indexes and unpacks as a tuple and adds and scales as a value."""

from __future__ import annotations

import numpy as np
import pytest

import buildingai as bai


def _grads(scale: float = 1.0, create_graph: bool = False):
    w = bai.tensor([1.0, 2.0], dtype=bai.float64, requires_grad=True)
    b = bai.tensor(3.0, dtype=bai.float64, requires_grad=True)
    loss = scale * ((w * w).sum() + b * w.sum())
    return w, b, bai.grad(loss, (p for p in [w, b]), create_graph=create_graph)


def test_grad_takes_a_generator_and_returns_a_tuple_like_value():
    w, b, grads = _grads()
    assert isinstance(grads, bai.Gradients) and isinstance(grads, tuple) and len(grads) == 2
    gw, gb = grads
    np.testing.assert_allclose(gw.numpy(), [5.0, 7.0])
    np.testing.assert_allclose(grads[1].numpy(), 3.0)
    assert [g.shape for g in grads] == [(2,), ()]


def test_sum_from_zero_scale_and_divide():
    _, _, first = _grads(1.0)
    _, _, second = _grads(2.0)
    total = 0
    total += first
    total += second
    mean = total / 2
    np.testing.assert_allclose(mean[0].numpy(), [7.5, 10.5])
    np.testing.assert_allclose((0.5 * first)[1].numpy(), 1.5)
    np.testing.assert_allclose((first * 2 - second)[0].numpy(), [0.0, 0.0])
    assert sum([first, second])[1].item() == pytest.approx(9.0)
    np.testing.assert_allclose((-first)[0].numpy(), [-5.0, -7.0])


def test_none_entries_act_as_zero():
    x = bai.ones(2, requires_grad=True)
    unused = bai.ones(2, requires_grad=True)
    grads = bai.grad(x.sum(), [x, unused], allow_unused=True)
    assert grads[1] is None and (grads + grads)[1] is None and (grads * 3)[1] is None
    np.testing.assert_allclose((grads + grads)[0].numpy(), [2.0, 2.0])


def test_sums_of_graph_carrying_gradients_stay_differentiable():
    w, b, grads = _grads(create_graph=True)
    total = 0 + grads + grads
    (second,) = bai.grad(total[0].sum(), [b])
    assert second.item() == pytest.approx(4.0)  # d/db of 2 * sum(2w + b)


def test_mismatched_or_wrong_operands_are_refused_with_the_fix():
    _, _, grads = _grads()
    with pytest.raises(bai.ArgumentError, match=r"have 2 and 1 gradients"):
        grads + grads[:1]
    with pytest.raises(bai.ArgumentError, match="cannot combine gradients with str"):
        grads + "a"
    with pytest.raises(bai.ArgumentError, match="scales by a number, got Gradients"):
        grads * grads
    assert "Tensor(shape=(2,), dtype=float64)" in repr(grads)


def test_apply_gradients_takes_an_averaged_gradients_value():
    w = bai.tensor([1.0, 2.0], dtype=bai.float64, requires_grad=True)
    optimizer = bai.optim.SGD([w], lr=0.1)
    grads = bai.grad((w * w).sum(), [w]) + bai.grad((3 * w).sum(), [w])
    optimizer.apply_gradients(grads / 2)
    np.testing.assert_allclose(w.numpy(), [1.0 - 0.1 * 2.5, 2.0 - 0.1 * 3.5])


def test_grad_leaves_the_graph_below_its_inputs_untouched():
    """grad() runs (and frees) only the rules between the outputs and its inputs, as PyTorch:
    the first-order inner step of MAML takes grad with respect to cloned weights, and the
    query loss later backpropagates through the same clone to the original."""
    w = bai.tensor([1.0, -2.0], dtype=bai.float64, requires_grad=True)
    fast = w * 3.0  # a graph value computed from w
    (inner,) = bai.grad((fast * fast).sum(), [fast])  # no retain_graph
    np.testing.assert_allclose(inner.numpy(), [6.0, -12.0])
    (outer,) = bai.grad(fast.sum(), [w])  # still possible: 'mul' by 3 was not freed
    np.testing.assert_allclose(outer.numpy(), [3.0, 3.0])

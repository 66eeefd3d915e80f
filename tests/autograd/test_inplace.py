"""In-place ops and version counters: never a silently wrong gradient."""

import numpy as np
import pytest
import torch

import buildingai as bai


def test_in_place_ops_without_grad_modify_the_memory():
    x = bai.tensor(np.arange(4.0))
    data = x.array
    x.add_(1.0).mul_(2.0).sub_(1.0).div_(2.0)
    assert x.array is data
    np.testing.assert_allclose(x.numpy(), (np.arange(4.0) + 1) * 2 / 2 - 0.5)
    assert x.version == 4
    x.zero_()
    assert x.numpy().sum() == 0
    x.fill_(3.0)
    x.copy_(bai.tensor(np.array([1.0, 2.0, 3.0, 4.0])))
    np.testing.assert_allclose(x.numpy(), [1, 2, 3, 4])


def test_recorded_in_place_chain_matches_torch():
    values = np.array([0.5, -1.0, 2.0])
    x = bai.tensor(values, requires_grad=True)
    y = x * 2.0
    y.add_(x)
    y.mul_(x)
    y.sub_(1.0, alpha=2.0)
    (y * y).sum().backward()

    tx = torch.tensor(values, requires_grad=True)
    ty = tx * 2.0
    ty.add_(tx)
    ty.mul_(tx)
    ty.sub_(1.0, alpha=2.0)
    (ty * ty).sum().backward()
    np.testing.assert_allclose(y.numpy(), ty.detach().numpy())
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy())


def test_modifying_a_saved_input_raises_naming_both_ops():
    x = bai.tensor([1.0, 2.0], requires_grad=True)
    w = bai.tensor([3.0, 4.0])
    y = x * w  # mul saves w to compute x's gradient
    w.add_(1.0)
    with pytest.raises(bai.AutogradError, match=r"\[mul\] backward needs an input.*'add_'"):
        y.sum().backward()


def test_modifying_a_saved_output_raises():
    x = bai.tensor([1.0, 2.0], requires_grad=True)
    y = x.exp()
    y.mul_(2.0)
    with pytest.raises(bai.AutogradError, match=r"\[exp\] backward needs the output.*'mul_'"):
        y.sum().backward()


def test_modifying_through_a_view_is_detected():
    x = bai.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    w = bai.tensor([[1.0, 1.0], [1.0, 1.0]])
    y = x * w
    flat = w.reshape(4)  # shares memory and version counter with w
    flat.add_(1.0)
    with pytest.raises(bai.AutogradError, match="modified in place"):
        y.sum().backward()


def test_leaf_requiring_grad_is_protected_outside_no_grad():
    p = bai.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(bai.AutogradError, match=r"\[add_\] a leaf tensor that requires grad"):
        p.add_(1.0)
    with bai.no_grad():
        p.sub_(0.5)
    np.testing.assert_allclose(p.numpy(), [0.5, 1.5])


def test_view_of_tensor_requiring_grad_cannot_be_modified_while_recording():
    x = bai.tensor([1.0, 2.0], requires_grad=True)
    hidden = x * 1.0
    view = hidden.reshape(2, 1)
    with pytest.raises(bai.AutogradError, match="is a view of another tensor"):
        view.mul_(2.0)


def test_in_place_shape_change_is_refused():
    x = bai.tensor([1.0, 2.0], requires_grad=True) * 1.0
    with pytest.raises(
        bai.ShapeError,
        match=r"\[add_\] .* shape \(2,\), but broadcasting it with \(3, 1\) gives \(3, 2\)",
    ):
        x.add_(bai.zeros(3, 1))


def test_augmented_assignment_uses_in_place_ops():
    x = bai.tensor([1.0, 2.0])
    alias = x
    x += 1.0
    x *= 2.0
    assert alias is x
    np.testing.assert_allclose(x.numpy(), [4.0, 6.0])


def test_a_counter_made_after_recording_still_catches_the_change():
    """An op's output gets its version counter when it is first shared or changed: a tensor
    saved for backward before it had one must still be seen to change."""
    x = bai.tensor([1.0, 2.0], requires_grad=True)
    w = bai.tensor([3.0, 4.0]) * 1.0  # an op's output, never shared nor changed yet
    assert w.version == 0
    y = x * w  # saves w at version 0
    w.view(2).add_(1.0)  # the view makes w's counter, the change bumps it
    assert w.version == 1
    with pytest.raises(bai.AutogradError, match=r"\[mul\] backward needs an input.*'add_'"):
        y.sum().backward()


@pytest.mark.parametrize("share", ["view", "detach", "basic index"])
def test_a_counter_made_late_is_shared_both_ways(share):
    x = bai.tensor(np.arange(4.0)) * 1.0
    other = {"view": lambda: x.view(2, 2), "detach": x.detach, "basic index": lambda: x[1:]}[
        share
    ]()
    other.add_(1.0)
    assert x.version == other.version == 1
    x.mul_(2.0)
    assert x.version == other.version == 2


def test_outputs_of_the_short_paths_and_of_apply_count_alike():
    a, b = bai.tensor([[1.0, 2.0]]), bai.tensor([[3.0, 4.0]])
    for out in (a + b, a * 2.0, bai.exp(a), a @ b.T):
        assert out.version == 0
        out.add_(1.0)
        assert out.version == 1 and a.version == 0

"""``tensor.data`` is PyTorch's: a Tensor over the same memory, outside the graph. Updates through it
(``p.data -= lr * p.grad``, ``p.data.add_(...)``, ``p.data.copy_(...)``) change the parameter in
place and leave autograd's bookkeeping intact; ``.array`` is the backend array itself."""

import numpy as np
import pytest
import torch

import buildingai as bai


def _models():
    bai.manual_seed(0)
    ours = bai.nn.Sequential(bai.nn.Linear(4, 5), bai.nn.Tanh(), bai.nn.Linear(5, 2))
    ours = ours.to(dtype=bai.float64)
    theirs = torch.nn.Sequential(torch.nn.Linear(4, 5), torch.nn.Tanh(), torch.nn.Linear(5, 2))
    theirs = theirs.double()
    with torch.no_grad():
        for (_, p), (_, q) in zip(ours.named_parameters(), theirs.named_parameters()):
            q.copy_(torch.from_numpy(p.numpy()))
    return ours, theirs


def test_hand_written_sgd_through_data_matches_pytorch():
    model, reference = _models()
    data = np.random.default_rng(0).standard_normal((6, 4))
    x, x_ref = bai.tensor(data), torch.from_numpy(data)
    lr = 0.1
    arrays = [p.array for p in model.parameters()]
    for _ in range(3):
        loss = model(x).pow(2).mean()
        model.zero_grad()
        loss.backward()
        for p in model.parameters(): p.data -= lr * p.grad  # noqa: E701 - the snippet verbatim  # fmt: skip

        loss_ref = reference(x_ref).pow(2).mean()
        reference.zero_grad()
        loss_ref.backward()
        for p in reference.parameters(): p.data -= lr * p.grad  # noqa: E701  # fmt: skip
        np.testing.assert_allclose(loss.item(), loss_ref.item(), rtol=1e-12)

    for p, q, array in zip(model.parameters(), reference.parameters(), arrays):
        assert p.array is array  # updated in place: views and optimizer buffers see it
        assert type(p.data) is bai.Tensor and p.is_leaf and p.requires_grad
        assert not p.data.requires_grad and p.data.array is p.array
        np.testing.assert_allclose(p.numpy(), q.detach().numpy(), rtol=1e-12)


@pytest.mark.parametrize("update", ["+=", "-=", "*=", "/="])
def test_every_in_place_array_operator_takes_a_tensor(update):
    p = bai.tensor([1.0, 2.0, 4.0], requires_grad=True)
    other = bai.tensor([2.0, 2.0, 2.0])
    expected = {
        "+=": [3.0, 4.0, 6.0],
        "-=": [-1.0, 0.0, 2.0],
        "*=": [2.0, 4.0, 8.0],
        "/=": [0.5, 1.0, 2.0],
    }[update]
    view = p.data[1:]
    namespace = {"p": p, "other": other}
    exec(f"p.data {update} other", namespace)
    assert type(p.data) is bai.Tensor
    np.testing.assert_array_equal(p.numpy(), expected)
    np.testing.assert_array_equal(view, expected[1:])  # the same memory


def test_an_update_by_a_gradient_with_a_graph_records_nothing():
    p = bai.tensor([1.0, 2.0], dtype=bai.float64, requires_grad=True)
    (grad,) = bai.grad((p * p).sum(), [p], create_graph=True)
    assert grad.requires_grad
    p.data -= 0.5 * grad
    np.testing.assert_array_equal(p.numpy(), [0.0, 0.0])
    assert p.is_leaf and p.grad_fn is None


def test_version_checks_still_guard_saved_tensors_after_data_updates():
    p = bai.tensor([1.0, 2.0], requires_grad=True)
    p.data -= bai.tensor([0.5, 0.5])
    out = (p * p).sum()  # mul saves p
    with bai.no_grad():
        p.mul_(2.0)
    with pytest.raises(bai.AutogradError, match=r"\[mul\] backward needs an input"):
        out.backward()


def test_arrays_and_tensors_mix_as_before():
    a, t = np.array([1.0, 2.0], np.float32), bai.tensor([3.0, 4.0])
    assert isinstance(a * t, bai.Tensor) and isinstance(a - t, bai.Tensor)
    np.testing.assert_array_equal((a - t).numpy(), [-2.0, -2.0])
    np.testing.assert_array_equal((a < t).numpy(), [True, True])
    assert (np.float32(2.0) * t).dtype == np.float32
    with pytest.raises(TypeError, match=r"buildingai.exp\(x\)"):
        np.exp(t)


def test_pytorch_style_updates_through_data_match_pytorch():
    model, reference = _models()
    source = [np.full(p.shape, 0.25) for p in model.parameters()]
    arrays = [p.array for p in model.parameters()]
    for p, q, values in zip(model.parameters(), reference.parameters(), source):
        p.data.copy_(bai.tensor(values))
        q.data.copy_(torch.from_numpy(values))
    data = np.random.default_rng(1).standard_normal((6, 4))
    lr = 0.1
    for net, x in ((model, bai.tensor(data)), (reference, torch.from_numpy(data))):
        loss = net(x).pow(2).mean()
        net.zero_grad()
        loss.backward()
        for p in net.parameters():
            p.data.add_(p.grad, alpha=-lr)
    for p, q, array in zip(model.parameters(), reference.parameters(), arrays):
        assert p.array is array
        np.testing.assert_allclose(p.numpy(), q.detach().numpy(), rtol=1e-12)


def test_data_assignment_takes_the_other_tensors_memory():
    p = bai.nn.Parameter(bai.zeros(3))
    replacement = bai.tensor([1.0, 2.0, 3.0])
    p.data = replacement
    assert p.array is replacement.array and p.requires_grad and p.is_leaf
    p.data = np.array([4.0, 5.0, 6.0], np.float32)
    np.testing.assert_array_equal(p.numpy(), [4.0, 5.0, 6.0])


def test_data_is_outside_the_graph_and_shares_no_version_counter():
    p = bai.tensor([1.0, 2.0], requires_grad=True)
    out = (p * p).sum()
    p.data.mul_(1.0)  # as in PyTorch, a write through .data is invisible to autograd
    out.backward()
    np.testing.assert_array_equal(p.grad.numpy(), [2.0, 4.0])
    assert p.data.grad_fn is None and not p.data.requires_grad

"""Gradient checkpointing: the gradients equal the plain run's bit for bit."""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest
import torch

import buildingai as bai
from buildingai import nn
from buildingai.checkpoint import checkpoint, checkpoint_sequential
from buildingai.errors import ArgumentError, AutogradError


def _mlp(width: int = 16, depth: int = 4, dropout: float = 0.3) -> nn.Sequential:
    blocks = [
        nn.Sequential(nn.Linear(width, width), nn.Tanh(), nn.Dropout(dropout)) for _ in range(depth)
    ]
    return nn.Sequential(*blocks)


def _encoder(depth: int = 2) -> nn.Sequential:
    layers = [
        nn.TransformerEncoderLayer(16, 4, 32, dropout=0.1, batch_first=True) for _ in range(depth)
    ]
    return nn.Sequential(*layers)


def _step(model, x: np.ndarray, forward) -> tuple:
    """Loss, input gradient and parameter gradients of one training step from a fixed seed."""
    bai.manual_seed(5)
    for parameter in model.parameters():
        parameter.grad = None
    inputs = bai.tensor(x, requires_grad=True)
    loss = (forward(model, inputs) ** 2).sum()
    loss.backward()
    grads = [p.grad.numpy() for p in model.parameters()]
    return loss.numpy(), inputs.grad.numpy(), grads


def _plain(model, h):
    for layer in model:
        h = layer(h)
    return h


def _each_checkpointed(model, h):
    for layer in model:
        h = checkpoint(layer, h)
    return h


def _assert_identical(expected: tuple, actual: tuple) -> None:
    loss, input_grad, grads = expected
    np.testing.assert_array_equal(actual[0], loss)
    np.testing.assert_array_equal(actual[1], input_grad)
    assert len(actual[2]) == len(grads)
    for want, got in zip(grads, actual[2]):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize(
    "make, shape", [(_mlp, (8, 16)), (_encoder, (2, 5, 16))], ids=["mlp", "transformer"]
)
def test_gradients_are_bit_identical_with_dropout_in_training_mode(make, shape):
    model = make()
    model.train()
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    plain = _step(model, x, _plain)
    checkpointed = _step(model, x, _each_checkpointed)
    _assert_identical(plain, checkpointed)
    # the dropout masks really differ between draws: a different seed changes the loss
    bai.manual_seed(6)
    assert not np.array_equal((_plain(model, bai.tensor(x)) ** 2).sum().numpy(), plain[0])


def test_parameter_gradients_come_from_grad_too():
    model = _mlp(dropout=0.0)
    x = bai.tensor(np.random.default_rng(1).standard_normal((4, 16)).astype(np.float32))
    params = list(model.parameters())
    plain = bai.grad((_plain(model, x) ** 2).sum(), params)
    checkpointed = bai.grad((_each_checkpointed(model, x) ** 2).sum(), params)
    for want, got in zip(plain, checkpointed):
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    assert all(p.grad is None for p in params)


def test_checkpoint_inside_checkpoint():
    model = _mlp()
    x = np.random.default_rng(2).standard_normal((8, 16)).astype(np.float32)

    def nested(model, h):
        def outer(h):
            h = checkpoint(model[0], h)
            h = model[1](h)
            return checkpoint(lambda t: model[3](checkpoint(model[2], t)), h)

        return checkpoint(outer, h)

    _assert_identical(_step(model, x, _plain), _step(model, x, nested))


def test_segment_with_an_in_place_op():
    linear = nn.Linear(16, 16)

    def block(h):
        out = linear(h)
        out.mul_(0.5)
        out.add_(1.0)
        return out.tanh()

    x = np.random.default_rng(3).standard_normal((8, 16)).astype(np.float32)
    plain = _step(linear, x, lambda m, h: block(h))
    _assert_identical(plain, _step(linear, x, lambda m, h: checkpoint(block, h)))


def test_modifying_an_input_in_place_after_the_call_is_caught():
    linear = nn.Linear(4, 4)
    h = linear(bai.tensor(np.ones((2, 4), np.float32)))
    out = checkpoint(lambda t: t.tanh(), h)
    with bai.no_grad():
        h.add_(1.0)
    with pytest.raises(AutogradError, match="checkpoint"):
        out.sum().backward()


def test_second_derivatives_through_a_segment():
    model = _mlp(dropout=0.0)
    x_data = np.random.default_rng(4).standard_normal((4, 16)).astype(np.float64)
    model = model.to(dtype=bai.float64)

    def derivatives(forward):
        x = bai.tensor(x_data, requires_grad=True)
        params = [x, *model.parameters()]
        loss = (forward(model, x) ** 2).sum()
        first = bai.grad(loss, params, create_graph=True)
        penalty = sum((g * g).sum() for g in first)
        return [g.numpy() for g in first], [g.numpy() for g in bai.grad(penalty, params)]

    plain_first, plain_second = derivatives(_plain)
    first, second = derivatives(_each_checkpointed)
    for want, got in zip(plain_first, first):
        np.testing.assert_array_equal(got, want)
    # the second backward sums a parameter's many contributions in another order (the graph
    # holds the recomputed forward besides the checkpoint nodes): equal to rounding
    for want, got in zip(plain_second, second):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)


def test_second_derivative_of_a_nested_segment():
    x = bai.tensor(np.linspace(-1.0, 1.0, 5), requires_grad=True)
    y = checkpoint(lambda t: checkpoint(lambda u: u.sin(), t) * t, x)  # x sin x
    (first,) = bai.grad(y.sum(), x, create_graph=True)  # sin x + x cos x
    (second,) = bai.grad(first.sum(), x)  # 2 cos x - x sin x
    expected = 2 * np.cos(x.numpy()) - x.numpy() * np.sin(x.numpy())
    np.testing.assert_allclose(second.numpy(), expected, rtol=1e-12)


@pytest.mark.parametrize("segments", [1, 2, 3, 8])
def test_checkpoint_sequential_matches_the_plain_run(segments):
    model = nn.Sequential(*[layer for block in _mlp(depth=4) for layer in block])  # 12 modules
    x = np.random.default_rng(5).standard_normal((8, 16)).astype(np.float32)
    plain = _step(model, x, _plain)
    _assert_identical(plain, _step(model, x, lambda m, h: checkpoint_sequential(m, segments, h)))


def test_checkpoint_sequential_matches_pytorch_in_float64():
    ours = nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 8), nn.GELU(), nn.Linear(8, 3))
    ours = ours.to(dtype=bai.float64)
    theirs = torch.nn.Sequential(
        torch.nn.Linear(6, 8),
        torch.nn.Tanh(),
        torch.nn.Linear(8, 8),
        torch.nn.GELU(),
        torch.nn.Linear(8, 3),
    ).double()
    with torch.no_grad():
        for mine, reference in zip(ours.parameters(), theirs.parameters()):
            reference.copy_(torch.from_numpy(mine.numpy()))
    x = np.random.default_rng(6).standard_normal((5, 6))
    x_ours, x_theirs = bai.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    out = checkpoint_sequential(ours, 2, x_ours)
    expected = torch.utils.checkpoint.checkpoint_sequential(
        theirs, 2, x_theirs, use_reentrant=False
    )
    np.testing.assert_allclose(out.numpy(), expected.detach().numpy(), rtol=1e-12)
    out.tanh().sum().backward()
    expected.tanh().sum().backward()
    np.testing.assert_allclose(x_ours.grad.numpy(), x_theirs.grad.numpy(), rtol=1e-10)
    for mine, reference in zip(ours.parameters(), theirs.parameters()):
        np.testing.assert_allclose(mine.grad.numpy(), reference.grad.numpy(), rtol=1e-10)


def test_checkpoint_sequential_leaves_the_last_segment_unrecomputed():
    calls = []

    def counted(name):
        def layer(h):
            calls.append(name)
            return h * 2.0

        return layer

    x = bai.tensor(np.ones(3), requires_grad=True)
    out = checkpoint_sequential([counted(i) for i in range(4)], 2, x)
    assert calls == [0, 1, 2, 3]
    out.sum().backward()
    assert calls == [0, 1, 2, 3, 0, 1]  # only the first segment runs again
    np.testing.assert_array_equal(x.grad.numpy(), np.full(3, 16.0))


def test_random_state_after_backward_is_the_one_before_it():
    dropout = nn.Dropout(0.5)
    x = bai.tensor(np.ones(64), requires_grad=True)
    out = checkpoint(dropout, x)
    state = bai.get_rng_state()["buildingai"]
    out.sum().backward()
    assert bai.get_rng_state()["buildingai"] == state
    np.testing.assert_array_equal(x.grad.numpy(), out.numpy())  # grad = mask / keep = out / x


def test_without_grad_the_function_just_runs():
    x = bai.tensor(np.ones(3))
    out = checkpoint(lambda t: t * 3.0, x)
    assert not out.requires_grad
    with bai.no_grad():
        out = checkpoint(lambda t: t * 3.0, bai.tensor(np.ones(3), requires_grad=True))
    assert not out.requires_grad and out._node is None


def test_errors_name_the_problem():
    x = bai.tensor(np.ones(3), requires_grad=True)
    with pytest.raises(ArgumentError, match=r"\[checkpoint\] the function must be callable, got"):
        checkpoint(x, x)
    with pytest.raises(ArgumentError, match=r"needs at least one Tensor argument, got int"):
        checkpoint(lambda n: x * n, 3)
    with pytest.raises(ArgumentError, match=r"must return a Tensor, got tuple"):
        checkpoint(lambda t: (t * 2.0, t), x)
    with pytest.raises(ArgumentError, match=r"segments must be a positive int, got 0"):
        checkpoint_sequential([lambda t: t], 0, x)
    with pytest.raises(ArgumentError, match=r"cannot split 2 functions into 3 segments"):
        checkpoint_sequential([lambda t: t, lambda t: t], 3, x)


def test_captured_tensors_and_keyword_arguments_get_their_gradients():
    linear = nn.Linear(4, 4)
    x_data = np.random.default_rng(7).standard_normal((3, 4)).astype(np.float32)

    def run(wrap):
        x = bai.tensor(x_data, requires_grad=True)
        linear.weight.grad = linear.bias.grad = None
        hidden = linear(x)  # read inside the segment by closure, and again outside it
        scale = (x * x).sum(dim=0)

        def segment(t, *, weight):
            return (t * hidden).tanh() * weight

        out = wrap(segment, x, weight=scale) + hidden
        (out**2).sum().backward()
        return x.grad.numpy(), linear.weight.grad.numpy(), linear.bias.grad.numpy()

    plain = run(lambda function, *args, **kwargs: function(*args, **kwargs))
    checkpointed = run(checkpoint)
    # x's five contributions (three through the segment) are summed in another order
    np.testing.assert_allclose(checkpointed[0], plain[0], rtol=1e-6)
    # the parameters' gradients pass the same sums in the same order
    np.testing.assert_array_equal(checkpointed[1], plain[1])
    np.testing.assert_array_equal(checkpointed[2], plain[2])


def test_backward_frees_the_saved_inputs_without_waiting_for_the_garbage_collector():
    linear = nn.Linear(8, 8)
    hidden = linear(bai.tensor(np.ones((4, 8), np.float32)))
    memory = weakref.ref(hidden.data)
    out = checkpoint(lambda t: t.tanh(), hidden)
    del hidden
    gc.disable()
    try:
        out.sum().backward()
        del out
        assert memory() is None
    finally:
        gc.enable()

"""In-place updates inside a compiled training step equal eager execution over several calls:
a buffer (or a parameter, under ``no_grad``) changed by a chain of in-place ops, in every
spelling, carries its value from call to call. What a compiled step cannot write back (a view
of a buffer or parameter, an input of the step) is refused with the op's name; without
``fullgraph`` such a step runs eagerly, and the refused trace leaves every tensor as it was."""

import warnings

import numpy as np
import pytest

import buildingai as bai
from buildingai import TensorSpec, float32, nn
from buildingai.graph import CompileWarning, GraphError


def _detached_alias(buffer, y):
    alias = buffer.detach()  # shares the buffer's memory
    buffer.mul_(0.9)
    alias.add_(y)


def _result_then_update(buffer, y):
    scaled = buffer.mul_(0.9)  # the result of an in-place op is the buffer itself
    scaled.add_(y, alpha=0.1)


def _separate_statements(buffer, y):
    buffer.mul_(0.9)
    buffer.add_(y, alpha=0.1)


# each: how the step updates the buffer (4,) from this batch's mean output y (4,)
BUFFER_UPDATES = {
    "mul_then_add": lambda b, y: b.mul_(0.9).add_(y, alpha=0.1),
    "add_then_mul": lambda b, y: b.add_(y).mul_(0.5),
    "result_then_update": _result_then_update,
    "separate_statements": _separate_statements,
    "chained_three_times": lambda b, y: b.mul_(0.9).add_(y).mul_(0.5),
    "copy": lambda b, y: b.copy_(b * 0.5 + y),
    "copy_then_add": lambda b, y: b.copy_(y).add_(1.0),
    "add_then_clamp": lambda b, y: b.add_(y).clamp_(-3.0, 3.0),
    "fill_then_add": lambda b, y: b.fill_(2.0).add_(y),
    "operator": lambda b, y: b.__imul__(0.5).__iadd__(y),
    "detached_alias": _detached_alias,
}


class Tracking(nn.Module):
    """A linear layer whose buffer ``running`` (4,) follows its outputs, updated by
    ``update(running, y)``; the loss reads the buffer after the update."""

    def __init__(self, update) -> None:
        super().__init__()
        self.linear = nn.Linear(4, 4)
        self.register_buffer("running", bai.tensor(np.arange(4, dtype=np.float32)))
        self.update = update

    def forward(self, x):  # (N, 4) -> ()
        y = self.linear(x)
        with bai.no_grad():
            self.update(self.running, y.mean(0).detach())
        return (y * self.running).sum()


def _training_step(model, optimizer, parameter_update=None):
    """One training step of ``model``; ``parameter_update`` then writes the linear layer's
    weight in place under ``no_grad``, as an optimizer does."""

    def step(x):
        optimizer.zero_grad()
        loss = model(x)
        loss.backward()
        optimizer.step()
        if parameter_update is not None:
            with bai.no_grad():
                parameter_update(model.linear.weight)
        return loss

    return step


def _train(update, compiled, parameter_update=None, fullgraph=True, calls=3):
    """Buffer, weight and losses after ``calls`` steps, eager or compiled."""
    bai.manual_seed(0)
    model = Tracking(update)
    step = _training_step(model, bai.optim.SGD(model.parameters(), lr=0.01), parameter_update)
    run = bai.compile(step, fullgraph=fullgraph) if compiled else step
    x = bai.tensor(np.linspace(-1.0, 1.0, 8, dtype=np.float32).reshape(2, 4))
    losses = [run(x).item() for _ in range(calls)]
    return model.running.numpy().copy(), model.linear.weight.numpy().copy(), losses


def _assert_same(eager, compiled):
    for expected, actual in zip(eager, compiled):
        np.testing.assert_allclose(actual, expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("spelling", sorted(BUFFER_UPDATES))
def test_chained_in_place_updates_of_a_buffer_equal_eager(spelling):
    update = BUFFER_UPDATES[spelling]
    _assert_same(_train(update, compiled=False), _train(update, compiled=True))


def test_the_buffer_carries_across_calls():
    update = BUFFER_UPDATES["mul_then_add"]
    for calls in (1, 2, 5):
        _assert_same(
            _train(update, compiled=False, calls=calls), _train(update, compiled=True, calls=calls)
        )


def test_a_compiled_step_with_a_signature_updates_the_buffer_as_eager():
    def run(compiled):
        bai.manual_seed(0)
        model = Tracking(BUFFER_UPDATES["mul_then_add"])
        step = _training_step(model, bai.optim.SGD(model.parameters(), lr=0.01))
        if compiled:
            step = bai.compile(step, input_signature=[TensorSpec((None, 4), float32)])
        for batch in (2, 2, 3):
            step(bai.tensor(np.linspace(-1.0, 1.0, 4 * batch, dtype=np.float32).reshape(-1, 4)))
        return model.running.numpy()

    np.testing.assert_allclose(run(True), run(False), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(
    "parameter_update",
    [
        lambda w: w.mul_(0.99).add_(0.01),  # decay towards a value, as some optimizers do
        lambda w: w.add_(0.01).mul_(0.99),
        lambda w: w.copy_(w * 0.5),
    ],
    ids=["mul_then_add", "add_then_mul", "copy"],
)
def test_chained_in_place_updates_of_a_parameter_under_no_grad_equal_eager(parameter_update):
    keep = BUFFER_UPDATES["copy"]
    _assert_same(
        _train(keep, compiled=False, parameter_update=parameter_update),
        _train(keep, compiled=True, parameter_update=parameter_update),
    )


VIEW_UPDATES = {
    "buffer_element": (lambda b, y: b[0].add_(1.0), None),
    "buffer_slice": (lambda b, y: b[:2].mul_(2.0).add_(y[:2]), None),
    "parameter_row": (BUFFER_UPDATES["copy"], lambda w: w[0].add_(1.0)),
}


@pytest.mark.parametrize("spelling", sorted(VIEW_UPDATES))
def test_writing_into_a_view_of_a_buffer_or_parameter_is_refused(spelling):
    update, parameter_update = VIEW_UPDATES[spelling]
    with pytest.raises(GraphError, match=r"'(add_|mul_)' .*writes into a view"):
        _train(update, compiled=True, parameter_update=parameter_update)


@pytest.mark.parametrize("spelling", sorted(VIEW_UPDATES))
def test_without_fullgraph_a_refused_view_update_runs_eagerly_and_equals_eager(spelling):
    update, parameter_update = VIEW_UPDATES[spelling]
    eager = _train(update, compiled=False, parameter_update=parameter_update)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CompileWarning)
        compiled = _train(update, compiled=True, parameter_update=parameter_update,
                          fullgraph=False)  # fmt: skip
    _assert_same(eager, compiled)  # the refused traces wrote nothing into the model


def test_writing_into_an_input_of_the_step_is_refused():
    linear = nn.Linear(3, 1)
    optimizer = bai.optim.SGD(linear.parameters(), lr=0.1)

    def step(x):
        optimizer.zero_grad()
        x.mul_(2.0)  # eager execution changes the caller's tensor
        loss = linear(x).sum()
        loss.backward()
        optimizer.step()
        return loss

    with pytest.raises(GraphError, match=r"'mul_' writes into an input of the step"):
        bai.compile(step, fullgraph=True)(bai.tensor(np.ones((2, 3), dtype=np.float32)))


def test_a_trace_that_fails_after_updating_a_buffer_leaves_it_as_it_was():
    linear = nn.Linear(3, 1)
    optimizer = bai.optim.SGD(linear.parameters(), lr=0.1)
    counts = bai.zeros(3)

    def step(x):
        optimizer.zero_grad()
        loss = linear(x).sum()
        with bai.no_grad():
            counts.add_(1.0)
        if loss.item() > -1e9:  # a branch on a tensor value: the trace is refused
            loss.backward()
        optimizer.step()
        return loss

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CompileWarning)
        compiled = bai.compile(step)
        for _ in range(3):
            compiled(bai.tensor(np.ones((2, 3), dtype=np.float32)))
    np.testing.assert_array_equal(counts.numpy(), [3.0, 3.0, 3.0])  # one per call, as eager

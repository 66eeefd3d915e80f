"""The recurrent cells' step ops (``ops/rnn_cells.py``, ``ops/rnn_cell_step.py``): values,
gradients and second derivatives against PyTorch's cells in float64, a loop of steps against
PyTorch's, the Elman step against its products and ``rnn_cell``, and the number of ops one step
dispatches."""

from __future__ import annotations

import numpy as np
import pytest

import buildingai as bai
from buildingai.autograd.dispatch import DispatchMode, dispatch_mode
from buildingai.errors import ArgumentError, ShapeError
from buildingai.nn import functional as F
from buildingai.nn.rnn import GRUCell, LSTMCell, RNNCell
from buildingai.ops.rnn_cell_step import RNN_CELL_STEP
from buildingai.ops.rnn_cells import GRU_CELL, LSTM_CELL, RNN_CELL

from ..helpers import check_op

torch = pytest.importorskip("torch")

BATCH, INPUT, HIDDEN = 3, 4, 5


def _lstm_reference(gates_x, gates_h, c, *biases):
    i, f, g, o = (gates_x + gates_h + sum(biases)).chunk(4, dim=1)
    c_next = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
    return torch.cat([torch.sigmoid(o) * torch.tanh(c_next), c_next], dim=1)


def _gru_reference(gates_x, gates_h, h):
    x_r, x_z, x_n = gates_x.chunk(3, dim=1)
    h_r, h_z, h_n = gates_h.chunk(3, dim=1)
    r, z = torch.sigmoid(x_r + h_r), torch.sigmoid(x_z + h_z)
    n = torch.tanh(x_n + r * h_n)
    return (1 - z) * n + z * h


@pytest.mark.parametrize("bias", [False, True])
def test_lstm_cell_against_pytorch(bias):
    biases = [(4 * HIDDEN,)] * 2 if bias else []
    check_op(
        LSTM_CELL,
        (BATCH, 4 * HIDDEN),
        (BATCH, 4 * HIDDEN),
        (BATCH, HIDDEN),
        *biases,
        torch_fn=_lstm_reference,
        gradgrad=True,
    )


def test_gru_cell_against_pytorch():
    check_op(
        GRU_CELL,
        (BATCH, 3 * HIDDEN),
        (BATCH, 3 * HIDDEN),
        (BATCH, HIDDEN),
        torch_fn=_gru_reference,
        gradgrad=True,
    )


@pytest.mark.parametrize("nonlinearity", ["tanh", "relu"])
def test_rnn_cell_against_pytorch(nonlinearity):
    act = torch.tanh if nonlinearity == "tanh" else torch.relu
    check_op(
        lambda x, h, *biases: RNN_CELL(x, h, *biases, nonlinearity=nonlinearity),
        (BATCH, HIDDEN),
        (BATCH, HIDDEN),
        (HIDDEN,),
        (HIDDEN,),
        torch_fn=lambda x, h, b_ih, b_hh: act(x + h + b_ih + b_hh),
        gradgrad=nonlinearity == "tanh",  # relu's second derivative is zero
    )


@pytest.mark.parametrize("accelerated", [False, True])
@pytest.mark.parametrize("nonlinearity", ["tanh", "relu"])
def test_elman_step_equals_its_products_and_rnn_cell(accelerated, nonlinearity):
    """One op gives what the two products and ``rnn_cell`` give, sum for sum (float32), with
    its kernel or its record; and the same gradients."""
    rng = np.random.default_rng(5)
    shapes = [(7, INPUT), (7, HIDDEN), (HIDDEN, INPUT), (HIDDEN, HIDDEN), (HIDDEN,), (HIDDEN,)]
    arrays = [rng.standard_normal(shape).astype(np.float32) for shape in shapes]
    with bai.accel.enabled(accelerated):
        results = []
        for composite in (False, True):
            x, h, w_ih, w_hh, b_ih, b_hh = (bai.tensor(a, requires_grad=True) for a in arrays)
            if composite:
                out = RNN_CELL(F.linear(x, w_ih), F.linear(h, w_hh), b_ih, b_hh,
                               nonlinearity=nonlinearity)  # fmt: skip
            else:
                out = RNN_CELL_STEP(x, h, w_ih, w_hh, b_ih, b_hh, nonlinearity=nonlinearity)
            grads = bai.grad((out * out).sum(), [x, h, w_ih, w_hh, b_ih, b_hh])
            results.append([out.numpy(), *(g.numpy() for g in grads)])
    np.testing.assert_array_equal(results[0][0], results[1][0])
    for ours, theirs in zip(*results):
        np.testing.assert_allclose(ours, theirs, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("accelerated", [False, True])
def test_elman_step_multiplies_in_the_math_precision_in_force(accelerated):
    """Under set_float32_matmul_precision("medium") the step's products round their operands
    to bfloat16 first, as ``linear``'s do, with the kernel or the record."""
    rng = np.random.default_rng(6)
    shapes = [(4, INPUT), (4, HIDDEN), (HIDDEN, INPUT), (HIDDEN, HIDDEN)]
    x, h, w_ih, w_hh = (bai.tensor(rng.standard_normal(s).astype(np.float32)) for s in shapes)
    with bai.accel.enabled(accelerated):
        bai.set_float32_matmul_precision("medium")
        try:
            step = RNN_CELL_STEP(x, h, w_ih, w_hh, nonlinearity="tanh")
            products = RNN_CELL(F.linear(x, w_ih), F.linear(h, w_hh), nonlinearity="tanh")
        finally:
            bai.set_float32_matmul_precision("highest")
        exact = RNN_CELL_STEP(x, h, w_ih, w_hh, nonlinearity="tanh")
    np.testing.assert_allclose(step.numpy(), products.numpy(), rtol=1e-6, atol=1e-6)
    assert np.abs(step.numpy() - exact.numpy()).max() > 1e-4  # the rounding shows


def test_elman_step_rejects_operands_that_do_not_fit():
    x, h = bai.zeros((2, 3)), bai.zeros((2, 4))
    with pytest.raises(
        ShapeError, match=r"\[rnn_cell_step\] x \(2, 3\), h \(2, 4\), w_ih \(4, 2\)"
    ):
        RNN_CELL_STEP(x, h, bai.zeros((4, 2)), bai.zeros((4, 4)), nonlinearity="tanh")
    with pytest.raises(ShapeError, match=r"\[rnn_cell_step\] expected the biases"):
        RNN_CELL_STEP(x, h, bai.zeros((4, 3)), bai.zeros((4, 4)), bai.zeros(4), bai.zeros(3),
                      nonlinearity="tanh")  # fmt: skip
    with pytest.raises(ArgumentError, match=r"\[rnn_cell_step\] nonlinearity"):
        RNN_CELL_STEP(x, h, bai.zeros((4, 3)), bai.zeros((4, 4)), nonlinearity="sigmoid")


def test_a_third_derivative_matches_pytorch():
    """The gradient ops' backwards are Tensor ops: derivatives of every order are recorded."""
    rng = np.random.default_rng(2)
    arrays = [rng.uniform(-1, 1, shape) for shape in [(2, 12), (2, 12), (2, 4)]]
    results = []
    for lib, fn, grad in (
        (bai, GRU_CELL, bai.grad),
        (torch, _gru_reference, torch.autograd.grad),
    ):
        inputs = [lib.tensor(a, requires_grad=True) for a in arrays]
        first = grad(fn(*inputs).sum(), inputs, create_graph=True)
        second = grad(sum((g * g).sum() for g in first), inputs, create_graph=True)
        third = grad(sum((g**3).sum() for g in second), inputs)
        results.append([np.asarray(t.detach() if lib is torch else t.numpy()) for t in third])
    for ours, theirs in zip(*results):
        np.testing.assert_allclose(ours, theirs, rtol=1e-9, atol=1e-10)


CELLS = {
    "LSTMCell": (LSTMCell, torch.nn.LSTMCell),
    "GRUCell": (GRUCell, torch.nn.GRUCell),
    "RNNCell": (RNNCell, torch.nn.RNNCell),
}


@pytest.mark.parametrize("kind", sorted(CELLS))
def test_a_loop_of_steps_matches_pytorch(kind):
    ours_class, theirs_class = CELLS[kind]
    torch.manual_seed(0)
    theirs = theirs_class(INPUT, HIDDEN).double()
    ours = ours_class(INPUT, HIDDEN, dtype=np.float64)
    ours.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})
    x = np.random.default_rng(1).standard_normal((6, BATCH, INPUT))
    results = []
    for lib, layer in ((bai, ours), (torch, theirs)):
        inputs = [lib.tensor(x, requires_grad=True), *layer.parameters()]
        state, outputs = None, []
        for t in range(x.shape[0]):
            state = layer(inputs[0][t], state)
            outputs.append(state[0] if isinstance(state, tuple) else state)
        total = (lib.stack(outputs) ** 2).sum()
        if lib is bai:
            grads = bai.grad(total, inputs)
            results.append([total.numpy(), *(g.numpy() for g in grads)])
        else:
            grads = torch.autograd.grad(total, inputs)
            results.append([total.detach().numpy(), *(g.numpy() for g in grads)])
    for ours_value, theirs_value in zip(*results):
        np.testing.assert_allclose(ours_value, theirs_value, rtol=1e-10, atol=1e-12)


class _Names(DispatchMode):
    def __init__(self) -> None:
        self.names = []

    def before_op(self, op, inputs, attrs) -> None:
        self.names.append(op.name)


@pytest.mark.parametrize(
    "kind, step_op, grad_op, products, most",
    [
        ("LSTMCell", "lstm_cell", "lstm_cell_grad", 2, 5),
        ("GRUCell", "gru_cell", "gru_cell_grad", 2, 3),
        ("RNNCell", "rnn_cell_step", "rnn_cell_grad", 0, 1),  # the products inside
    ],
)
def test_one_step_is_one_op_after_its_products(kind, step_op, grad_op, products, most):
    layer = CELLS[kind][0](INPUT, HIDDEN)
    x = bai.Tensor(np.ones((BATCH, INPUT), np.float32))
    h = bai.zeros((BATCH, HIDDEN))
    names = _Names()
    with dispatch_mode(names):
        state = layer(x, (h, h) if kind == "LSTMCell" else h)
    assert names.names.count(step_op) == 1
    assert names.names.count("linear") == products
    assert len(names.names) <= most, names.names
    names.names.clear()
    out = state[0] if isinstance(state, tuple) else state
    with dispatch_mode(names):
        bai.grad(out.sum(), list(layer.parameters()))
    assert names.names.count(grad_op) == 1


def test_cells_reject_states_that_do_not_fit():
    gates = bai.zeros((2, 8))
    with pytest.raises(ShapeError, match=r"\[lstm_cell\] gates_x \(2, 8\).*c \(2, 3\)"):
        LSTM_CELL(gates, gates, bai.zeros((2, 3)))
    with pytest.raises(ArgumentError, match=r"\[rnn_cell\] nonlinearity"):
        RNN_CELL(gates, gates, nonlinearity="sigmoid")
    with pytest.raises(ShapeError, match=r"\[gru_cell\]"):
        F.gru_cell(bai.zeros((2, 3)), bai.zeros((2, 4)), bai.zeros((12, 3)), bai.zeros((8, 4)))


@pytest.mark.parametrize("kind", ["lstm_cell", "rnn_tanh_cell", "gru_cell"])
def test_one_bias_alone_goes_with_its_product(kind):
    """The cell ops take both biases or neither: with one None, the other joins its product."""
    gates = {"lstm_cell": 4, "rnn_tanh_cell": 1, "gru_cell": 3}[kind]
    rng = np.random.default_rng(4)
    shapes = [(BATCH, INPUT), (BATCH, HIDDEN), (BATCH, HIDDEN)]
    shapes += [(gates * HIDDEN, INPUT), (gates * HIDDEN, HIDDEN), (gates * HIDDEN,)]
    arrays = [rng.uniform(-1, 1, shape) for shape in shapes]
    results = []
    for lib, fn in ((bai, getattr(F, kind)), (torch, getattr(torch, kind))):
        x, h, c, w_ih, w_hh, b_ih = (lib.tensor(a, requires_grad=True) for a in arrays)
        state = (h, c) if kind == "lstm_cell" else h
        out = fn(x, state, w_ih, w_hh, b_ih, None)
        out = out[0] * out[1] if kind == "lstm_cell" else out
        grad = bai.grad if lib is bai else torch.autograd.grad
        inputs = [x, h, w_ih, w_hh, b_ih] + ([c] if kind == "lstm_cell" else [])
        grads = grad((out * out).sum(), inputs)
        results.append([np.asarray(g.detach() if lib is torch else g.numpy()) for g in grads])
    for ours, theirs in zip(*results):
        np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-12)

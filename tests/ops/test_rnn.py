"""The fused LSTM time loop ``lstm_recurrence`` (ops/rnn.py): one op in the table, values
against the step-by-step LSTM equations in PyTorch, first and second derivatives by finite
differences, a backward that runs through dispatch, and infer/cost."""

from __future__ import annotations

import numpy as np
import pytest

import buildingai as bai
from buildingai.autograd.dispatch import DispatchMode, dispatch_mode
from buildingai.debug import gradcheck, gradgradcheck
from buildingai.ops import all_ops
from buildingai.ops.abstract import DimExpr, spec_of
from buildingai.ops.rnn import LSTM_RECURRENCE

torch = pytest.importorskip("torch")

LENGTH, BATCH, SIZE = 4, 3, 2


def _inputs(seed=0, bias=True):
    rng = np.random.default_rng(seed)
    shapes = [(LENGTH, BATCH, 4 * SIZE), (BATCH, SIZE), (BATCH, SIZE), (4 * SIZE, SIZE)]
    if bias:
        shapes.append((4 * SIZE,))
    return [rng.uniform(-1, 1, size=shape) for shape in shapes]


def _torch_reference(gates_x, h, c, w_hh, b_hh=None, reverse=False):
    """[h_t, c_t] for every step: the LSTM equations (gates i, f, g, o) step by step."""
    out = [None] * LENGTH
    for t in range(LENGTH - 1, -1, -1) if reverse else range(LENGTH):
        pre = gates_x[t] + h @ w_hh.T + (0 if b_hh is None else b_hh)
        i, f, g, o = pre.chunk(4, dim=1)
        c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
        h = torch.sigmoid(o) * torch.tanh(c)
        out[t] = torch.cat([h, c], dim=1)
    return torch.stack(out)


def test_lstm_recurrence_is_in_the_op_table_once():
    assert [op.name for op in all_ops()].count("lstm_recurrence") == 1
    from buildingai.nn.functional.rnn_fused import LSTM_RECURRENCE as reexported

    assert reexported is LSTM_RECURRENCE


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("bias", [True, False])
def test_values_and_gradients_match_the_lstm_equations(reverse, bias):
    arrays = _inputs(bias=bias)
    ours = [bai.tensor(a, requires_grad=True) for a in arrays]
    theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
    out = LSTM_RECURRENCE(*ours, reverse=reverse)
    expected = _torch_reference(*theirs, reverse=reverse)
    np.testing.assert_allclose(out.numpy(), expected.detach().numpy(), rtol=1e-12, atol=1e-12)
    upstream = np.random.default_rng(1).standard_normal(out.shape)
    out.backward(bai.tensor(upstream))
    expected.backward(torch.tensor(upstream))
    for mine, reference in zip(ours, theirs):
        np.testing.assert_allclose(mine.grad.numpy(), reference.grad.numpy(), rtol=1e-10)


def test_first_and_second_derivatives_by_finite_differences():
    inputs = [bai.tensor(a, requires_grad=True) for a in _inputs(seed=2)]

    def run(*tensors):
        return LSTM_RECURRENCE(*tensors, reverse=True)

    assert gradcheck(run, inputs)
    assert gradgradcheck(run, inputs)


class OpNames(DispatchMode):
    def __init__(self) -> None:
        self.names: list[str] = []

    def before_op(self, op, inputs, attrs) -> None:
        self.names.append(op.name)


def test_backward_runs_through_dispatch():
    inputs = [bai.tensor(a, requires_grad=True) for a in _inputs()]
    out = LSTM_RECURRENCE(*inputs, reverse=False)
    recorder = OpNames()
    with dispatch_mode(recorder):
        out.sum().backward()
    # the step-by-step gradients are products and joins of Tensors, all of them visible
    assert "matmul" in recorder.names and "concatenate" in recorder.names


def test_infer_and_cost_on_a_symbolic_batch():
    arrays = _inputs()
    specs = [spec_of(a) for a in arrays]
    batch = DimExpr(("n",))
    symbolic = [specs[0].with_shape((LENGTH, batch, 4 * SIZE))]
    symbolic += [s.with_shape((batch, SIZE)) for s in specs[1:3]] + specs[3:]
    out = LSTM_RECURRENCE.infer(*symbolic, reverse=False)
    assert out.shape == (LENGTH, batch, 2 * SIZE)
    concrete = LSTM_RECURRENCE(*[bai.tensor(a) for a in arrays], reverse=False)
    assert out.with_shape((LENGTH, BATCH, 2 * SIZE)) == spec_of(concrete)
    flops, read, written = LSTM_RECURRENCE.cost(*specs, reverse=False)
    recurrent = 2 * BATCH * SIZE * 4 * SIZE  # the (N, H) x (H, 4H) product of one step
    assert flops >= LENGTH * recurrent
    assert read == sum(a.nbytes for a in arrays) and written == concrete.array.nbytes

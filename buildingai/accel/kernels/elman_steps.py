"""One step of the Elman RNN time loop and of its back-propagation through time, on whole
sequences held in place, and one step of the Elman cell (``ops/rnn_cells.py``'s ``rnn_cell``
and ``rnn_cell_grad``): the NumPy references of the compiled twins in ``compiled/recurrence.py``.

Arrays are laid out as ``ops/rnn_elman.py``'s records lay them out: gates_x, the output h and
the gradient all (L, N, H). ``relu`` picks the nonlinearity (tanh otherwise). The recurrent
product of the step is done by the caller, on BLAS, and handed in as ``recurrent``.
"""

from __future__ import annotations

from . import compiled
from .lstm_steps import joined


@compiled.compiled_twin("recurrence.rnn_forward_step")
def rnn_forward_step(xp, recurrent, gates_x, bias, out, t, relu) -> None:
    """Step t: recurrent (N, H) is h_{t-1} @ w_hh^T; gates_x (L, N, H); bias (H,) (zeros for
    none). Writes out[t] = act(recurrent + gates_x[t] + bias)."""
    pre = recurrent + gates_x[t]
    pre += bias
    out[t] = xp.maximum(pre, 0) if relu else xp.tanh(pre)


@compiled.compiled_twin("recurrence.rnn_backward_step")
def rnn_backward_step(xp, grad, states, recurrent, out, t, relu) -> None:
    """Step t of back-propagation through time: recurrent (N, H) is d pre of the step processed
    after t times w_hh (zeros at the first step back). Writes out[t] = d pre_t =
    (grad_t + recurrent) act'(pre_t), act' from the output h_t."""
    h = states[t]
    slope = (h > 0).astype(h.dtype) if relu else 1 - h * h
    out[t] = (grad[t] + recurrent) * slope


@compiled.compiled_twin("recurrence.rnn_forward_loop")
def rnn_forward_loop(
    xp, address, gates_x, h0, w_hh_t_blocks, bias, recurrent, out, reverse, relu, parts
):
    """``rnn_forward_step`` for every step in processing order, each after its recurrent
    product ``h_{t-1} @ w_hh^T`` into ``recurrent`` (w_hh^T as column blocks). ``address`` and
    ``parts`` are for the twin, as ``lstm_steps.lstm_forward_loop``'s."""
    w_hh_t = joined(w_hh_t_blocks)
    h = h0
    for t in range(gates_x.shape[0] - 1, -1, -1) if reverse else range(gates_x.shape[0]):
        xp.matmul(h, w_hh_t, out=recurrent)
        rnn_forward_step(xp, recurrent, gates_x, bias, out, t, relu)
        h = out[t]


@compiled.compiled_twin("recurrence.rnn_backward_loop")
def rnn_backward_loop(xp, address, grad, states, w_hh_blocks, recurrent, out, reverse, relu, parts):
    """``rnn_backward_step`` for every step from the one processed last, each after the
    product of the previous one's d pre with w_hh (as column blocks) into ``recurrent``
    (scratch, zeroed here)."""
    w_hh = joined(w_hh_blocks)
    recurrent[...] = 0
    length = grad.shape[0]
    after = None
    for t in range(length) if reverse else range(length - 1, -1, -1):
        if after is not None:
            xp.matmul(out[after], w_hh, out=recurrent)
        rnn_backward_step(xp, grad, states, recurrent, out, t, relu)
        after = t


# ----- one cell step (``ops/rnn_cells.py``) -------------------------------------------------------


@compiled.compiled_twin("recurrence.rnn_cell_forward")
def rnn_cell_forward(xp, gates_x, gates_h, b_ih, b_hh, out, relu) -> None:
    """``rnn_cell``: gates_x, gates_h (N, H), b_ih, b_hh (H,) (zeros for none) -> out (N, H) =
    act(gates_x + gates_h + b_ih + b_hh), added in that order as the record adds them."""
    pre = gates_x + gates_h
    pre += b_ih
    pre += b_hh
    out[...] = xp.maximum(pre, 0) if relu else xp.tanh(pre)


@compiled.compiled_twin("recurrence.rnn_cell_backward")
def rnn_cell_backward(xp, grad, h, out, relu) -> None:
    """``rnn_cell_grad``: grad (N, H) of the cell's output h (N, H) -> out (N, H) = grad
    act'(pre), act' from h: 1 - h^2 for tanh, h > 0 for relu."""
    out[...] = grad * ((h > 0).astype(h.dtype) if relu else 1 - h * h)

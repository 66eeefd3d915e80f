"""One step of the LSTM time loop and of its back-propagation through time, on whole
sequences held in place: the NumPy references of the compiled twins in
``compiled/recurrence.py``, which do the same arithmetic in one pass over the step's gates.

Both write step ``t`` of arrays laid out as ``ops/rnn.py``'s records lay them out: gates
(L, N, 4H) in the order i, f, g, o, states (L, N, 2H) as [h_t, c_t], and the gradient
(L, N, 5H) as [d pre_t, d c_t]. The recurrent product of the step is done by the caller, on
BLAS, and handed in as ``recurrent``. The loops take the recurrent weight as blocks of its
columns, (parts, k, width) (``joined`` gives the matrix back): the twins multiply by one block
at a time.
"""

from __future__ import annotations

from . import compiled


def _sigmoid(xp, x):
    return 1 / (1 + xp.exp(-x))


def joined(blocks):
    """The (k, parts * width) matrix whose column blocks are ``blocks`` (parts, k, width)."""
    parts, inner, width = blocks.shape
    return blocks.transpose(1, 0, 2).reshape(inner, parts * width)


@compiled.compiled_twin("recurrence.lstm_forward_step")
def lstm_forward_step(xp, recurrent, gates_x, bias, c_prev, acts, states, t) -> None:
    """Step t of the LSTM: recurrent (N, 4H) is h_{t-1} @ w_hh^T; gates_x (L, N, 4H); bias
    (4H,) (zeros for none); c_prev (N, H). Writes acts[t] = (i, f, g, o) and states[t] =
    [h_t, c_t]."""
    size = c_prev.shape[-1]
    pre = recurrent + gates_x[t]
    pre += bias
    act = acts[t]
    act[...] = _sigmoid(xp, pre)
    act[:, 2 * size : 3 * size] = xp.tanh(pre[:, 2 * size : 3 * size])
    i, f, g, o = (act[:, k * size : (k + 1) * size] for k in range(4))
    c = f * c_prev + i * g
    states[t, :, size:] = c
    states[t, :, :size] = o * xp.tanh(c)


@compiled.compiled_twin("recurrence.lstm_backward_step")
def lstm_backward_step(xp, grad, acts, states, c_prev, recurrent, carry, out, t) -> None:
    """Step t of back-propagation through time: grad (L, N, 2H) of [h, c]; acts (L, N, 4H);
    states (L, N, 2H); c_prev (N, H); recurrent (N, H), d pre of the step processed after t
    times w_hh (zeros at the first step back); carry (N, H), dc * f of that step (zeros at the
    first step back), overwritten with this step's. Writes out[t] = [d pre_t, dc_t]."""
    size = c_prev.shape[-1]
    i, f, g, o = (acts[t, :, k * size : (k + 1) * size] for k in range(4))
    tanh_c = xp.tanh(states[t, :, size:])
    dh = grad[t, :, :size] + recurrent
    dc = grad[t, :, size:] + dh * (o * (1 - tanh_c * tanh_c))
    dc += carry
    grad_pre = out[t]
    grad_pre[:, :size] = dc * (g * (i * (1 - i)))
    grad_pre[:, size : 2 * size] = dc * (c_prev * (f * (1 - f)))
    grad_pre[:, 2 * size : 3 * size] = dc * (i * (1 - g * g))
    grad_pre[:, 3 * size : 4 * size] = dh * (tanh_c * (o * (1 - o)))
    grad_pre[:, 4 * size :] = dc
    xp.multiply(dc, f, out=carry)


@compiled.compiled_twin("recurrence.lstm_forward_loop")
def lstm_forward_loop(
    xp, address, gates_x, h0, c0, w_hh_t_blocks, bias, recurrent, acts, states, reverse, parts
):
    """``lstm_forward_step`` for every step in processing order, each after its recurrent
    product ``h_{t-1} @ w_hh^T`` into ``recurrent`` (w_hh^T (H, 4H) as column blocks).
    ``address`` and ``parts`` are for the twin: the sgemm it calls, and how many ranges of
    batch rows (independent of each other) it runs at once."""
    length, size = gates_x.shape[0], h0.shape[-1]
    w_hh_t = joined(w_hh_t_blocks)
    h, c = h0, c0
    for t in range(length - 1, -1, -1) if reverse else range(length):
        xp.matmul(h, w_hh_t, out=recurrent)
        lstm_forward_step(xp, recurrent, gates_x, bias, c, acts, states, t)
        h, c = states[t, :, :size], states[t, :, size:]


@compiled.compiled_twin("recurrence.lstm_backward_loop")
def lstm_backward_loop(
    xp, address, grad, acts, states, c0, w_hh_blocks, recurrent, carry, out, reverse, parts
):
    """``lstm_backward_step`` for every step from the one processed last, each after the
    product of the previous one's d pre with w_hh (4H, H), as column blocks, into
    ``recurrent``; ``address`` and ``parts`` as ``lstm_forward_loop``'s."""
    length, size = acts.shape[0], c0.shape[-1]
    w_hh = joined(w_hh_blocks)
    recurrent[...] = 0
    carry[...] = 0
    after = None
    for t in range(length) if reverse else range(length - 1, -1, -1):
        if after is not None:
            xp.matmul(out[after, :, : 4 * size], w_hh, out=recurrent)
        first = t == (length - 1 if reverse else 0)
        c_prev = c0 if first else states[t + 1 if reverse else t - 1, :, size:]
        lstm_backward_step(xp, grad, acts, states, c_prev, recurrent, carry, out, t)
        after = t


# ----- one cell step (``ops/rnn_cells.py``) -------------------------------------------------------


@compiled.compiled_twin("recurrence.lstm_cell_forward")
def lstm_cell_forward(xp, gates_x, gates_h, b_ih, b_hh, c, out) -> None:
    """``lstm_cell``: gates_x, gates_h (N, 4H), b_ih, b_hh (4H,) (zeros for none), c (N, H)
    -> out (N, 2H) = [h', c']."""
    size = c.shape[-1]
    pre = gates_x + gates_h + b_ih + b_hh
    gate = _sigmoid(xp, pre)
    cell_input = xp.tanh(pre[:, 2 * size : 3 * size])
    c_next = gate[:, size : 2 * size] * c + gate[:, :size] * cell_input
    out[:, size:] = c_next
    out[:, :size] = gate[:, 3 * size :] * xp.tanh(c_next)


@compiled.compiled_twin("recurrence.lstm_cell_backward")
def lstm_cell_backward(xp, grad, gates_x, gates_h, b_ih, b_hh, c, out) -> None:
    """``lstm_cell_grad``: grad (N, 2H) of [h', c'] and the cell's inputs (as
    ``lstm_cell_forward``'s) -> out (N, 5H) = [d pre, d c]."""
    size = c.shape[-1]
    pre = gates_x + gates_h + b_ih + b_hh
    gate = _sigmoid(xp, pre)
    i, f, o = gate[:, :size], gate[:, size : 2 * size], gate[:, 3 * size :]
    g = xp.tanh(pre[:, 2 * size : 3 * size])
    tanh_c = xp.tanh(f * c + i * g)
    grad_h = grad[:, :size]
    grad_c = grad[:, size:] + grad_h * (o * (1 - tanh_c * tanh_c))
    out[:, :size] = grad_c * (g * (i * (1 - i)))
    out[:, size : 2 * size] = grad_c * (c * (f * (1 - f)))
    out[:, 2 * size : 3 * size] = grad_c * (i * (1 - g * g))
    out[:, 3 * size : 4 * size] = grad_h * (tanh_c * (o * (1 - o)))
    out[:, 4 * size :] = grad_c * f

"""One step of the GRU time loop and of its back-propagation through time, on whole sequences
held in place: the NumPy references of the compiled twins in ``compiled/recurrence.py``, which
do the same arithmetic in one pass over the step's gates.

Arrays are laid out as ``ops/rnn_gru.py``'s records lay them out: gates (L, N, 3H) in the order
r, z, n; the output h (L, N, H); the coefficients of back-propagation through time (L, N, 4H)
as [c_r, c_z, c_n, z]. The recurrent product of the step is done by the caller, on BLAS, and
handed in as ``recurrent``.
"""

from __future__ import annotations

from . import compiled
from .lstm_steps import joined


def _sigmoid(xp, x):
    return 1 / (1 + xp.exp(-x))


@compiled.compiled_twin("recurrence.gru_forward_step")
def gru_forward_step(xp, recurrent, gates_x, bias, h_prev, out, t) -> None:
    """Step t of the GRU: recurrent (N, 3H) is h_{t-1} @ w_hh^T, overwritten with the step's
    [r, z, h W_hn^T + b_hn]; gates_x (L, N, 3H); bias (3H,) (zeros for none); h_prev (N, H).
    Writes out[t] = h_t."""
    size = h_prev.shape[-1]
    recurrent += bias  # the hidden part of the gates
    recurrent[:, : 2 * size] = _sigmoid(xp, gates_x[t, :, : 2 * size] + recurrent[:, : 2 * size])
    reset, update = recurrent[:, :size], recurrent[:, size : 2 * size]
    new = xp.tanh(gates_x[t, :, 2 * size :] + reset * recurrent[:, 2 * size :])
    out[t] = new + update * (h_prev - new)


@compiled.compiled_twin("recurrence.gru_backward_step")
def gru_backward_step(xp, grad, coefficients, carry, recurrent, hidden, out, t) -> None:
    """Step t of back-propagation through time: dh_t = grad_t + (carry + recurrent) into
    out[t], where carry (N, H) is dh z of the step processed after t and recurrent (N, H) its
    hidden gradient times w_hh (both zeros at the first step back). Overwrites carry with
    dh_t z_t and hidden (N, 3H) with dh_t [c_r, c_z, c_n]_t."""
    size = grad.shape[-1]
    dh = grad[t] + (carry + recurrent)
    out[t] = dh
    xp.multiply(dh, coefficients[t, :, 3 * size :], out=carry)
    for k in range(3):
        xp.multiply(
            dh,
            coefficients[t, :, k * size : (k + 1) * size],
            out=hidden[:, k * size : (k + 1) * size],
        )


@compiled.compiled_twin("recurrence.gru_forward_loop")
def gru_forward_loop(xp, address, gates_x, h0, w_hh_t_blocks, bias, recurrent, out, reverse, parts):
    """``gru_forward_step`` for every step in processing order, each after its recurrent
    product ``h_{t-1} @ w_hh^T`` into ``recurrent`` (w_hh^T (H, 3H) as column blocks).
    ``address`` and ``parts`` are for the twin, as ``lstm_steps.lstm_forward_loop``'s."""
    w_hh_t = joined(w_hh_t_blocks)
    h = h0
    for t in range(gates_x.shape[0] - 1, -1, -1) if reverse else range(gates_x.shape[0]):
        xp.matmul(h, w_hh_t, out=recurrent)
        gru_forward_step(xp, recurrent, gates_x, bias, h, out, t)
        h = out[t]


@compiled.compiled_twin("recurrence.gru_backward_loop")
def gru_backward_loop(
    xp, address, grad, coefficients, w_hh_blocks, carry, recurrent, hidden, out, reverse, parts
):
    """``gru_backward_step`` for every step from the one processed last, each after the
    product of the previous one's hidden gradient with w_hh (3H, H), as column blocks, into
    ``recurrent``; carry and recurrent (N, H), hidden (N, 3H) are scratch, zeroed here."""
    w_hh = joined(w_hh_blocks)
    carry[...] = 0
    recurrent[...] = 0
    length = grad.shape[0]
    first = True
    for t in range(length) if reverse else range(length - 1, -1, -1):
        if not first:
            xp.matmul(hidden, w_hh, out=recurrent)
        gru_backward_step(xp, grad, coefficients, carry, recurrent, hidden, out, t)
        first = False


# ----- one cell step (``ops/rnn_cells.py``) -------------------------------------------------------


@compiled.compiled_twin("recurrence.gru_cell_forward")
def gru_cell_forward(xp, gates_x, gates_h, h, out) -> None:
    """``gru_cell``: gates_x, gates_h (N, 3H), h (N, H) -> out (N, H) = h'."""
    size = h.shape[-1]
    reset_update = _sigmoid(xp, gates_x[:, : 2 * size] + gates_h[:, : 2 * size])
    reset, update = reset_update[:, :size], reset_update[:, size:]
    new = xp.tanh(gates_x[:, 2 * size :] + reset * gates_h[:, 2 * size :])
    out[...] = new + update * (h - new)


@compiled.compiled_twin("recurrence.gru_cell_backward")
def gru_cell_backward(xp, grad, gates_x, gates_h, h, out) -> None:
    """``gru_cell_grad``: grad (N, H) of h' and the cell's inputs -> out (N, 7H) =
    [d gates_x, d gates_h, d h]."""
    size = h.shape[-1]
    reset_update = _sigmoid(xp, gates_x[:, : 2 * size] + gates_h[:, : 2 * size])
    reset, update = reset_update[:, :size], reset_update[:, size:]
    hidden_new = gates_h[:, 2 * size :]
    new = xp.tanh(gates_x[:, 2 * size :] + reset * hidden_new)
    grad_new = grad * ((1 - update) * (1 - new * new))
    out[:, :size] = grad_new * (hidden_new * (reset * (1 - reset)))
    out[:, size : 2 * size] = grad * ((h - new) * (update * (1 - update)))
    out[:, 2 * size : 3 * size] = grad_new
    out[:, 3 * size : 5 * size] = out[:, : 2 * size]
    out[:, 5 * size : 6 * size] = grad_new * reset
    out[:, 6 * size :] = grad * update

"""Compiled twins of the LSTM, GRU and Elman step kernels (``accel/kernels/lstm_steps.py``,
``gru_steps.py``, ``elman_steps.py``): each gate of a step read once and every result written
once, in short loops over the step's (N, H) units that LLVM vectorises. Same arguments as the NumPy kernels, without
``xp``; float32 arrays.

tanh is ``expf.tanh32``: numba's ``math.tanh`` calls libm one value at a time and keeps the loop
scalar.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from .expf import exp32, tanh32
from .gemm import _call_gemm  # the sgemm call by address the split products use
from .panel_tile import PANEL, panel_product

_ZERO = np.float32(0.0)
_ONE = np.float32(1.0)

# error_model="numpy": no Python check for a division by zero, which keeps loops scalar
step = njit(nogil=True, cache=True, fastmath={"contract"}, error_model="numpy")


@njit(inline="always", fastmath={"contract"})
def _sigmoid(x):
    return _ONE / (_ONE + exp32(-x))


@step
def lstm_forward_step(recurrent, gates_x, bias, c_prev, acts, states, t):
    _lstm_forward_rows(recurrent, gates_x, bias, c_prev, acts, states, t, 0, recurrent.shape[0])


@step
def _lstm_forward_rows(recurrent, gates_x, bias, c_prev, acts, states, t, start, stop):
    """``lstm_forward_step`` on the batch rows start..stop."""
    size = recurrent.shape[1] // 4
    gate_size = 4 * size
    # short loops over one row with few arrays each, so LLVM's alias checks let it vectorise
    # them (docs/design_notes/performance.md, "Recurrence: LSTM")
    for n in range(start, stop):
        product, given, act, state, c_before = (
            recurrent[n],
            gates_x[t, n],
            acts[t, n],
            states[t, n],
            c_prev[n],
        )
        for j in range(gate_size):
            act[j] = product[j] + given[j] + bias[j]
        for j in range(2 * size):
            act[j] = _sigmoid(act[j])
        for j in range(2 * size, 3 * size):
            act[j] = tanh32(act[j])
        i, f, g, o = act[:size], act[size : 2 * size], act[2 * size : 3 * size], act[3 * size :]
        for j in range(size):  # through the view: as range(3 * size, gate_size) it stayed scalar
            o[j] = _sigmoid(o[j])
        h, c = state[:size], state[size:]
        for j in range(size):
            c[j] = f[j] * c_before[j] + i[j] * g[j]
        for j in range(size):
            h[j] = o[j] * tanh32(c[j])


@step
def lstm_backward_step(grad, acts, states, c_prev, recurrent, carry, out, t):
    _lstm_backward_rows(grad, acts, states, c_prev, recurrent, carry, out, t, 0, c_prev.shape[0])


@step
def _lstm_backward_rows(grad, acts, states, c_prev, recurrent, carry, out, t, start, stop):
    """``lstm_backward_step`` on the batch rows start..stop."""
    size = c_prev.shape[1]
    for n in range(start, stop):
        act, cell, result = acts[t, n], states[t, n, size:], out[t, n]
        i, f, g, o = act[:size], act[size : 2 * size], act[2 * size : 3 * size], act[3 * size :]
        grad_h, grad_c, c_before = grad[t, n, :size], grad[t, n, size:], c_prev[n]
        product, kept = recurrent[n], carry[n]
        grad_i, grad_f = result[:size], result[size : 2 * size]
        grad_g, grad_o, dc = (
            result[2 * size : 3 * size],
            result[3 * size : 4 * size],
            result[4 * size :],
        )
        # dh kept in a register; one loop per gate gradient keeps each loop's arrays few
        for j in range(size):
            tanh_c = tanh32(cell[j])
            dh = grad_h[j] + product[j]
            dc[j] = grad_c[j] + dh * (o[j] * (_ONE - tanh_c * tanh_c)) + kept[j]
            grad_o[j] = dh * (tanh_c * (o[j] * (_ONE - o[j])))
        for j in range(size):
            grad_i[j] = dc[j] * (g[j] * (i[j] * (_ONE - i[j])))
        for j in range(size):
            grad_f[j] = dc[j] * (c_before[j] * (f[j] * (_ONE - f[j])))
        for j in range(size):
            grad_g[j] = dc[j] * (i[j] * (_ONE - g[j] * g[j]))
        for j in range(size):
            kept[j] = dc[j] * f[j]


# ----- whole time loops, the recurrent products through CBLAS or on packed panels ---------------
# The same steps with each step's product a direct call, ``panel_tile.panel_product`` on a weight
# packed into panels or a CBLAS ``sgemm`` (``gemm._call_gemm``), instead of a NumPy product: no
# interpreter round trip and no dispatch per step.

_NO_TRANSPOSE = 111  # CBLAS's enumeration


@step
def _product_by_blocks(address, rows, a_at, lda, blocks, c_at, ldc):
    """c = a @ b, a (rows, k) at address ``a_at`` with leading dimension ``lda``, b as its
    column blocks (parts, k, width), c at ``c_at`` (leading dimension ``ldc``). Blocks of
    ``PANEL`` columns are a packed weight: ``panel_product`` takes them. Wider ones go one
    sgemm per block, each small enough for OpenBLAS's small-matrix kernels, which skip the
    packing of the whole product's operands."""
    parts, inner, width = blocks.shape
    if width == PANEL:
        panel_product(rows, a_at, lda, blocks, c_at, ldc)
        return
    for part in range(parts):
        _call_gemm(address, _NO_TRANSPOSE, _NO_TRANSPOSE, rows, width, inner, _ONE, a_at, lda,
                   blocks[part].ctypes.data, width, _ZERO, c_at + 4 * part * width,
                   ldc)  # fmt: skip


# Batch rows never meet in a recurrence: the loops run ``parts`` ranges of rows at once, each
# range its whole time loop on one of numba's threads.
parallel = njit(parallel=True, nogil=True, cache=True, fastmath={"contract"}, error_model="numpy")


@parallel
def lstm_forward_loop(
    address, gates_x, h0, c0, w_hh_t_blocks, bias, recurrent, acts, states, reverse, parts
):
    """``lstm_forward_step`` for every step in order: h0, c0 (N, H) C-contiguous, w_hh_t_blocks
    (parts, H, width) the column blocks of w_hh^T, recurrent (N, 4H) scratch; ``address`` is a
    CBLAS sgemm; ``parts`` ranges of batch rows run at once."""
    batch = h0.shape[0]
    if parts < 2:
        _lstm_forward_loop_rows(address, gates_x, h0, c0, w_hh_t_blocks, bias, recurrent, acts,
                                states, reverse, 0, batch)  # fmt: skip
        return
    for part in prange(parts):
        _lstm_forward_loop_rows(address, gates_x, h0, c0, w_hh_t_blocks, bias, recurrent, acts,
                                states, reverse, batch * part // parts,
                                batch * (part + 1) // parts)  # fmt: skip


@step
def _lstm_forward_loop_rows(
    address, gates_x, h0, c0, w_hh_t_blocks, bias, recurrent, acts, states, reverse, start, stop
):
    """``lstm_forward_loop`` on the batch rows start..stop."""
    length, gate_size = gates_x.shape[0], gates_x.shape[2]
    size = gate_size // 4
    row = states.strides[1] // 4  # the leading dimension of h_t inside states
    product_at = recurrent.ctypes.data + 4 * start * gate_size
    for s in range(length):
        t = length - 1 - s if reverse else s
        before = t + 1 if reverse else t - 1
        if s == 0:
            h_at, leading, c_before = h0.ctypes.data + 4 * start * size, size, c0[:, :size]
        else:
            h_at = states[before].ctypes.data + 4 * start * row
            leading, c_before = row, states[before, :, size:]
        _product_by_blocks(
            address, stop - start, h_at, leading, w_hh_t_blocks, product_at, gate_size
        )
        _lstm_forward_rows(recurrent, gates_x, bias, c_before, acts, states, t, start, stop)


@parallel
def lstm_backward_loop(
    address, grad, acts, states, c0, w_hh_blocks, recurrent, carry, out, reverse, parts
):
    """``lstm_backward_step`` for every step back: c0 (N, H) C-contiguous, w_hh_blocks
    (parts, 4H, width) the column blocks of w_hh; recurrent and carry (N, H) scratch, zeroed
    here; ``address`` is a CBLAS sgemm; ``parts`` ranges of batch rows run at once."""
    batch = c0.shape[0]
    if parts < 2:
        _lstm_backward_loop_rows(address, grad, acts, states, c0, w_hh_blocks, recurrent, carry,
                                 out, reverse, 0, batch)  # fmt: skip
        return
    for part in prange(parts):
        _lstm_backward_loop_rows(address, grad, acts, states, c0, w_hh_blocks, recurrent, carry,
                                 out, reverse, batch * part // parts,
                                 batch * (part + 1) // parts)  # fmt: skip


@step
def _lstm_backward_loop_rows(
    address, grad, acts, states, c0, w_hh_blocks, recurrent, carry, out, reverse, start, stop
):
    """``lstm_backward_loop`` on the batch rows start..stop."""
    length, gate_size = acts.shape[0], acts.shape[2]
    size = gate_size // 4
    row = out.strides[1] // 4
    recurrent[start:stop] = 0
    carry[start:stop] = 0
    product_at = recurrent.ctypes.data + 4 * start * size
    for s in range(length):
        t = s if reverse else length - 1 - s
        if s > 0:
            after = t - 1 if reverse else t + 1
            grad_at = out[after].ctypes.data + 4 * start * row
            _product_by_blocks(address, stop - start, grad_at, row, w_hh_blocks, product_at, size)
        if s == length - 1:
            c_before = c0[:, :size]
        else:
            c_before = states[t + 1 if reverse else t - 1, :, size:]
        _lstm_backward_rows(grad, acts, states, c_before, recurrent, carry, out, t, start, stop)


# ----- GRU --------------------------------------------------------------------------------------


@step
def gru_forward_step(recurrent, gates_x, bias, h_prev, out, t):
    _gru_forward_rows(recurrent, gates_x, bias, h_prev, out, t, 0, recurrent.shape[0])


@step
def _gru_forward_rows(recurrent, gates_x, bias, h_prev, out, t, start, stop):
    """``gru_forward_step`` on the batch rows start..stop."""
    size = recurrent.shape[1] // 3
    gate_size = 3 * size
    for n in range(start, stop):
        hidden, given, h_before, h = recurrent[n], gates_x[t, n], h_prev[n], out[t, n]
        for j in range(gate_size):
            hidden[j] = hidden[j] + bias[j]
        for j in range(2 * size):
            hidden[j] = _sigmoid(given[j] + hidden[j])
        reset, update, hidden_new = hidden[:size], hidden[size : 2 * size], hidden[2 * size :]
        given_new = given[2 * size :]
        for j in range(size):
            new = tanh32(given_new[j] + reset[j] * hidden_new[j])
            h[j] = new + update[j] * (h_before[j] - new)


@step
def gru_backward_step(grad, coefficients, carry, recurrent, hidden, out, t):
    _gru_backward_rows(grad, coefficients, carry, recurrent, hidden, out, t, 0, carry.shape[0])


@step
def _gru_backward_rows(grad, coefficients, carry, recurrent, hidden, out, t, start, stop):
    """``gru_backward_step`` on the batch rows start..stop."""
    size = carry.shape[1]
    for n in range(start, stop):
        given, kept, product, dh = grad[t, n], carry[n], recurrent[n], out[t, n]
        factors, spread = coefficients[t, n], hidden[n]
        for j in range(size):
            dh[j] = given[j] + (kept[j] + product[j])
        for j in range(size):
            kept[j] = dh[j] * factors[3 * size + j]
        for k in range(3):
            for j in range(size):
                spread[k * size + j] = dh[j] * factors[k * size + j]


@parallel
def gru_forward_loop(address, gates_x, h0, w_hh_t_blocks, bias, recurrent, out, reverse, parts):
    """``gru_forward_step`` for every step in order: h0 (N, H) C-contiguous, w_hh_t_blocks
    (parts, H, width) the column blocks of w_hh^T, recurrent (N, 3H) scratch; ``address`` is a
    CBLAS sgemm; ``parts`` ranges of batch rows run at once."""
    batch = h0.shape[0]
    if parts < 2:
        _gru_forward_loop_rows(address, gates_x, h0, w_hh_t_blocks, bias, recurrent, out,
                               reverse, 0, batch)  # fmt: skip
        return
    for part in prange(parts):
        _gru_forward_loop_rows(address, gates_x, h0, w_hh_t_blocks, bias, recurrent, out,
                               reverse, batch * part // parts,
                               batch * (part + 1) // parts)  # fmt: skip


@step
def _gru_forward_loop_rows(
    address, gates_x, h0, w_hh_t_blocks, bias, recurrent, out, reverse, start, stop
):
    """``gru_forward_loop`` on the batch rows start..stop."""
    length, gate_size = gates_x.shape[0], gates_x.shape[2]
    size = gate_size // 3
    product_at = recurrent.ctypes.data + 4 * start * gate_size
    for s in range(length):
        t = length - 1 - s if reverse else s
        before = t + 1 if reverse else t - 1
        h_before = h0 if s == 0 else out[before]
        h_at = h_before.ctypes.data + 4 * start * size
        _product_by_blocks(address, stop - start, h_at, size, w_hh_t_blocks, product_at, gate_size)
        _gru_forward_rows(recurrent, gates_x, bias, h_before, out, t, start, stop)


@parallel
def gru_backward_loop(
    address, grad, coefficients, w_hh_blocks, carry, recurrent, hidden, out, reverse, parts
):
    """``gru_backward_step`` for every step back: w_hh_blocks (parts, 3H, width) the column
    blocks of w_hh; carry, recurrent (N, H) and hidden (N, 3H) scratch, zeroed here;
    ``address`` is a CBLAS sgemm; ``parts`` ranges of batch rows run at once."""
    batch = carry.shape[0]
    if parts < 2:
        _gru_backward_loop_rows(address, grad, coefficients, w_hh_blocks, carry, recurrent,
                                hidden, out, reverse, 0, batch)  # fmt: skip
        return
    for part in prange(parts):
        _gru_backward_loop_rows(address, grad, coefficients, w_hh_blocks, carry, recurrent,
                                hidden, out, reverse, batch * part // parts,
                                batch * (part + 1) // parts)  # fmt: skip


@step
def _gru_backward_loop_rows(
    address, grad, coefficients, w_hh_blocks, carry, recurrent, hidden, out, reverse, start, stop
):
    """``gru_backward_loop`` on the batch rows start..stop."""
    length, size = grad.shape[0], grad.shape[2]
    carry[start:stop] = 0
    recurrent[start:stop] = 0
    hidden_at = hidden.ctypes.data + 4 * start * 3 * size
    product_at = recurrent.ctypes.data + 4 * start * size
    for s in range(length):
        t = s if reverse else length - 1 - s
        if s > 0:
            _product_by_blocks(
                address, stop - start, hidden_at, 3 * size, w_hh_blocks, product_at, size
            )
        _gru_backward_rows(grad, coefficients, carry, recurrent, hidden, out, t, start, stop)


# ----- Elman RNN ----------------------------------------------------------------------------------


@step
def rnn_forward_step(recurrent, gates_x, bias, out, t, relu):
    _rnn_forward_rows(recurrent, gates_x, bias, out, t, relu, 0, recurrent.shape[0])


@step
def _rnn_forward_rows(recurrent, gates_x, bias, out, t, relu, start, stop):
    """``rnn_forward_step`` on the batch rows start..stop."""
    size = recurrent.shape[1]
    for n in range(start, stop):
        product, given, h = recurrent[n], gates_x[t, n], out[t, n]
        if relu:
            for j in range(size):
                pre = product[j] + given[j] + bias[j]
                h[j] = _ZERO if pre < _ZERO else pre  # NaN stays NaN, as NumPy's maximum
        else:
            for j in range(size):
                h[j] = tanh32(product[j] + given[j] + bias[j])


@step
def rnn_backward_step(grad, states, recurrent, out, t, relu):
    _rnn_backward_rows(grad, states, recurrent, out, t, relu, 0, recurrent.shape[0])


@step
def _rnn_backward_rows(grad, states, recurrent, out, t, relu, start, stop):
    """``rnn_backward_step`` on the batch rows start..stop."""
    size = recurrent.shape[1]
    for n in range(start, stop):
        given, h, product, grad_pre = grad[t, n], states[t, n], recurrent[n], out[t, n]
        if relu:
            for j in range(size):
                grad_pre[j] = (given[j] + product[j]) * (_ONE if h[j] > _ZERO else _ZERO)
        else:
            for j in range(size):
                grad_pre[j] = (given[j] + product[j]) * (_ONE - h[j] * h[j])


@step
def rnn_cell_forward(gates_x, gates_h, b_ih, b_hh, out, relu):
    batch, size = gates_x.shape
    for n in range(batch):
        given, hidden, h = gates_x[n], gates_h[n], out[n]
        if relu:
            for j in range(size):
                pre = given[j] + hidden[j] + b_ih[j] + b_hh[j]
                h[j] = _ZERO if pre < _ZERO else pre  # NaN stays NaN, as NumPy's maximum
        else:
            for j in range(size):
                h[j] = tanh32(given[j] + hidden[j] + b_ih[j] + b_hh[j])


@step
def rnn_cell_backward(grad, h, out, relu):
    batch, size = h.shape
    for n in range(batch):
        given, state, grad_pre = grad[n], h[n], out[n]
        if relu:
            for j in range(size):
                grad_pre[j] = given[j] * (_ONE if state[j] > _ZERO else _ZERO)
        else:
            for j in range(size):
                grad_pre[j] = given[j] * (_ONE - state[j] * state[j])


@parallel
def rnn_forward_loop(address, gates_x, h0, w_hh_t_blocks, bias, recurrent, out, reverse, relu,
                     parts):  # fmt: skip
    """``rnn_forward_step`` for every step in order: h0 (N, H) C-contiguous, w_hh_t_blocks
    (parts, H, width) the column blocks of w_hh^T, recurrent (N, H) scratch; ``address`` is a
    CBLAS sgemm; ``parts`` ranges of batch rows run at once."""
    batch = h0.shape[0]
    if parts < 2:
        _rnn_forward_loop_rows(address, gates_x, h0, w_hh_t_blocks, bias, recurrent, out,
                               reverse, relu, 0, batch)  # fmt: skip
        return
    for part in prange(parts):
        _rnn_forward_loop_rows(address, gates_x, h0, w_hh_t_blocks, bias, recurrent, out,
                               reverse, relu, batch * part // parts,
                               batch * (part + 1) // parts)  # fmt: skip


@step
def _rnn_forward_loop_rows(
    address, gates_x, h0, w_hh_t_blocks, bias, recurrent, out, reverse, relu, start, stop
):
    """``rnn_forward_loop`` on the batch rows start..stop."""
    length, size = gates_x.shape[0], gates_x.shape[2]
    product_at = recurrent.ctypes.data + 4 * start * size
    for s in range(length):
        t = length - 1 - s if reverse else s
        before = t + 1 if reverse else t - 1
        h_before = h0 if s == 0 else out[before]
        h_at = h_before.ctypes.data + 4 * start * size
        _product_by_blocks(address, stop - start, h_at, size, w_hh_t_blocks, product_at, size)
        _rnn_forward_rows(recurrent, gates_x, bias, out, t, relu, start, stop)


@parallel
def rnn_backward_loop(address, grad, states, w_hh_blocks, recurrent, out, reverse, relu, parts):
    """``rnn_backward_step`` for every step back: w_hh_blocks (parts, H, width) the column
    blocks of w_hh, recurrent (N, H) scratch, zeroed here; ``address`` is a CBLAS sgemm;
    ``parts`` ranges of batch rows run at once."""
    batch = recurrent.shape[0]
    if parts < 2:
        _rnn_backward_loop_rows(address, grad, states, w_hh_blocks, recurrent, out, reverse,
                                relu, 0, batch)  # fmt: skip
        return
    for part in prange(parts):
        _rnn_backward_loop_rows(address, grad, states, w_hh_blocks, recurrent, out, reverse,
                                relu, batch * part // parts,
                                batch * (part + 1) // parts)  # fmt: skip


@step
def _rnn_backward_loop_rows(
    address, grad, states, w_hh_blocks, recurrent, out, reverse, relu, start, stop
):
    """``rnn_backward_loop`` on the batch rows start..stop."""
    length, size = grad.shape[0], grad.shape[2]
    recurrent[start:stop] = 0
    product_at = recurrent.ctypes.data + 4 * start * size
    for s in range(length):
        t = s if reverse else length - 1 - s
        if s > 0:
            after = t - 1 if reverse else t + 1
            grad_at = out[after].ctypes.data + 4 * start * size
            _product_by_blocks(address, stop - start, grad_at, size, w_hh_blocks, product_at, size)
        _rnn_backward_rows(grad, states, recurrent, out, t, relu, start, stop)


# ----- one cell step (``ops/rnn_cells.py``) -------------------------------------------------------
# The same arithmetic as the time loops' steps for one step of a cell, both products given.


@step
def lstm_cell_forward(gates_x, gates_h, b_ih, b_hh, c, out):
    batch, gate_size = gates_x.shape
    size = gate_size // 4
    gate = np.empty(gate_size, np.float32)
    for n in range(batch):
        given, hidden, c_before, state = gates_x[n], gates_h[n], c[n], out[n]
        for j in range(gate_size):
            gate[j] = given[j] + hidden[j] + b_ih[j] + b_hh[j]
        for j in range(2 * size):
            gate[j] = _sigmoid(gate[j])
        for j in range(2 * size, 3 * size):
            gate[j] = tanh32(gate[j])
        i, f, g, o = gate[:size], gate[size : 2 * size], gate[2 * size : 3 * size], gate[3 * size :]
        for j in range(size):
            o[j] = _sigmoid(o[j])
        h, c_next = state[:size], state[size:]
        for j in range(size):
            c_next[j] = f[j] * c_before[j] + i[j] * g[j]
        for j in range(size):
            h[j] = o[j] * tanh32(c_next[j])


@step
def lstm_cell_backward(grad, gates_x, gates_h, b_ih, b_hh, c, out):
    batch, gate_size = gates_x.shape
    size = gate_size // 4
    gate = np.empty(gate_size, np.float32)
    cell = np.empty(size, np.float32)  # tanh(c'), then dc'
    for n in range(batch):
        given, hidden, c_before, result = gates_x[n], gates_h[n], c[n], out[n]
        grad_h, grad_c = grad[n, :size], grad[n, size:]
        for j in range(gate_size):
            gate[j] = given[j] + hidden[j] + b_ih[j] + b_hh[j]
        for j in range(2 * size):
            gate[j] = _sigmoid(gate[j])
        for j in range(2 * size, 3 * size):
            gate[j] = tanh32(gate[j])
        i, f, g, o = gate[:size], gate[size : 2 * size], gate[2 * size : 3 * size], gate[3 * size :]
        for j in range(size):
            o[j] = _sigmoid(o[j])
        for j in range(size):
            cell[j] = tanh32(f[j] * c_before[j] + i[j] * g[j])
        for j in range(size):
            tanh_c = cell[j]
            result[3 * size + j] = grad_h[j] * (tanh_c * (o[j] * (_ONE - o[j])))
            cell[j] = grad_c[j] + grad_h[j] * (o[j] * (_ONE - tanh_c * tanh_c))
        for j in range(size):
            result[j] = cell[j] * (g[j] * (i[j] * (_ONE - i[j])))
            result[size + j] = cell[j] * (c_before[j] * (f[j] * (_ONE - f[j])))
            result[2 * size + j] = cell[j] * (i[j] * (_ONE - g[j] * g[j]))
            result[4 * size + j] = cell[j] * f[j]


@step
def gru_cell_forward(gates_x, gates_h, h, out):
    batch, size = h.shape
    reset_update = np.empty(2 * size, np.float32)
    for n in range(batch):
        given, hidden, h_before, h_next = gates_x[n], gates_h[n], h[n], out[n]
        for j in range(2 * size):
            reset_update[j] = _sigmoid(given[j] + hidden[j])
        reset, update = reset_update[:size], reset_update[size:]
        given_new, hidden_new = given[2 * size :], hidden[2 * size :]
        for j in range(size):
            new = tanh32(given_new[j] + reset[j] * hidden_new[j])
            h_next[j] = new + update[j] * (h_before[j] - new)


@step
def gru_cell_backward(grad, gates_x, gates_h, h, out):
    batch, size = h.shape
    reset_update = np.empty(2 * size, np.float32)
    new = np.empty(size, np.float32)
    for n in range(batch):
        given, hidden, h_before, result, upstream = gates_x[n], gates_h[n], h[n], out[n], grad[n]
        for j in range(2 * size):
            reset_update[j] = _sigmoid(given[j] + hidden[j])
        reset, update = reset_update[:size], reset_update[size:]
        given_new, hidden_new = given[2 * size :], hidden[2 * size :]
        for j in range(size):
            new[j] = tanh32(given_new[j] + reset[j] * hidden_new[j])
        for j in range(size):
            grad_new = upstream[j] * ((_ONE - update[j]) * (_ONE - new[j] * new[j]))
            grad_reset = grad_new * (hidden_new[j] * (reset[j] * (_ONE - reset[j])))
            grad_update = upstream[j] * ((h_before[j] - new[j]) * (update[j] * (_ONE - update[j])))
            result[j] = grad_reset
            result[size + j] = grad_update
            result[2 * size + j] = grad_new
            result[3 * size + j] = grad_reset
            result[4 * size + j] = grad_update
            result[5 * size + j] = grad_new * reset[j]
            result[6 * size + j] = upstream[j] * update[j]

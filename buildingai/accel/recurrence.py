"""Faster forwards of the LSTM time loop ``lstm_recurrence`` and of its back-propagation
through time ``lstm_recurrence_grad`` (``ops/rnn.py``), and of the GRU's, ``gru_recurrence``
and ``gru_recurrence_grad`` (``ops/rnn_gru.py``), and the Elman RNN's, ``rnn_recurrence`` and
``rnn_recurrence_grad`` (``ops/rnn_elman.py``).

``*.fused`` (float32, needs numba): the records' loops with each step's recurrent product on
BLAS into one preallocated buffer, one sgemm per block of the weight's columns (a copy made
once per call, ``_column_blocks``), and everything else of the step, gates, cell and hidden
state, or the five gradients, in one compiled pass (``kernels/lstm_steps.py`` and its twins in
``kernels/compiled/recurrence.py``), where the records make about fifteen array passes. Rows of
the batch never meet, so ranges of them run their whole loops on numba's threads at once
(``_row_parts``).

``lstm_recurrence.loop``: the record's loop for other dtypes, with each step's recurrent
product noted as a BLAS call (``backend.threads.blas_called``, so that the element-wise work
right after it stays on the calling thread while BLAS's threads may still spin) and the gate
sigmoid through the kernels registered for ``sigmoid``.

``gru_recurrence.fused``, ``gru_recurrence_grad.fused`` (float32, needs numba): the GRU
records' loops in the same form, one sgemm and one compiled pass per step
(``kernels/gru_steps.py`` and its twins); ``rnn_recurrence.fused``,
``rnn_recurrence_grad.fused`` likewise for the Elman RNN (``kernels/elman_steps.py``), whose
per-step product would otherwise go to NumPy's BLAS and its threads.

``lstm_cell.fused``, ``lstm_cell_grad.fused``, ``gru_cell.fused``, ``gru_cell_grad.fused``,
``rnn_cell.fused``, ``rnn_cell_grad.fused`` (float32, needs numba): one step of a cell
(``ops/rnn_cells.py``) in one compiled pass over its units, where the records make up to ten
NumPy passes (``lstm_cell_*`` in ``kernels/lstm_steps.py``, ``gru_cell_*`` in
``kernels/gru_steps.py``, ``rnn_cell_*`` in ``kernels/elman_steps.py``).
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from ..backend.threads import blas_called
from ..ops.rnn import LSTM_RECURRENCE, LSTM_RECURRENCE_GRAD
from ..ops.rnn_cells import (
    GRU_CELL,
    GRU_CELL_GRAD,
    LSTM_CELL,
    LSTM_CELL_GRAD,
    RNN_CELL,
    RNN_CELL_GRAD,
)
from ..ops.rnn_elman import RNN_RECURRENCE, RNN_RECURRENCE_GRAD
from ..ops.rnn_gru import GRU_RECURRENCE, GRU_RECURRENCE_GRAD
from ..ops.special import SIGMOID
from . import own_blas
from .kernels import compiled, elman_steps, gru_steps
from .kernels import lstm_steps as steps
from .registry import register, run_accelerated

_FLOAT32 = np.dtype(np.float32)
# Each step's recurrent product: for at most PANEL_ROWS rows (a thread's share of the batch) on
# the weight packed into panels (``panel_tile``), which outruns the BLAS there; for more, one
# sgemm per block of the weight's columns, each of at most BLOCK_MULTIPLY_ADDS multiply-adds (the
# limit of OpenBLAS's small-matrix kernels, which skip packing the operands) and WIDEST_BLOCK
# columns (docs/design_notes/performance.md has the figures).
PANEL_ROWS = 64
BLOCK_MULTIPLY_ADDS = 100**3
WIDEST_BLOCK = 64
NARROWEST_BLOCK = 32
# A time loop's batch rows are shared among numba's threads in ranges of at least this many.
FEWEST_ROWS = 8


def _float32_shapes(*pairs) -> bool:
    """Whether each (array, shape) pair is a float32 NumPy array of that shape."""
    return all(
        type(array) is np.ndarray and array.dtype == _FLOAT32 and array.shape == shape
        for array, shape in pairs
    )


def _steps_of(gates: np.ndarray, count: int = 4):
    """(L, N, H) of an (L, N, count * H) array, or None for another shape."""
    if gates.ndim != 3 or gates.shape[2] % count or not gates.shape[2]:
        return None
    return gates.shape[0], gates.shape[1], gates.shape[2] // count


# ----- forward ------------------------------------------------------------------------------------


def _fused_fits(xp, gates_x, h0, c0, w_hh, b_hh=None, *, reverse) -> bool:
    sizes = type(gates_x) is np.ndarray and _steps_of(gates_x)
    if not sizes:
        return False
    _, batch, size = sizes
    pairs = [(gates_x, gates_x.shape), (h0, (batch, size)), (c0, (batch, size))]
    pairs.append((w_hh, (4 * size, size)))
    if b_hh is not None:
        pairs.append((b_hh, (4 * size,)))
    return _float32_shapes(*pairs) and _loops_run(steps.lstm_forward_loop)


def lstm_recurrence_fused(ctx, xp, gates_x, h0, c0, w_hh, b_hh=None, *, reverse):
    """What ``LSTMRecurrence.forward`` computes: per step one product and one compiled pass."""
    length, batch, gate_size = gates_x.shape
    size = gate_size // 4
    states = np.empty((length, batch, 2 * size), _FLOAT32)
    acts = np.empty((length, batch, gate_size), _FLOAT32)
    bias = np.zeros(gate_size, _FLOAT32) if b_hh is None else b_hh  # + 0 leaves values as they are
    parts = _row_parts(batch, gates_x.size)
    w_hh_t = _column_blocks(w_hh.T, batch // parts)
    recurrent = np.empty((batch, gate_size), _FLOAT32)
    h0, c0 = np.ascontiguousarray(h0), np.ascontiguousarray(c0)
    arrays = (gates_x, h0, c0, w_hh_t, bias, recurrent, acts, states, reverse, parts)
    _loop(steps.lstm_forward_loop, arrays)
    ctx.acts = acts
    return states


def _row_parts(batch: int, work: int) -> int:
    """How many ranges of batch rows a time loop runs at once, one per numba thread free now
    for ``work`` elements, each of at least ``FEWEST_ROWS`` rows; sets numba's thread count to
    match."""
    threads = compiled.thread_count(work)
    parts = max(1, min(threads, batch // FEWEST_ROWS))
    if parts > 1:
        compiled._use_threads(work)  # numba's count for this thread, as compiled.run sets it
    return parts


def _column_blocks(matrix, rows: int):
    """``matrix`` (k, n) as contiguous blocks of its columns (parts, k, width), for products
    of ``rows`` rows by it: packed panels of ``panel_tile.PANEL`` columns for at most
    ``PANEL_ROWS`` rows where they divide n; else blocks of at most ``BLOCK_MULTIPLY_ADDS``
    and at most ``WIDEST_BLOCK`` columns, a power of two dividing n; one block where none
    fits."""
    from .kernels.compiled.panel_tile import PANEL  # (numba is loaded: the loops run)

    inner, columns = matrix.shape
    if rows <= PANEL_ROWS and columns % PANEL == 0:
        width = PANEL
    else:
        width = WIDEST_BLOCK
        while width >= NARROWEST_BLOCK and (
            columns % width or rows * inner * width > BLOCK_MULTIPLY_ADDS
        ):
            width //= 2
        if width < NARROWEST_BLOCK or width >= columns:
            width = columns
    parts = columns // width
    return np.ascontiguousarray(matrix.reshape(inner, parts, width).transpose(1, 0, 2))


def _loop(kernel, arrays) -> None:
    """``kernel``'s compiled time loop, its products by the sgemm ``_sgemm`` finds."""
    compiled.twin_of(kernel)(_sgemm(), *arrays)
    from .kernels.compiled import gemm

    if not gemm.OWN_BLAS:  # NumPy's sgemm ran: its threads may spin for a while
        blas_called()


def _sgemm():
    """The address of a float32 CBLAS gemm, BuildingAI's own BLAS held at one thread where it
    is loaded, else NumPy's; None where neither is found."""
    from .kernels.compiled import gemm  # loads numba and the own BLAS: acceleration is on

    if gemm.OWN_BLAS:
        own_blas.hold_at_one_thread()
    return gemm.ADDRESSES.get(_FLOAT32)


def _loops_run(kernel) -> bool:
    """Whether ``kernel``'s compiled loop and an sgemm for it are at hand."""
    return compiled.twin_of(kernel) is not None and _sgemm() is not None


def _sigmoid(xp, x):
    """sigmoid(x) by the kernel registered for it, or the record's forward."""
    scratch = SimpleNamespace()  # the sigmoid's own context, read by nobody
    if SIGMOID.accelerated:
        return run_accelerated(SIGMOID, scratch, xp, (x,), {})
    return SIGMOID.forward(scratch, xp, x)


def lstm_recurrence(ctx, xp, gates_x, h0, c0, w_hh, b_hh=None, *, reverse):
    """What ``LSTMRecurrence.forward`` computes, step by step in the same order."""
    length, batch, gate_size = gates_x.shape
    size = gate_size // 4
    dtype = xp.result_type(gates_x, h0, c0, w_hh)
    out = xp.empty((length, batch, 2 * size), dtype=dtype)
    acts = xp.empty((length, batch, gate_size), dtype=dtype)  # i, f, g, o after activation
    w_hh_t = w_hh.T
    h, c = h0, c0
    for t in range(length - 1, -1, -1) if reverse else range(length):
        pre = h @ w_hh_t
        blas_called()
        if pre.dtype == dtype:
            pre += gates_x[t]
        else:  # the record's promotion, as h @ w_hh^T + gates_x[t]
            pre = pre + gates_x[t]
        if b_hh is not None:
            pre += b_hh
        act = acts[t]
        act[...] = _sigmoid(xp, pre)
        act[:, 2 * size : 3 * size] = xp.tanh(pre[:, 2 * size : 3 * size])
        c = act[:, size : 2 * size] * c + act[:, :size] * act[:, 2 * size : 3 * size]
        h = act[:, 3 * size :] * xp.tanh(c)
        out[t, :, :size] = h
        out[t, :, size:] = c
    ctx.acts = acts
    return out


register(
    LSTM_RECURRENCE,
    _fused_fits,
    lstm_recurrence_fused,
    name="lstm_recurrence.fused",
    requires=("numba",),
    description="per step one recurrent product and one compiled pass over the gates (float32)",
)
register(
    LSTM_RECURRENCE,
    lambda xp, *arrays, **attrs: True,
    lstm_recurrence,
    name="lstm_recurrence.loop",
    description="each step's recurrent product noted as a BLAS call; sigmoid by its kernel",
)


# ----- back-propagation through time --------------------------------------------------------------


def _grad_fits(xp, grad, acts, states, c0, w_hh, *, reverse) -> bool:
    sizes = type(acts) is np.ndarray and _steps_of(acts)
    if not sizes:
        return False
    length, batch, size = sizes
    return _float32_shapes(
        (grad, (length, batch, 2 * size)),
        (acts, acts.shape),
        (states, (length, batch, 2 * size)),
        (c0, (batch, size)),
        (w_hh, (4 * size, size)),
    ) and _loops_run(steps.lstm_backward_loop)


def lstm_recurrence_grad_fused(ctx, xp, grad, acts, states, c0, w_hh, *, reverse):
    """What ``LSTMRecurrenceGrad.forward`` computes: per step one product and one pass."""
    length, batch, gate_size = acts.shape
    size = gate_size // 4
    out = np.empty((length, batch, 5 * size), _FLOAT32)
    recurrent = np.empty((batch, size), _FLOAT32)  # d pre of the step after, times w_hh
    carry = np.empty((batch, size), _FLOAT32)  # dc * f of the step after
    parts = _row_parts(batch, acts.size)
    c0, w_hh = np.ascontiguousarray(c0), _column_blocks(w_hh, batch // parts)
    arrays = (grad, acts, states, c0, w_hh, recurrent, carry, out, reverse, parts)
    _loop(steps.lstm_backward_loop, arrays)
    return out


register(
    LSTM_RECURRENCE_GRAD,
    _grad_fits,
    lstm_recurrence_grad_fused,
    name="lstm_recurrence_grad.fused",
    requires=("numba",),
    description="per step one product and one compiled pass over the five gradients (float32)",
)


# ----- GRU ----------------------------------------------------------------------------------------


def _gru_fits(xp, gates_x, h0, w_hh, b_hh=None, *, reverse) -> bool:
    sizes = type(gates_x) is np.ndarray and _steps_of(gates_x, 3)
    if not sizes:
        return False
    _, batch, size = sizes
    pairs = [(gates_x, gates_x.shape), (h0, (batch, size)), (w_hh, (3 * size, size))]
    if b_hh is not None:
        pairs.append((b_hh, (3 * size,)))
    return _float32_shapes(*pairs) and _loops_run(gru_steps.gru_forward_loop)


def gru_recurrence_fused(ctx, xp, gates_x, h0, w_hh, b_hh=None, *, reverse):
    """What ``GRURecurrence.forward`` computes: per step one product and one compiled pass."""
    length, batch, gate_size = gates_x.shape
    size = gate_size // 3
    out = np.empty((length, batch, size), _FLOAT32)
    bias = np.zeros(gate_size, _FLOAT32) if b_hh is None else b_hh  # + 0 leaves values as they are
    parts = _row_parts(batch, gates_x.size)
    w_hh_t = _column_blocks(w_hh.T, batch // parts)
    recurrent = np.empty((batch, gate_size), _FLOAT32)
    arrays = (gates_x, np.ascontiguousarray(h0), w_hh_t, bias, recurrent, out, reverse, parts)
    _loop(gru_steps.gru_forward_loop, arrays)
    return out


def _gru_grad_fits(xp, grad, coefficients, w_hh, *, reverse) -> bool:
    sizes = type(grad) is np.ndarray and grad.ndim == 3 and grad.shape
    if not sizes or not sizes[2]:
        return False
    length, batch, size = sizes
    return _float32_shapes(
        (grad, grad.shape), (coefficients, (length, batch, 4 * size)), (w_hh, (3 * size, size))
    ) and _loops_run(gru_steps.gru_backward_loop)


def gru_recurrence_grad_fused(ctx, xp, grad, coefficients, w_hh, *, reverse):
    """What ``GRURecurrenceGrad.forward`` computes: per step one product and one pass."""
    length, batch, size = grad.shape
    out = np.empty((length, batch, size), _FLOAT32)
    carry = np.empty((batch, size), _FLOAT32)  # dh z of the step after
    recurrent = np.empty((batch, size), _FLOAT32)  # that step's hidden gradient times w_hh
    hidden = np.empty((batch, 3 * size), _FLOAT32)
    parts = _row_parts(batch, coefficients.size)
    w_hh = _column_blocks(w_hh, batch // parts)
    arrays = (grad, coefficients, w_hh, carry, recurrent, hidden, out, reverse, parts)
    _loop(gru_steps.gru_backward_loop, arrays)
    return out


register(
    GRU_RECURRENCE,
    _gru_fits,
    gru_recurrence_fused,
    name="gru_recurrence.fused",
    requires=("numba",),
    description="per step one recurrent product and one compiled pass over the gates (float32)",
)
register(
    GRU_RECURRENCE_GRAD,
    _gru_grad_fits,
    gru_recurrence_grad_fused,
    name="gru_recurrence_grad.fused",
    requires=("numba",),
    description="per step one product and one compiled pass over dh and the gate gradients "
    "(float32)",
)


# ----- Elman RNN ----------------------------------------------------------------------------------


def _rnn_fits(xp, gates_x, h0, w_hh, b_hh=None, *, nonlinearity, reverse) -> bool:
    if type(gates_x) is not np.ndarray or gates_x.ndim != 3 or not gates_x.shape[2]:
        return False
    _, batch, size = gates_x.shape
    pairs = [(gates_x, gates_x.shape), (h0, (batch, size)), (w_hh, (size, size))]
    if b_hh is not None:
        pairs.append((b_hh, (size,)))
    return _float32_shapes(*pairs) and _loops_run(elman_steps.rnn_forward_loop)


def rnn_recurrence_fused(ctx, xp, gates_x, h0, w_hh, b_hh=None, *, nonlinearity, reverse):
    """What ``RNNRecurrence.forward`` computes: per step one product and one compiled pass."""
    length, batch, size = gates_x.shape
    out = np.empty((length, batch, size), _FLOAT32)
    bias = np.zeros(size, _FLOAT32) if b_hh is None else b_hh  # + 0 leaves values as they are
    recurrent = np.empty((batch, size), _FLOAT32)
    parts = _row_parts(batch, gates_x.size)
    w_hh_t = _column_blocks(w_hh.T, batch // parts)
    relu = nonlinearity == "relu"
    h0 = np.ascontiguousarray(h0)
    arrays = (gates_x, h0, w_hh_t, bias, recurrent, out, reverse, relu, parts)
    _loop(elman_steps.rnn_forward_loop, arrays)
    return out


def _rnn_grad_fits(xp, grad, states, w_hh, *, nonlinearity, reverse) -> bool:
    if type(states) is not np.ndarray or states.ndim != 3 or not states.shape[2]:
        return False
    size = states.shape[2]
    pairs = [(grad, states.shape), (states, states.shape), (w_hh, (size, size))]
    return _float32_shapes(*pairs) and _loops_run(elman_steps.rnn_backward_loop)


def rnn_recurrence_grad_fused(ctx, xp, grad, states, w_hh, *, nonlinearity, reverse):
    """What ``RNNRecurrenceGrad.forward`` computes: per step one product and one pass."""
    length, batch, size = states.shape
    out = np.empty((length, batch, size), _FLOAT32)
    recurrent = np.empty((batch, size), _FLOAT32)  # d pre of the step after, times w_hh
    relu = nonlinearity == "relu"
    parts = _row_parts(batch, states.size)
    w_hh = _column_blocks(w_hh, batch // parts)
    arrays = (grad, states, w_hh, recurrent, out, reverse, relu, parts)
    _loop(elman_steps.rnn_backward_loop, arrays)
    return out


register(
    RNN_RECURRENCE,
    _rnn_fits,
    rnn_recurrence_fused,
    name="rnn_recurrence.fused",
    requires=("numba",),
    description="per step one recurrent product and one compiled pass (float32)",
)
register(
    RNN_RECURRENCE_GRAD,
    _rnn_grad_fits,
    rnn_recurrence_grad_fused,
    name="rnn_recurrence_grad.fused",
    requires=("numba",),
    description="per step one product and one compiled pass over d pre (float32)",
)


# ----- one cell step ------------------------------------------------------------------------------


def _cell_fits(
    kernel, gates: int, gates_x, gates_h, state, grad=None, grad_width=0, biases=()
) -> bool:
    """Whether a cell's arrays are float32 NumPy arrays of fitting shapes (gates_x, gates_h
    (N, gates * H), the state (N, H), grad (N, grad_width * H), biases (gates * H,)) and
    ``kernel``'s twin runs. (Tested once per step each way: written out, without the pairs
    ``_float32_shapes`` takes.)"""
    if type(state) is not np.ndarray or state.dtype != _FLOAT32 or state.ndim != 2:
        return False
    batch, size = state.shape
    if not size:
        return False
    wide = (batch, gates * size)
    for array in (gates_x, gates_h, *biases):
        if type(array) is not np.ndarray or array.dtype != _FLOAT32:
            return False
    if gates_x.shape != wide or gates_h.shape != wide:
        return False
    for bias in biases:
        if bias.shape != wide[1:]:
            return False
    if grad is not None and (
        type(grad) is not np.ndarray
        or grad.dtype != _FLOAT32
        or grad.shape != (batch, grad_width * size)
    ):
        return False
    return compiled.twin_of(kernel) is not None


def _cell(kernel, width: int, *arrays):
    """``kernel``'s twin on ``arrays``, into a new (N, width * H) float32 array."""
    state = arrays[-1]
    out = np.empty((state.shape[0], width * state.shape[1]), _FLOAT32)
    # contiguous rows let LLVM vectorise the twin's loops (a state cut from [h, c] is not)
    compiled.twin_of(kernel)(*(np.ascontiguousarray(array) for array in arrays), out)
    return out


def _lstm_cell_fits(xp, gates_x, gates_h, c, *biases) -> bool:
    return _cell_fits(steps.lstm_cell_forward, 4, gates_x, gates_h, c, biases=biases)


def lstm_cell_fused(ctx, xp, gates_x, gates_h, c, *biases):
    """What ``LSTMCell.forward`` computes, in one compiled pass."""
    return _cell(steps.lstm_cell_forward, 2, gates_x, gates_h, *_two_biases(biases, c), c)


def _lstm_cell_grad_fits(xp, grad, gates_x, gates_h, c, *biases) -> bool:
    kernel = steps.lstm_cell_backward
    return _cell_fits(kernel, 4, gates_x, gates_h, c, grad, 2, biases=biases)


def lstm_cell_grad_fused(ctx, xp, grad, gates_x, gates_h, c, *biases):
    """What ``LSTMCellGrad.forward`` computes, in one compiled pass."""
    arrays = (grad, gates_x, gates_h, *_two_biases(biases, c), c)
    return _cell(steps.lstm_cell_backward, 5, *arrays)


def _two_biases(biases: tuple, c) -> tuple:
    """b_ih, b_hh of an LSTM cell, zeros (4H,) for none (+ 0 leaves values as they are)."""
    return biases or (np.zeros(4 * c.shape[1], _FLOAT32),) * 2


register(
    LSTM_CELL,
    _lstm_cell_fits,
    lstm_cell_fused,
    name="lstm_cell.fused",
    requires=("numba",),
    description="the step's gates, cell and hidden state in one compiled pass (float32)",
)
register(
    LSTM_CELL_GRAD,
    _lstm_cell_grad_fits,
    lstm_cell_grad_fused,
    name="lstm_cell_grad.fused",
    requires=("numba",),
    description="the step's gates again and the five gradients in one compiled pass (float32)",
)
register(
    GRU_CELL,
    lambda xp, gates_x, gates_h, h: _cell_fits(gru_steps.gru_cell_forward, 3, gates_x, gates_h, h),
    lambda ctx, xp, gates_x, gates_h, h: _cell(gru_steps.gru_cell_forward, 1, gates_x, gates_h, h),
    name="gru_cell.fused",
    requires=("numba",),
    description="the step's gates and new state in one compiled pass (float32)",
)
register(
    GRU_CELL_GRAD,
    lambda xp, grad, gates_x, gates_h, h: _cell_fits(
        gru_steps.gru_cell_backward, 3, gates_x, gates_h, h, grad, 1
    ),
    lambda ctx, xp, grad, gates_x, gates_h, h: _cell(
        gru_steps.gru_cell_backward, 7, grad, gates_x, gates_h, h
    ),
    name="gru_cell_grad.fused",
    requires=("numba",),
    description="the step's gates again and the seven gradients in one compiled pass (float32)",
)


def _elman_cell(kernel, *arrays, nonlinearity):
    """``kernel``'s twin on ``arrays`` (the first two (N, H)) and the nonlinearity, into a new
    (N, H) float32 array."""
    out = np.empty(arrays[1].shape, _FLOAT32)
    for array in arrays:  # contiguous rows let LLVM vectorise the twin's loops
        if not array.flags.c_contiguous:
            arrays = [np.ascontiguousarray(array) for array in arrays]
            break
    compiled.twin_of(kernel)(*arrays, out, nonlinearity == "relu")
    return out


def _rnn_cell_fits(xp, gates_x, gates_h, *biases, nonlinearity) -> bool:
    kernel = elman_steps.rnn_cell_forward
    return _cell_fits(kernel, 1, gates_x, gates_h, gates_h, biases=biases)


def rnn_cell_fused(ctx, xp, gates_x, gates_h, *biases, nonlinearity):
    """What ``RNNCell.forward`` computes, in one compiled pass."""
    biases = biases or (np.zeros(gates_h.shape[1], _FLOAT32),) * 2
    kernel = elman_steps.rnn_cell_forward
    return _elman_cell(kernel, gates_x, gates_h, *biases, nonlinearity=nonlinearity)


def _rnn_cell_grad_fits(xp, grad, h, *, nonlinearity) -> bool:
    return _cell_fits(elman_steps.rnn_cell_backward, 1, h, h, h, grad, 1)


def rnn_cell_grad_fused(ctx, xp, grad, h, *, nonlinearity):
    """What ``RNNCellGrad.forward`` computes, in one compiled pass."""
    return _elman_cell(elman_steps.rnn_cell_backward, grad, h, nonlinearity=nonlinearity)


register(
    RNN_CELL,
    _rnn_cell_fits,
    rnn_cell_fused,
    name="rnn_cell.fused",
    requires=("numba",),
    description="the step's sum and nonlinearity in one compiled pass (float32)",
)
register(
    RNN_CELL_GRAD,
    _rnn_cell_grad_fits,
    rnn_cell_grad_fused,
    name="rnn_cell_grad.fused",
    requires=("numba",),
    description="the nonlinearity's slope times the gradient in one compiled pass (float32)",
)

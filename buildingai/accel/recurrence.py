"""A faster forward of ``lstm_recurrence`` (``ops/rnn.py``): the record's time loop, with each
step's recurrent product noted as a BLAS call (``backend.threads.blas_called``, so that the
element-wise work right after it stays on the calling thread while BLAS's threads may still
spin) and the gate sigmoid through the kernels registered for ``sigmoid``."""

from __future__ import annotations

from types import SimpleNamespace

from ..backend.threads import blas_called
from ..ops.rnn import LSTM_RECURRENCE
from ..ops.special import SIGMOID
from .registry import register, run_accelerated


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
    lambda xp, *arrays, **attrs: True,
    lstm_recurrence,
    name="lstm_recurrence.loop",
    description="each step's recurrent product noted as a BLAS call; sigmoid by its kernel",
)

"""``lstm_recurrence``: the time loop of one LSTM layer and direction, one fused op.

The op record (forward, back-propagation through time, ONNX Scan mapping) is
``ops.rnn.LSTMRecurrence``; this is its functional entry point for ``nn.functional.rnn``.
"""

from __future__ import annotations

from ...autograd.tensor import Tensor
from ...ops.rnn import LSTM_RECURRENCE, LSTMRecurrence

__all__ = ["LSTMRecurrence", "LSTM_RECURRENCE", "lstm_recurrence"]


def lstm_recurrence(
    gates_x: Tensor,
    h0: Tensor,
    c0: Tensor,
    w_hh: Tensor,
    b_hh: Tensor | None = None,
    reverse: bool = False,
) -> Tensor:
    """Run the LSTM time loop: (L, N, 4H) input gates -> (L, N, 2H) holding [h_t, c_t]."""
    if b_hh is None:
        return LSTM_RECURRENCE(gates_x, h0, c0, w_hh, reverse=reverse)
    return LSTM_RECURRENCE(gates_x, h0, c0, w_hh, b_hh, reverse=reverse)

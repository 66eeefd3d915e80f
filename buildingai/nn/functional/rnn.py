"""Recurrent layers as functions: one time step of each cell (Elman RNN, LSTM, GRU) and whole
multi-layer, optionally bidirectional sequences, with PyTorch's weight layouts.

Layouts (H = hidden size): an LSTM's ``w_ih`` is (4H, input) with the gates stacked in the
order input, forget, cell, output (i, f, g, o); a GRU's is (3H, input) in the order reset,
update, new (r, z, n); an Elman RNN's is (H, input). ``w_hh`` is laid out the same way against
the hidden state.

Speed: the input part of the gates does not depend on the previous step, so a layer projects the
whole sequence with one GEMM, ``x @ w_ih^T`` on (L * N, input) rows. Only the recurrent part,
one ``h @ w_hh^T`` per step and the gate arithmetic, runs in the loop over time. The time loops
of the LSTM (without projections), the Elman RNN and the GRU are one fused op each
(``ops/rnn.py``, ``rnn_elman.py``, ``rnn_gru.py``), with back-propagation through time as one
gradient op; a step of the LSTM and GRU cells, and of the LSTM with projections, is its two
products and one op for the gate arithmetic (``ops/rnn_cells.py``), and a step of the Elman
cell one op with its products (``ops/rnn_cell_step.py``): per-op overhead dominates at the
sizes of one step.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from ...autograd.tensor import Tensor
from ...errors import BuildingAIError
from ...functions import concatenate, dropout, linear, stack, zeros
from ...ops.rnn import LSTM_RECURRENCE
from ...ops.rnn_cell_step import RNN_CELL_STEP
from ...ops.rnn_cells import GRU_CELL, LSTM_CELL, RNN_CELL
from ...ops.rnn_elman import RNN_RECURRENCE
from ...ops.rnn_gru import GRU_RECURRENCE

__all__ = [
    "rnn_tanh_cell",
    "rnn_relu_cell",
    "lstm_cell",
    "gru_cell",
    "rnn_tanh",
    "rnn_relu",
    "lstm",
    "gru",
]

# Gates per hidden unit of each cell kind: the first dimension of w_ih and w_hh is gates * H.
GATES = {"rnn_tanh": 1, "rnn_relu": 1, "lstm": 4, "gru": 3}


# ----- one time step, given the input part of the gates ------------------------------------------
# ``gates_x`` is ``x_t @ w_ih^T + b_ih``: (N, gates * H), computed for all steps at once.


def _lstm_step(
    gates_x: Tensor,
    h: Tensor,
    c: Tensor,
    w_hh: Tensor,
    b_hh: Tensor | None,
    w_hr: Tensor | None = None,
) -> tuple[Tensor, Tensor]:
    """One LSTM step: h (N, P), c (N, H) -> (h', c'), with P = H, or the projection size when
    ``w_hr`` (P, H) projects the new hidden state down (h' = w_hr (o * tanh c'))."""
    size = c.shape[-1]
    # the gate arithmetic of the step as one op (ops/rnn_cells.py): [h', c'] (N, 2H)
    states = LSTM_CELL(gates_x, linear(h, w_hh, b_hh), c)
    return _split_states(states, size, w_hr)


def _split_states(states: Tensor, size: int, w_hr: Tensor | None = None) -> tuple[Tensor, Tensor]:
    """(h', c') of an LSTM step's [h', c'] (N, 2H), h' projected by ``w_hr`` when given."""
    h_next, c_next = states[:, :size], states[:, size:]
    if w_hr is not None:
        h_next = linear(h_next, w_hr)
    return h_next, c_next


# ----- single-step cells (the functional side of RNNCell, LSTMCell, GRUCell) ---------------------


def _cell_products(x, h, w_ih, w_hh, b_ih, b_hh) -> tuple[Tensor, Tensor, tuple]:
    """x w_ih^T and h w_hh^T, and the biases for the cell op to add: both there, or each in its
    product when one is None. Added by the cell op, their gradient is one sum, not two."""
    if b_ih is not None and b_hh is not None:
        return linear(x, w_ih), linear(h, w_hh), (b_ih, b_hh)
    return linear(x, w_ih, b_ih), linear(h, w_hh, b_hh), ()


def _check_cell(name: str, x: Tensor, h: Tensor, w_ih: Tensor, state_size: int) -> None:
    if x.ndim != 2 or x.shape[1] != w_ih.shape[1]:
        raise BuildingAIError(
            f"[{name}] expected input (N, {w_ih.shape[1]}), got {tuple(x.shape)}",
            help="the last input dimension must equal input_size (w_ih.shape[1])",
        )
    if tuple(h.shape) != (x.shape[0], state_size):
        raise BuildingAIError(
            f"[{name}] expected a state of shape {(x.shape[0], state_size)} for input "
            f"{tuple(x.shape)}, got {tuple(h.shape)}",
            help="states are (batch, hidden_size), with the batch size of the input",
        )


def _elman_step(name, x, h, w_ih, w_hh, b_ih, b_hh, nonlinearity: str) -> Tensor:
    """One Elman step as one op (``rnn_cell_step``) where the biases are both given or both
    None; with one of them, its product carries it and ``rnn_cell`` adds the products."""
    _check_cell(name, x, h, w_ih, w_hh.shape[1])
    if (b_ih is None) == (b_hh is None):
        biases = () if b_ih is None else (b_ih, b_hh)
        return RNN_CELL_STEP(x, h, w_ih, w_hh, *biases, nonlinearity=nonlinearity)
    gates_x, gates_h, biases = _cell_products(x, h, w_ih, w_hh, b_ih, b_hh)
    return RNN_CELL(gates_x, gates_h, *biases, nonlinearity=nonlinearity)


def rnn_tanh_cell(
    x: Tensor,
    h: Tensor,
    w_ih: Tensor,
    w_hh: Tensor,
    b_ih: Tensor | None = None,
    b_hh: Tensor | None = None,
) -> Tensor:
    """h' = tanh(x w_ih^T + b_ih + h w_hh^T + b_hh). x: (N, I), h: (N, H) -> (N, H)."""
    return _elman_step("rnn_tanh_cell", x, h, w_ih, w_hh, b_ih, b_hh, "tanh")


def rnn_relu_cell(
    x: Tensor,
    h: Tensor,
    w_ih: Tensor,
    w_hh: Tensor,
    b_ih: Tensor | None = None,
    b_hh: Tensor | None = None,
) -> Tensor:
    """h' = relu(x w_ih^T + b_ih + h w_hh^T + b_hh). x: (N, I), h: (N, H) -> (N, H)."""
    return _elman_step("rnn_relu_cell", x, h, w_ih, w_hh, b_ih, b_hh, "relu")


def lstm_cell(
    x: Tensor,
    state: tuple[Tensor, Tensor],
    w_ih: Tensor,
    w_hh: Tensor,
    b_ih: Tensor | None = None,
    b_hh: Tensor | None = None,
) -> tuple[Tensor, Tensor]:
    """One LSTM step: x (N, I), state (h (N, H), c (N, H)) -> (h', c').

    i, f, o = sigmoid of their gate rows, g = tanh; c' = f * c + i * g; h' = o * tanh(c').
    """
    h, c = state
    _check_cell("lstm_cell", x, h, w_ih, w_hh.shape[1])
    _check_cell("lstm_cell", x, c, w_ih, w_hh.shape[0] // 4)
    gates_x, gates_h, biases = _cell_products(x, h, w_ih, w_hh, b_ih, b_hh)
    return _split_states(LSTM_CELL(gates_x, gates_h, c, *biases), c.shape[-1])


def gru_cell(
    x: Tensor,
    h: Tensor,
    w_ih: Tensor,
    w_hh: Tensor,
    b_ih: Tensor | None = None,
    b_hh: Tensor | None = None,
) -> Tensor:
    """One GRU step: x (N, I), h (N, H) -> (N, H).

    r, z = sigmoid(x W_ir + b_ir + h W_hr + b_hr), sigmoid(... z rows ...);
    n = tanh(x W_in + b_in + r * (h W_hn + b_hn)); h' = (1 - z) * n + z * h.
    """
    _check_cell("gru_cell", x, h, w_ih, w_hh.shape[1])
    return GRU_CELL(linear(x, w_ih, b_ih), linear(h, w_hh, b_hh), h)


# ----- whole sequences ---------------------------------------------------------------------------


def _time_steps(gates_x: Tensor, reverse: bool) -> list[Tensor]:
    """The L steps of ``gates_x`` (L, N, G) as (N, G) slices, in processing order.

    The gradient of a slice is a zero tensor shaped like its source with the slice written in,
    and the engine adds these up: cutting L steps straight from the sequence moves O(L^2 N G)
    bytes in backward. Cutting it into about sqrt(L) blocks first, then each block into steps,
    moves O(L^1.5 N G), at the price of sqrt(L) extra slices.
    """
    length = gates_x.shape[0]
    block = max(1, math.isqrt(length))
    steps = []
    if block < 4:  # short sequences: the blocks would cost more ops than they save
        steps = [gates_x[t] for t in range(length)]
    else:
        for start in range(0, length, block):
            chunk = gates_x[start : start + block]
            steps.extend(chunk[t] for t in range(chunk.shape[0]))
    return steps[::-1] if reverse else steps


def _run_direction(
    mode: str,
    x: Tensor,
    state: tuple[Tensor, ...],
    weights: Sequence[Tensor | None],
    reverse: bool,
) -> tuple[Tensor, tuple[Tensor, ...]]:
    """One layer in one direction over x (L, N, I): (output (L, N, H_out), final states)."""
    w_ih, w_hh, b_ih, b_hh = weights[:4]
    w_hr = weights[4] if len(weights) > 4 else None
    if mode in ("rnn_tanh", "rnn_relu") or (mode == "lstm" and w_hr is None):
        # Both biases sit outside every nonlinearity: added once, by the fused loop, their
        # gradient is one sum over the sequence and the input GEMM needs no pass of its own.
        gates_x = linear(x, w_ih)  # (L, N, G * H): the input half of every gate, one GEMM
        bias = () if b_ih is None and b_hh is None else (_summed(b_ih, b_hh),)
        if mode == "lstm":
            # The fused time loop (ops/rnn.py): one op for the sequence, not ops per step.
            h, c = state
            size = c.shape[-1]
            states = LSTM_RECURRENCE(gates_x, h, c, w_hh, *bias, reverse=reverse)  # [h_t, c_t]
            last = states[0 if reverse else -1]
            return states[..., :size], (last[:, :size], last[:, size:])
        # the fused time loop as well (ops/rnn_elman.py)
        (h,) = state
        attrs = {"nonlinearity": mode[4:], "reverse": reverse}
        hs = RNN_RECURRENCE(gates_x, h, w_hh, *bias, **attrs)  # (L, N, H)
        return hs, (hs[0 if reverse else -1],)
    # The input half of every gate for every step: one GEMM on (L * N, I) rows.
    gates_x = linear(x, w_ih, b_ih)  # (L, N, G * H)
    if mode == "gru":
        # b_hn sits inside the reset product: the GRU's hidden bias stays with the loop
        (h,) = state
        bias = () if b_hh is None else (b_hh,)
        hs = GRU_RECURRENCE(gates_x, h, w_hh, *bias, reverse=reverse)  # (L, N, H)
        return hs, (hs[0 if reverse else -1],)
    # an LSTM with projections: its steps composed of primitives
    h, c = state
    outputs = []
    for step in _time_steps(gates_x, reverse):  # L x (N, 4H)
        h, c = _lstm_step(step, h, c, w_hh, b_hh, w_hr)
        outputs.append(h)
    final = (h, c)
    if reverse:
        outputs.reverse()  # the output at time t belongs at position t in both directions
    return stack(outputs), final


def _summed(first: Tensor | None, second: Tensor | None) -> Tensor:
    """first + second, or the one that is not None."""
    if first is None or second is None:
        return second if first is None else first
    return first + second


def _recurrent(
    mode: str,
    x: Tensor,
    states: tuple[Tensor, ...] | None,
    weights: Sequence[Sequence[Tensor | None]],
    num_layers: int,
    bidirectional: bool,
    dropout_p: float,
    training: bool,
    batch_first: bool,
) -> tuple[Tensor, tuple[Tensor, ...]]:
    """Run a stacked (and optionally bidirectional) recurrent network; see ``lstm``."""
    directions = 2 if bidirectional else 1
    if len(weights) != num_layers * directions:
        raise BuildingAIError(
            f"[{mode}] expected {num_layers * directions} weight groups (num_layers "
            f"{num_layers} x {directions} directions), got {len(weights)}",
            help="list (w_ih, w_hh, b_ih, b_hh) per layer, the reverse direction after the "
            "forward one",
        )
    if batch_first:
        x = x.swapaxes(0, 1)  # (N, L, I) -> (L, N, I), a view
    batch = x.shape[1]
    if states is None:
        states = _zero_states(mode, x, batch, weights[0], num_layers * directions)
    finals: list[tuple[Tensor, ...]] = []
    layer_input = x
    for layer in range(num_layers):
        if layer > 0 and dropout_p > 0 and training:
            # Dropout sits between layers only, never after the last one (as in PyTorch).
            layer_input = dropout(layer_input, dropout_p, training=True)
        outputs = []
        for direction in range(directions):
            index = layer * directions + direction
            state = tuple(s[index] for s in states)
            output, final = _run_direction(
                mode, layer_input, state, weights[index], reverse=direction == 1
            )
            outputs.append(output)
            finals.append(final)
        layer_input = outputs[0] if directions == 1 else concatenate(outputs, axis=-1)
    output = layer_input.swapaxes(0, 1) if batch_first else layer_input
    final_states = tuple(stack([f[k] for f in finals]) for k in range(len(finals[0])))
    return output, final_states


def _zero_states(mode: str, x: Tensor, batch: int, first: Sequence, count: int) -> tuple:
    w_hh = first[1]
    hidden = w_hh.shape[1]  # the projection size when an LSTM has one
    zeros_h = zeros((count, batch, hidden), dtype=x.dtype, device=x.device)
    if mode != "lstm":
        return (zeros_h,)
    cell = w_hh.shape[0] // 4
    return zeros_h, zeros((count, batch, cell), dtype=x.dtype, device=x.device)


def _sequence_function(mode: str):
    def run(
        x: Tensor,
        hx,
        weights: Sequence[Sequence[Tensor | None]],
        num_layers: int = 1,
        bidirectional: bool = False,
        dropout_p: float = 0.0,
        training: bool = True,
        batch_first: bool = False,
    ):
        states = None if hx is None else (tuple(hx) if mode == "lstm" else (hx,))
        output, final = _recurrent(
            mode, x, states, weights, num_layers, bidirectional, dropout_p, training, batch_first
        )
        return output, (final if mode == "lstm" else final[0])

    run.__name__ = mode
    return run


rnn_tanh = _sequence_function("rnn_tanh")
rnn_relu = _sequence_function("rnn_relu")
lstm = _sequence_function("lstm")
gru = _sequence_function("gru")

_SEQUENCE_DOC = """Run a {title} over a whole batched sequence.

    x: (L, N, I), or (N, L, I) with ``batch_first``; hx: {state} or None for zeros, each
    (D * num_layers, N, H) with D = 2 when bidirectional, else 1. ``weights`` holds one group
    (w_ih, w_hh, b_ih, b_hh{extra}) per layer and direction (layer 0 forward, layer 0 reverse,
    layer 1 forward, ...); biases may be None. Dropout with probability ``dropout_p`` is applied
    to the input of every layer but the first while ``training``.

    Returns (output (L, N, D * H) or (N, L, D * H), final {state}).
    """
rnn_tanh.__doc__ = _SEQUENCE_DOC.format(title="tanh Elman RNN", state="h", extra="")
rnn_relu.__doc__ = _SEQUENCE_DOC.format(title="ReLU Elman RNN", state="h", extra="")
lstm.__doc__ = _SEQUENCE_DOC.format(
    title="LSTM", state="(h, c)", extra=", optionally w_hr (P, H) for projections"
)
gru.__doc__ = _SEQUENCE_DOC.format(title="GRU", state="h", extra="")

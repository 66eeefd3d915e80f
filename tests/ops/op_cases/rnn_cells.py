"""Cases of the recurrent cells' step ops (``ops/rnn_cells.py``, ``ops/rnn_cell_step.py``): each
cell against PyTorch's step written with its primitives, each gradient op by finite differences
(first and second)."""

from __future__ import annotations

from .base import NO_ONNX_MAPPING, Draw, Sample, case, torch


def _gates(d: Draw, count: int, hidden: int, **options):
    return d.floats("n", count * hidden, low=-1.5, high=1.5, **options)


def _biases(d: Draw, width: int) -> tuple:
    """None, or b_ih and b_hh (width,)."""
    return d.choice(((), tuple(d.floats(width, low=-1.0, high=1.0) for _ in range(2))))


def _lstm_cell(d: Draw) -> Sample:
    hidden = d.size(1, 3)
    state = d.floats("n", hidden, low=-1.0, high=1.0)
    gates = _gates(d, 4, hidden), _gates(d, 4, hidden)
    return d.call("lstm_cell", *gates, state, *_biases(d, 4 * hidden))


def _torch_lstm_cell(gates_x, gates_h, c, *biases):
    i, f, g, o = (gates_x + gates_h + sum(biases)).chunk(4, dim=1)
    c_next = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
    return torch.cat([torch.sigmoid(o) * torch.tanh(c_next), c_next], dim=1)


def _lstm_cell_grad(d: Draw) -> Sample:
    hidden = d.size(1, 3)
    grad = d.floats("n", 2 * hidden)
    state = d.floats("n", hidden, low=-1.0, high=1.0)
    gates = _gates(d, 4, hidden), _gates(d, 4, hidden)
    return d.call("lstm_cell_grad", grad, *gates, state, *_biases(d, 4 * hidden))


def _gru_cell(d: Draw) -> Sample:
    hidden = d.size(1, 3)
    state = d.floats("n", hidden, low=-1.0, high=1.0)
    return d.call("gru_cell", _gates(d, 3, hidden), _gates(d, 3, hidden), state)


def _torch_gru_cell(gates_x, gates_h, h):
    x_r, x_z, x_n = gates_x.chunk(3, dim=1)
    h_r, h_z, h_n = gates_h.chunk(3, dim=1)
    r, z = torch.sigmoid(x_r + h_r), torch.sigmoid(x_z + h_z)
    n = torch.tanh(x_n + r * h_n)
    return (1 - z) * n + z * h


def _gru_cell_grad(d: Draw) -> Sample:
    hidden = d.size(1, 3)
    grad = d.floats("n", hidden)
    state = d.floats("n", hidden, low=-1.0, high=1.0)
    return d.call("gru_cell_grad", grad, _gates(d, 3, hidden), _gates(d, 3, hidden), state)


def _rnn_cell(d: Draw) -> Sample:
    hidden = d.size(1, 4)
    nonlinearity = d.choice(("tanh", "relu"))
    # relu: sums kept away from its kink, where finite differences do not apply
    low = 0.1 if nonlinearity == "relu" else -1.5
    gates_x = d.floats("n", hidden, low=low, high=1.5)
    gates_h = d.floats("n", hidden, low=low, high=1.5)
    biases = () if nonlinearity == "relu" else _biases(d, hidden)  # relu: kept off its kink
    return d.call("rnn_cell", gates_x, gates_h, *biases, nonlinearity=nonlinearity)


def _torch_rnn_cell(gates_x, gates_h, *biases, nonlinearity):
    pre = gates_x + gates_h + sum(biases)
    return torch.tanh(pre) if nonlinearity == "tanh" else torch.relu(pre)


def _rnn_cell_step(d: Draw) -> Sample:
    inputs, hidden = d.size(1, 3), d.size(1, 4)
    nonlinearity = d.choice(("tanh", "relu"))
    # relu: every operand positive, so the sums stay off its kink
    low = 0.1 if nonlinearity == "relu" else -1.0
    x, h = d.floats("n", inputs, low=low), d.floats("n", hidden, low=low)
    w_ih, w_hh = d.floats(hidden, inputs, low=low), d.floats(hidden, hidden, low=low)
    biases = d.choice(((), tuple(d.floats(hidden, low=low) for _ in range(2))))
    return d.call("rnn_cell_step", x, h, w_ih, w_hh, *biases, nonlinearity=nonlinearity)


def _torch_rnn_cell_step(x, h, w_ih, w_hh, *biases, nonlinearity):
    return _torch_rnn_cell(x @ w_ih.T, h @ w_hh.T, *biases, nonlinearity=nonlinearity)


def _rnn_cell_grad(d: Draw) -> Sample:
    hidden = d.size(1, 4)
    grad = d.floats("n", hidden)
    states = d.floats("n", hidden, low=0.1, high=0.9)  # off relu's kink
    return d.call("rnn_cell_grad", grad, states, nonlinearity=d.choice(("tanh", "relu")))


case("lstm_cell", _lstm_cell, torch=_torch_lstm_cell, gradgrad=True)
case("gru_cell", _gru_cell, torch=_torch_gru_cell, gradgrad=True)
case("rnn_cell", _rnn_cell, torch=_torch_rnn_cell, gradgrad=True)
case("rnn_cell_step", _rnn_cell_step, torch=_torch_rnn_cell_step, gradgrad=True)
for name, make in (
    ("lstm_cell_grad", _lstm_cell_grad),
    ("gru_cell_grad", _gru_cell_grad),
    ("rnn_cell_grad", _rnn_cell_grad),
):
    case(name, make, gradcheck=True, gradgrad=True, onnx=NO_ONNX_MAPPING)

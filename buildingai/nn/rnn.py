"""Recurrent layers: RNN (tanh or relu), LSTM and GRU over whole sequences, and the single-step
RNNCell, LSTMCell and GRUCell.

Constructor arguments, parameter names (``weight_ih_l0``, ``bias_hh_l1_reverse``...), layouts
and initialisation (every parameter U(-1/sqrt(hidden_size), 1/sqrt(hidden_size))) are
PyTorch's, so state dicts move between the two frameworks. The math lives in
``nn.functional.rnn``; these classes own the parameters and check the shapes.

Packed input (``nn.utils.rnn.PackedSequence``). A packed batch is sorted by decreasing length,
so the sequences still running at any step are its first ``batch_sizes[t]``, and the steps over
which that number stays the same are contiguous rows of the packed data. Each layer and
direction runs the padded path's time loop once per such run of steps, on exactly the sequences
that are running: the forward direction drops the rows of the sequences that have ended (their
state at that moment is their final state), the reverse direction, going back in time, adds the
rows of sequences as it reaches their last element, starting from their initial state. Nothing
is computed on padding, every output and final state is exact, and the number of loop calls is
the number of distinct lengths; outputs come out packed, in the packed data's order.
"""

from __future__ import annotations

import math
import numbers
import warnings

from ..autograd.tensor import Tensor
from ..errors import ArgumentError, BuildingAIError, DTypeError, ShapeError
from ..functions import concatenate, dropout, stack, zeros
from . import init
from ._utils import empty_parameter
from .functional import rnn as F
from .module import Module
from .utils.rnn import PackedSequence, _read_batch_sizes

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]


def _check_sizes(name: str, **sizes: int) -> None:
    for what, value in sizes.items():
        if not isinstance(value, numbers.Integral) or isinstance(value, bool) or value <= 0:
            raise ArgumentError(f"[{name}] {what} must be a positive integer, got {value!r}")


def _check_nonlinearity(name: str, nonlinearity: str) -> None:
    if nonlinearity not in ("tanh", "relu"):
        raise ArgumentError(f"[{name}] unknown nonlinearity {nonlinearity!r}; use 'tanh' or 'relu'")


def _reset_uniform(module: Module) -> None:
    """Every parameter of ``module`` from U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)), as
    PyTorch initialises its recurrent layers and cells."""
    bound = 1.0 / math.sqrt(module.hidden_size)
    for param in module.parameters():
        init.uniform_(param, -bound, bound)


class RNNBase(Module):
    """Shared parts of RNN, LSTM and GRU: parameters per layer and direction, shape checks and
    the call into the functional layer. ``mode`` is 'rnn_tanh', 'rnn_relu', 'lstm' or 'gru'."""

    def __init__(
        self,
        mode: str,
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        bias: bool = True,
        batch_first: bool = False,
        dropout: float = 0.0,
        bidirectional: bool = False,
        proj_size: int = 0,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__()
        name = type(self).__name__
        _check_sizes(name, input_size=input_size, hidden_size=hidden_size, num_layers=num_layers)
        if (
            not isinstance(dropout, numbers.Real)
            or isinstance(dropout, bool)
            or not 0 <= dropout <= 1
        ):
            raise ArgumentError(
                f"[{name}] dropout must be a number in [0, 1] (the probability of zeroing an "
                f"element), got {dropout!r}"
            )
        if dropout > 0 and num_layers == 1:
            warnings.warn(
                f"{name}: dropout={dropout} has no effect with num_layers=1: dropout acts "
                "between stacked layers only",
                stacklevel=3,
            )
        if not isinstance(proj_size, numbers.Integral) or proj_size < 0:
            raise ArgumentError(
                f"[{name}] proj_size must be a non-negative integer, got {proj_size!r}"
            )
        if proj_size and mode != "lstm":
            raise ArgumentError(f"[{name}] proj_size is supported by LSTM only, got {proj_size}")
        if proj_size >= hidden_size:
            raise ArgumentError(
                f"[{name}] proj_size ({proj_size}) has to be smaller than hidden_size "
                f"({hidden_size})"
            )
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = proj_size
        directions = 2 if bidirectional else 1
        # The hidden state h has the projection size when there is one; the cell state c
        # always has hidden_size.
        state_size = proj_size or hidden_size
        gate_size = F.GATES[mode] * hidden_size
        self._weight_names: list[list[str]] = []
        for layer in range(num_layers):
            layer_input = input_size if layer == 0 else state_size * directions
            for direction in range(directions):
                suffix = f"_l{layer}" + ("_reverse" if direction == 1 else "")
                shapes = {
                    "weight_ih": (gate_size, layer_input),
                    "weight_hh": (gate_size, state_size),
                }
                if bias:
                    shapes.update(bias_ih=(gate_size,), bias_hh=(gate_size,))
                if proj_size:
                    shapes["weight_hr"] = (proj_size, hidden_size)
                for kind, shape in shapes.items():
                    setattr(self, kind + suffix, empty_parameter(shape, dtype, device))
                self._weight_names.append([kind + suffix for kind in shapes])
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Draw every weight and bias again from U(-1/sqrt(hidden_size), 1/sqrt(hidden_size))."""
        _reset_uniform(self)

    def flatten_parameters(self) -> None:
        """Nothing to do: weights are used where they are (kept for PyTorch code that calls it)."""

    @property
    def all_weights(self) -> list[list[Tensor]]:
        """The parameters per layer and direction, in PyTorch's order."""
        return [[getattr(self, name) for name in names] for names in self._weight_names]

    def _weight_groups(self) -> list[list[Tensor | None]]:
        """Per layer and direction: [w_ih, w_hh, b_ih, b_hh] (+ [w_hr]), None for no bias."""
        groups = []
        for names in self._weight_names:
            suffix = names[0][len("weight_ih") :]
            group = [getattr(self, "weight_ih" + suffix), getattr(self, "weight_hh" + suffix)]
            if self.bias:
                group += [getattr(self, "bias_ih" + suffix), getattr(self, "bias_hh" + suffix)]
            else:
                group += [None, None]
            if self.proj_size:
                group.append(getattr(self, "weight_hr" + suffix))
            groups.append(group)
        return groups

    def _state_shapes(self, batch: int | None) -> list[tuple[int, ...]]:
        """Expected shapes of the initial states (h, and c for an LSTM); no batch dimension for
        unbatched input."""
        count = self.num_layers * (2 if self.bidirectional else 1)
        lead = (count,) if batch is None else (count, batch)
        shapes = [lead + (self.proj_size or self.hidden_size,)]
        if self.mode == "lstm":
            shapes.append(lead + (self.hidden_size,))
        return shapes

    def _check_input(self, x: Tensor) -> bool:
        """Validate x; returns whether it is batched."""
        name = type(self).__name__
        if not isinstance(x, Tensor):
            raise TypeError(f"[{name}] expects a Tensor input, got {type(x).__name__}")
        layout = "(N, L, input_size)" if self.batch_first else "(L, N, input_size)"
        if x.ndim not in (2, 3):
            raise ShapeError(
                f"[{name}] expected a 3-D batched input {layout} or a 2-D unbatched input "
                f"(L, input_size), got shape {tuple(x.shape)}",
                help="add or remove a batch dimension (x.unsqueeze(...) / x.squeeze(...))",
            )
        if x.shape[-1] != self.input_size:
            raise ShapeError(
                f"[{name}] expected input with {self.input_size} features (input_size) in the "
                f"last dimension, got shape {tuple(x.shape)}",
                help=f"inputs are {layout}; check input_size and batch_first",
            )
        if x.dtype.kind != "f":
            raise DTypeError(
                f"[{name}] expected a floating-point input, got {x.dtype}",
                help="convert it with x.float() or x.astype(...)",
            )
        return x.ndim == 3

    def _check_states(self, states: list[Tensor], batch: int | None) -> None:
        name = type(self).__name__
        labels = ["h0", "c0"]
        for label, state, shape in zip(labels, states, self._state_shapes(batch)):
            if not isinstance(state, Tensor) or tuple(state.shape) != shape:
                got = tuple(state.shape) if isinstance(state, Tensor) else type(state).__name__
                kind = "batched" if batch is not None else "unbatched"
                raise ShapeError(
                    f"[{name}] expected {label} of shape {shape} for {kind} input, got {got}",
                    help="initial states are (num_layers * num_directions, batch, size); "
                    "for unbatched input leave out the batch dimension",
                )

    def _initial_states(self, hx, batch: int | None) -> list[Tensor] | None:
        """hx as a checked list of states ([h0], or [h0, c0] for an LSTM), None for zeros."""
        if hx is None:
            return None
        if self.mode == "lstm":
            if not isinstance(hx, (tuple, list)) or len(hx) != 2:
                raise BuildingAIError(
                    f"[{type(self).__name__}] expected hx as a pair (h0, c0), got "
                    f"{type(hx).__name__}",
                    help="pass hx=(h0, c0), or None for zero states",
                )
            states = list(hx)
        else:
            states = [hx]
        self._check_states(states, batch)
        return states

    def forward(self, x: Tensor | PackedSequence, hx=None):
        """x: (L, N, input_size), (N, L, input_size) with batch_first, or unbatched
        (L, input_size); hx: initial state(s) or None for zeros.

        Returns (output, h_n) — for an LSTM (output, (h_n, c_n)) — with output
        (L, N, D * H_out) (batch first when batch_first) and h_n (D * num_layers, N, H_out);
        D = 2 when bidirectional, H_out = proj_size or hidden_size. Unbatched inputs give
        outputs without the batch dimension.

        x may also be a ``PackedSequence`` with data (sum of lengths, input_size), hx then in
        the batch's original order: the output is packed the same way, with data
        (sum of lengths, D * H_out), and h_n holds each sequence's state after its own last
        element, in the original order.
        """
        if isinstance(x, PackedSequence):
            return self._forward_packed(x, hx)
        batched = self._check_input(x)
        batch = x.shape[0 if self.batch_first else 1] if batched else None
        states = self._initial_states(hx, batch)
        if not batched:
            # A batch of one, removed again below.
            x = x.unsqueeze(0 if self.batch_first else 1)
            if states is not None:
                states = [s.unsqueeze(1) for s in states]
        output, final = F._recurrent(
            self.mode,
            x,
            None if states is None else tuple(states),
            self._weight_groups(),
            self.num_layers,
            self.bidirectional,
            self.dropout,
            self.training,
            self.batch_first,
        )
        if not batched:
            output = output.squeeze(0 if self.batch_first else 1)
            final = tuple(s.squeeze(1) for s in final)
        return output, (final if self.mode == "lstm" else final[0])

    def _forward_packed(self, packed: PackedSequence, hx):
        """The layer over a packed batch: data (sum of lengths, input_size), hx in the batch's
        original order -> (PackedSequence with data (sum of lengths, D * H_out) and the input's
        batch_sizes and permutations, final state(s) (D * num_layers, B, H_out) in the original
        order)."""
        name = type(self).__name__
        batch_sizes = _read_batch_sizes(packed, name)
        data = packed.data
        if data.ndim != 2 or data.shape[-1] != self.input_size:
            raise ShapeError(
                f"[{name}] expected packed data (sum of lengths, {self.input_size}), got shape "
                f"{tuple(data.shape)}",
                help="pack a padded batch (L, N, input_size) with pack_padded_sequence",
            )
        if data.dtype.kind != "f":
            raise DTypeError(
                f"[{name}] expected a floating-point input, got {data.dtype}",
                help="convert it with packed.float() or packed.to(...)",
            )
        states = self._initial_states(hx, batch_sizes[0])
        if states is not None and packed.sorted_indices is not None:
            # hx follows the caller's batch order; the packed rows follow the sorted one
            states = [s.index_select(1, packed.sorted_indices) for s in states]
        output, final = _packed_recurrent(
            self.mode,
            data,
            batch_sizes,
            None if states is None else tuple(states),
            self._weight_groups(),
            self.num_layers,
            self.bidirectional,
            self.dropout,
            self.training,
        )
        if packed.unsorted_indices is not None:
            final = tuple(s.index_select(1, packed.unsorted_indices) for s in final)
        output = PackedSequence(
            output, packed.batch_sizes, packed.sorted_indices, packed.unsorted_indices
        )
        return output, (final if self.mode == "lstm" else final[0])

    def extra_repr(self) -> str:
        text = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size:
            text += f", proj_size={self.proj_size}"
        if self.num_layers != 1:
            text += f", num_layers={self.num_layers}"
        if self.mode == "rnn_relu":
            text += ", nonlinearity='relu'"
        if not self.bias:
            text += ", bias=False"
        if self.batch_first:
            text += ", batch_first=True"
        if self.dropout:
            text += f", dropout={self.dropout}"
        if self.bidirectional:
            text += ", bidirectional=True"
        return text


class RNN(RNNBase):
    """Elman RNN over a sequence: h_t = act(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh), with
    act = tanh or relu (``nonlinearity``). Parameters per layer k: weight_ih_lk (H, I or D*H),
    weight_hh_lk (H, H), bias_ih_lk, bias_hh_lk (H,); ``_reverse`` for the backward direction.
    See ``RNNBase.forward`` for shapes."""

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        nonlinearity: str = "tanh",
        bias: bool = True,
        batch_first: bool = False,
        dropout: float = 0.0,
        bidirectional: bool = False,
        device=None,
        dtype=None,
    ) -> None:
        _check_nonlinearity("RNN", nonlinearity)
        self.nonlinearity = nonlinearity
        super().__init__(
            "rnn_" + nonlinearity,
            input_size,
            hidden_size,
            num_layers,
            bias,
            batch_first,
            dropout,
            bidirectional,
            device=device,
            dtype=dtype,
        )


class LSTM(RNNBase):
    """Long short-term memory over a sequence. Gates, stacked in weight rows as (i, f, g, o):
    i, f, o = sigmoid(...), g = tanh(...); c_t = f * c_{t-1} + i * g; h_t = o * tanh(c_t).

    With ``proj_size`` P > 0 the hidden state is projected, h_t = W_hr (o * tanh(c_t)), with
    weight_hr_lk (P, H); h is then P wide and c stays H wide. Parameters per layer k:
    weight_ih_lk (4H, I or D*H_out), weight_hh_lk (4H, H_out), bias_ih_lk, bias_hh_lk (4H,).
    The call takes and returns states as a pair: ``output, (h_n, c_n) = lstm(x, (h0, c0))``.
    """

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        bias: bool = True,
        batch_first: bool = False,
        dropout: float = 0.0,
        bidirectional: bool = False,
        proj_size: int = 0,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__(
            "lstm",
            input_size,
            hidden_size,
            num_layers,
            bias,
            batch_first,
            dropout,
            bidirectional,
            proj_size,
            device=device,
            dtype=dtype,
        )


class GRU(RNNBase):
    """Gated recurrent unit over a sequence. Gates, stacked in weight rows as (r, z, n):
    r, z = sigmoid(x W_i + b_i + h W_h + b_h); n = tanh(x W_in + b_in + r * (h W_hn + b_hn));
    h_t = (1 - z) * n + z * h_{t-1}. Parameters per layer k: weight_ih_lk (3H, I or D*H),
    weight_hh_lk (3H, H), bias_ih_lk, bias_hh_lk (3H,)."""

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        bias: bool = True,
        batch_first: bool = False,
        dropout: float = 0.0,
        bidirectional: bool = False,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__(
            "gru",
            input_size,
            hidden_size,
            num_layers,
            bias,
            batch_first,
            dropout,
            bidirectional,
            device=device,
            dtype=dtype,
        )


# ----- packed sequences --------------------------------------------------------------------------


def _runs_of_steps(batch_sizes: list[int]) -> list[tuple[int, int, int]]:
    """The time steps of a packed batch grouped into runs of equal batch size: (first row in
    the packed data, number of steps, batch size) per run, in time order."""
    runs = []
    row = step = 0
    while step < len(batch_sizes):
        size = batch_sizes[step]
        steps = 1
        while step + steps < len(batch_sizes) and batch_sizes[step + steps] == size:
            steps += 1
        runs.append((row, steps, size))
        row += steps * size
        step += steps
    return runs


def _run_packed_direction(
    mode: str,
    data: Tensor,
    runs: list[tuple[int, int, int]],
    state: tuple[Tensor, ...],
    weights,
    reverse: bool,
) -> tuple[Tensor, tuple[Tensor, ...]]:
    """One layer in one direction over packed data (R, I): (output (R, H_out), final states
    (B, H) each). ``state`` holds the initial states (B, H) in the packed (sorted) order."""
    outputs = []
    if not reverse:
        current = state
        ended = []  # final states of the sequences that ended, shortest first
        for row, steps, size in runs:
            if size < current[0].shape[0]:
                ended.append(tuple(s[size:] for s in current))
                current = tuple(s[:size] for s in current)
            x = data[row : row + steps * size].reshape(steps, size, -1)
            output, current = F._run_direction(mode, x, current, weights, reverse=False)
            outputs.append(output.reshape(steps * size, -1))
        ended.append(current)
        ended.reverse()  # the longest sequences, the first rows, first
        final = (
            current
            if len(ended) == 1
            else tuple(concatenate([e[k] for e in ended]) for k in range(len(current)))
        )
    else:
        current = tuple(s[: runs[-1][2]] for s in state)
        for row, steps, size in reversed(runs):
            running = current[0].shape[0]
            if size > running:  # sequences whose last element is this run's last step join
                current = tuple(concatenate([c, s[running:size]]) for c, s in zip(current, state))
            x = data[row : row + steps * size].reshape(steps, size, -1)
            output, current = F._run_direction(mode, x, current, weights, reverse=True)
            outputs.append(output.reshape(steps * size, -1))
        outputs.reverse()  # back to time order, the order of the packed rows
        final = current
    return (outputs[0] if len(outputs) == 1 else concatenate(outputs)), final


def _packed_recurrent(
    mode: str,
    data: Tensor,
    batch_sizes: list[int],
    states: tuple[Tensor, ...] | None,
    weights,
    num_layers: int,
    bidirectional: bool,
    dropout_p: float,
    training: bool,
) -> tuple[Tensor, tuple[Tensor, ...]]:
    """The stacked (and optionally bidirectional) network over packed data (R, I) in sorted
    order: (output (R, D * H_out), final states (D * num_layers, B, H) each)."""
    directions = 2 if bidirectional else 1
    runs = _runs_of_steps(batch_sizes)
    if states is None:
        states = F._zero_states(mode, data, batch_sizes[0], weights[0], num_layers * directions)
    finals: list[tuple[Tensor, ...]] = []
    layer_input = data
    for layer in range(num_layers):
        if layer > 0 and dropout_p > 0 and training:
            # Dropout sits between layers only, never after the last one (as in PyTorch).
            layer_input = dropout(layer_input, dropout_p, training=True)
        outputs = []
        for direction in range(directions):
            index = layer * directions + direction
            state = tuple(s[index] for s in states)
            output, final = _run_packed_direction(
                mode, layer_input, runs, state, weights[index], reverse=direction == 1
            )
            outputs.append(output)
            finals.append(final)
        layer_input = outputs[0] if directions == 1 else concatenate(outputs, axis=-1)
    final_states = tuple(stack([f[k] for f in finals]) for k in range(len(finals[0])))
    return layer_input, final_states


# ----- single steps ------------------------------------------------------------------------------


class RNNCellBase(Module):
    """Shared parts of the cells: weight_ih (G*H, I), weight_hh (G*H, H), bias_ih and bias_hh
    (G*H,), all U(-1/sqrt(H), 1/sqrt(H)), with G gates (1 RNN, 4 LSTM, 3 GRU)."""

    def __init__(
        self, input_size: int, hidden_size: int, bias: bool, num_chunks: int, device, dtype
    ) -> None:
        super().__init__()
        _check_sizes(type(self).__name__, input_size=input_size, hidden_size=hidden_size)
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        gate_size = num_chunks * hidden_size
        self.weight_ih = empty_parameter((gate_size, input_size), dtype, device)
        self.weight_hh = empty_parameter((gate_size, hidden_size), dtype, device)
        if bias:
            self.bias_ih = empty_parameter((gate_size,), dtype, device)
            self.bias_hh = empty_parameter((gate_size,), dtype, device)
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Draw every weight and bias again from U(-1/sqrt(hidden_size), 1/sqrt(hidden_size))."""
        _reset_uniform(self)

    def _prepare(self, x: Tensor, states: list) -> tuple[Tensor, list, bool]:
        """Check x (N, I) or (I,) and the states (N, H) or (H,); give them a batch dimension
        and zero states where None. Returns (x, states, batched)."""
        name = type(self).__name__
        if not isinstance(x, Tensor) or x.ndim not in (1, 2) or x.shape[-1] != self.input_size:
            got = tuple(x.shape) if isinstance(x, Tensor) else type(x).__name__
            raise ShapeError(
                f"[{name}] expected input (N, {self.input_size}) or unbatched "
                f"({self.input_size},), got {got}",
                help="the last dimension must equal input_size",
            )
        batched = x.ndim == 2
        shape = (x.shape[0], self.hidden_size) if batched else (self.hidden_size,)
        prepared = []
        for label, state in zip(("h", "c"), states):
            if state is None:
                state = zeros(shape, dtype=x.dtype, device=x.device)
            elif not isinstance(state, Tensor) or tuple(state.shape) != shape:
                got = tuple(state.shape) if isinstance(state, Tensor) else type(state).__name__
                raise ShapeError(
                    f"[{name}] expected state {label} of shape {shape} for input "
                    f"{tuple(x.shape)}, got {got}",
                    help="states are (N, hidden_size), or (hidden_size,) for unbatched input",
                )
            prepared.append(state if batched else state.unsqueeze(0))
        return (x if batched else x.unsqueeze(0)), prepared, batched

    def _weights(self) -> tuple:
        """weight_ih, weight_hh, bias_ih, bias_hh (the biases None without them)."""
        # read from their store, as Linear.forward does: ``self.weight_ih`` reaches it only
        # after the instance and class lookups fail, four times a step
        parameters = self._parameters
        try:
            return (
                parameters["weight_ih"],
                parameters["weight_hh"],
                parameters["bias_ih"],
                parameters["bias_hh"],
            )
        except KeyError:  # one replaced by a plain attribute
            return self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh

    def extra_repr(self) -> str:
        text = f"{self.input_size}, {self.hidden_size}"
        if not self.bias:
            text += ", bias=False"
        return text


class RNNCell(RNNCellBase):
    """One Elman step: h' = act(x W_ih^T + b_ih + h W_hh^T + b_hh), act = tanh or relu.
    x: (N, I) or (I,), h: (N, H) / (H,) or None for zeros -> h'."""

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        bias: bool = True,
        nonlinearity: str = "tanh",
        device=None,
        dtype=None,
    ) -> None:
        _check_nonlinearity("RNNCell", nonlinearity)
        super().__init__(input_size, hidden_size, bias, 1, device, dtype)
        self.nonlinearity = nonlinearity

    def forward(self, x: Tensor, hx: Tensor | None = None) -> Tensor:
        x, (h,), batched = self._prepare(x, [hx])
        cell = F.rnn_tanh_cell if self.nonlinearity == "tanh" else F.rnn_relu_cell
        out = cell(x, h, *self._weights())
        return out if batched else out.squeeze(0)

    def extra_repr(self) -> str:
        text = super().extra_repr()
        return text + (", nonlinearity='relu'" if self.nonlinearity == "relu" else "")


class LSTMCell(RNNCellBase):
    """One LSTM step: x (N, I) or (I,), hx = (h, c) each (N, H) / (H,), or None for zeros
    -> (h', c'). Gate rows (i, f, g, o), as in PyTorch."""

    def __init__(
        self, input_size: int, hidden_size: int, bias: bool = True, device=None, dtype=None
    ) -> None:
        super().__init__(input_size, hidden_size, bias, 4, device, dtype)

    def forward(self, x: Tensor, hx: tuple[Tensor, Tensor] | None = None) -> tuple[Tensor, Tensor]:
        if hx is not None and (not isinstance(hx, (tuple, list)) or len(hx) != 2):
            raise BuildingAIError(
                f"[LSTMCell] expected hx as a pair (h, c), got {type(hx).__name__}",
                help="pass hx=(h, c), or None for zero states",
            )
        x, (h, c), batched = self._prepare(x, [None, None] if hx is None else list(hx))
        h, c = F.lstm_cell(x, (h, c), *self._weights())
        return (h, c) if batched else (h.squeeze(0), c.squeeze(0))


class GRUCell(RNNCellBase):
    """One GRU step: x (N, I) or (I,), h (N, H) / (H,) or None for zeros -> h'.
    Gate rows (r, z, n), with b_hn inside the reset product, as in PyTorch."""

    def __init__(
        self, input_size: int, hidden_size: int, bias: bool = True, device=None, dtype=None
    ) -> None:
        super().__init__(input_size, hidden_size, bias, 3, device, dtype)

    def forward(self, x: Tensor, hx: Tensor | None = None) -> Tensor:
        x, (h,), batched = self._prepare(x, [hx])
        out = F.gru_cell(x, h, *self._weights())
        return out if batched else out.squeeze(0)

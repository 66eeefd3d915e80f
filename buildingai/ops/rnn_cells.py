"""One step of each recurrent cell as one op: the gate arithmetic of ``lstm_cell``,
``gru_cell`` and ``rnn_cell``, each with its gradient as one op (``*_cell_grad``).

The cells' products stay outside: ``gates_x = x W_ih^T`` and ``gates_h = h W_hh^T`` are two
``linear`` calls, and the op takes both (as PyTorch's ``_thnn_fused_lstm_cell`` and
``_thnn_fused_gru_cell`` do), so that their sum costs no op of its own and its backward hands
the same gradient to both. The LSTM and Elman cells also take the two biases, whose gradient is
then one sum; the GRU's stay in the products, b_hn sitting inside the reset product.

Composed of primitives, an LSTM or GRU step costs about fifteen dispatched ops forward and
forty backward; with these, about five and twenty, most of them the products' and the engine's
gradient sums. Each gradient op recomputes the gates from the inputs it is given, so it is a
function of its inputs alone, and its own backward, written with Tensor ops, gives second
derivatives (and, through those ops, higher ones).
"""

from __future__ import annotations

import numpy as np

from ..errors import ArgumentError, ShapeError
from .abstract import ValueSpec, bytes_of
from .base import Op
from .rnn import _concatenate, _sigmoid
from .rnn_elman import NONLINEARITIES, _activate, _slope


def _check_pair(name: str, gates_x, gates_h, state, gates: int, state_label: str) -> int:
    """The hidden size H of a cell's inputs: gates_x and gates_h (N, gates * H), the state
    (N, H); a ShapeError naming ``name`` when they do not fit."""
    size = state.shape[-1]
    expected = (state.shape[0], gates * size)
    if (
        len(gates_x.shape) != 2
        or len(state.shape) != 2
        or tuple(gates_x.shape) != expected
        or tuple(gates_h.shape) != expected
    ):
        raise ShapeError(
            f"[{name}] gates_x {tuple(gates_x.shape)}, gates_h {tuple(gates_h.shape)} and "
            f"{state_label} {tuple(state.shape)} do not fit: expected (N, {gates}H), "
            f"(N, {gates}H), (N, H)",
            help="gates_x is x @ w_ih^T and gates_h is h @ w_hh^T for one step (N rows)",
        )
    return size


def _check_biases(name: str, biases: tuple, width) -> None:
    """The optional biases (b_ih, b_hh) of a cell: none, or both (width,)."""
    if biases and (len(biases) != 2 or any(tuple(bias.shape) != (width,) for bias in biases)):
        shapes = [tuple(bias.shape) for bias in biases]
        raise ShapeError(
            f"[{name}] expected the biases b_ih and b_hh of shape ({width},), got {shapes}",
            help="pass both biases or neither",
        )


def _pre_activation(gates_x, gates_h, biases: tuple):
    """gates_x + gates_h (+ b_ih + b_hh): arrays or Tensors."""
    pre = gates_x + gates_h
    for bias in biases:
        pre = pre + bias
    return pre


# ----- LSTM ---------------------------------------------------------------------------------------


class LSTMCell(Op):
    """One LSTM step after its two products.

    gates_x, gates_h (N, 4H): the input and hidden parts of the pre-activations in the order
    i, f, g, o; c (N, H) the cell state before the step; b_ih, b_hh (4H,) optional (both or
    neither), added here so that their gradient is one sum. Output (N, 2H): [h', c'], with
    pre = gates_x + gates_h + b_ih + b_hh and

        i, f, o = sigmoid(pre)[i, f, o];  g = tanh(pre)[g];  c' = f c + i g;  h' = o tanh(c')
    """

    name = "lstm_cell"
    save_inputs, save_output = True, False

    def check(self, gates_x, gates_h, c, *biases):
        _check_pair("lstm_cell", gates_x, gates_h, c, 4, "c")
        _check_biases("lstm_cell", biases, gates_x.shape[-1])

    def forward(self, ctx, xp, gates_x, gates_h, c, *biases):
        size = c.shape[-1]
        pre = _pre_activation(gates_x, gates_h, biases)
        gate = _sigmoid(xp, pre)  # i, f and o; the g block is replaced by tanh below
        cell_input = xp.tanh(pre[:, 2 * size : 3 * size])
        c_next = gate[:, size : 2 * size] * c + gate[:, :size] * cell_input
        h_next = gate[:, 3 * size :] * xp.tanh(c_next)
        return xp.concatenate([h_next, c_next], axis=1)

    def infer(self, gates_x, gates_h, c, *biases):
        size = _check_pair("lstm_cell", gates_x, gates_h, c, 4, "c")
        _check_biases("lstm_cell", biases, gates_x.shape[-1])
        dtype = np.result_type(gates_x.dtype, gates_h.dtype, c.dtype, *(b.dtype for b in biases))
        return ValueSpec((c.shape[0], 2 * size), dtype, gates_x.device)

    def cost(self, gates_x, gates_h, c, *biases):
        out = self.infer(gates_x, gates_h, c, *biases)
        batch, gate_size = gates_x.shape
        # the sums and activation of every gate (about 5 per gate), the cell and hidden updates
        flops = (5 + len(biases)) * batch * gate_size + 6 * batch * (gate_size // 4)
        return flops, bytes_of(gates_x, gates_h, c, *biases), out.nbytes

    def backward(self, ctx, grad):
        gates_x, gates_h, c, *biases = ctx.inputs
        gate_size = gates_x.shape[-1]
        through = LSTM_CELL_GRAD(grad, gates_x, gates_h, c, *biases)  # (N, 5H): [d pre, d c]
        grad_pre = through[:, :gate_size]  # the gradient of every part of the pre-activations
        grads = [grad_pre, grad_pre, through[:, gate_size:]]
        if biases:
            grad_bias = grad_pre.sum(axis=0)
            grads += [grad_bias, grad_bias]
        return tuple(grads)

    def to_onnx(self, emit, inputs, output, attrs):
        gates_x, gates_h, c, *biases = emit.operands(list(inputs), emit.dtypes.get(output))
        size = int(emit.shapes[inputs[2]][-1])
        pre = emit.node("Add", [gates_x, gates_h])
        for bias in biases:
            pre = emit.node("Add", [pre, bias])
        i_pre, f_pre, g_pre, o_pre = _split(emit, pre, [size] * 4)
        i, f = emit.node("Sigmoid", [i_pre]), emit.node("Sigmoid", [f_pre])
        g, o = emit.node("Tanh", [g_pre]), emit.node("Sigmoid", [o_pre])
        c_next = emit.node("Add", [emit.node("Mul", [f, c]), emit.node("Mul", [i, g])])
        h_next = emit.node("Mul", [o, emit.node("Tanh", [c_next])])
        emit.node("Concat", [h_next, c_next], output, axis=1)


class LSTMCellGrad(Op):
    """The gradient of ``lstm_cell``: [d pre (4H), d c (H)] (N, 5H) from grad (N, 2H) =
    [dh', dc'] and the cell's inputs gates_x, gates_h (N, 4H), c (N, H) and optional b_ih,
    b_hh (4H,). With the gates recomputed from pre = gates_x + gates_h + b_ih + b_hh and
    t = tanh(c'):

        dc = dc' + dh' o (1 - t^2)
        d pre = [dc g i (1 - i), dc c f (1 - f), dc i (1 - g^2), dh' t o (1 - o)]
        d c = dc f
    """

    name = "lstm_cell_grad"
    save_inputs, save_output = True, False

    def forward(self, ctx, xp, grad, gates_x, gates_h, c, *biases):
        size = c.shape[-1]
        pre = _pre_activation(gates_x, gates_h, biases)
        gate = _sigmoid(xp, pre)
        i, f, o = gate[:, :size], gate[:, size : 2 * size], gate[:, 3 * size :]
        g = xp.tanh(pre[:, 2 * size : 3 * size])
        tanh_c = xp.tanh(f * c + i * g)
        grad_h = grad[:, :size]
        grad_c = grad[:, size:] + grad_h * (o * (1 - tanh_c * tanh_c))
        dtype = xp.result_type(grad, gates_x, gates_h, c, *biases)
        out = xp.empty((c.shape[0], 5 * size), dtype=dtype)
        out[:, :size] = grad_c * (g * (i * (1 - i)))
        out[:, size : 2 * size] = grad_c * (c * (f * (1 - f)))
        out[:, 2 * size : 3 * size] = grad_c * (i * (1 - g * g))
        out[:, 3 * size : 4 * size] = grad_h * (tanh_c * (o * (1 - o)))
        out[:, 4 * size :] = grad_c * f
        return out

    def infer(self, grad, gates_x, gates_h, c, *biases):
        size = _check_pair("lstm_cell_grad", gates_x, gates_h, c, 4, "c")
        dtypes = (grad.dtype, gates_x.dtype, gates_h.dtype, c.dtype, *(b.dtype for b in biases))
        return ValueSpec((c.shape[0], 5 * size), np.result_type(*dtypes), gates_x.device)

    def cost(self, grad, gates_x, gates_h, c, *biases):
        out = self.infer(grad, gates_x, gates_h, c, *biases)
        batch, gate_size = gates_x.shape
        # the gates again (about 5 per gate) and about 20 operations per hidden unit
        flops = (5 + len(biases)) * batch * gate_size + 20 * batch * (gate_size // 4)
        return flops, bytes_of(grad, gates_x, gates_h, c, *biases), out.nbytes

    def backward(self, ctx, grad_of_result):
        grad, gates_x, gates_h, c, *biases = ctx.inputs
        size = c.shape[-1]
        # the forward's values, as Tensors of the inputs
        pre = _pre_activation(gates_x, gates_h, biases)
        gate = pre.sigmoid()
        i, f, o = gate[:, :size], gate[:, size : 2 * size], gate[:, 3 * size :]
        g = pre[:, 2 * size : 3 * size].tanh()
        tanh_c = (f * c + i * g).tanh()
        slope_i, slope_f, slope_o = i * (1 - i), f * (1 - f), o * (1 - o)
        slope_g, slope_c = 1 - g * g, 1 - tanh_c * tanh_c
        grad_h = grad[:, :size]
        grad_c = grad[:, size:] + grad_h * (o * slope_c)

        bar_i, bar_f, bar_g, bar_o, bar_kept = (
            grad_of_result[:, k * size : (k + 1) * size] for k in range(5)
        )
        # what reaches grad_c, through the four outputs that read it
        bar_grad_c = bar_i * (g * slope_i) + bar_f * (c * slope_f) + bar_g * (i * slope_g)
        bar_grad_c = bar_grad_c + bar_kept * f
        grad_grad = _concatenate(
            [bar_grad_c * (o * slope_c) + bar_o * (tanh_c * slope_o), bar_grad_c], axis=1
        )
        # through the activations and tanh(c')
        ci, cf, cg = bar_i * grad_c, bar_f * grad_c, bar_g * grad_c
        bar_act_i = ci * (g * (1 - 2 * i)) + cg * slope_g
        bar_act_f = cf * (c * (1 - 2 * f)) + bar_kept * grad_c
        bar_act_g = ci * slope_i - cg * (2 * i * g)
        bar_act_o = bar_grad_c * (grad_h * slope_c) + bar_o * (grad_h * (tanh_c * (1 - 2 * o)))
        bar_tanh_c = bar_o * (grad_h * slope_o) - bar_grad_c * (grad_h * (2 * o * tanh_c))
        bar_c_next = bar_tanh_c * slope_c  # c' = f c + i g
        bar_act_i = bar_act_i + bar_c_next * g
        bar_act_f = bar_act_f + bar_c_next * c
        bar_act_g = bar_act_g + bar_c_next * i
        grad_state = cf * slope_f + bar_c_next * f
        grad_pre = _concatenate(
            [bar_act_i * slope_i, bar_act_f * slope_f, bar_act_g * slope_g, bar_act_o * slope_o],
            axis=1,
        )
        grads = [grad_grad, grad_pre, grad_pre, grad_state]
        if biases:
            grad_bias = grad_pre.sum(axis=0)
            grads += [grad_bias, grad_bias]
        return tuple(grads)


# ----- GRU ----------------------------------------------------------------------------------------


class GRUCell(Op):
    """One GRU step after its two products.

    gates_x, gates_h (N, 3H): x W_ih^T + b_ih and h W_hh^T + b_hh in the order r, z, n; h (N, H)
    the state before the step. Output h' (N, H), with PyTorch's placement of b_hn inside the
    reset product:

        r, z = sigmoid(gates_x[r, z] + gates_h[r, z]);  n = tanh(gates_x[n] + r gates_h[n])
        h' = n + z (h - n)
    """

    name = "gru_cell"
    save_inputs, save_output = True, False

    def check(self, gates_x, gates_h, h):
        _check_pair("gru_cell", gates_x, gates_h, h, 3, "h")

    def forward(self, ctx, xp, gates_x, gates_h, h):
        size = h.shape[-1]
        reset_update = _sigmoid(xp, gates_x[:, : 2 * size] + gates_h[:, : 2 * size])
        reset, update = reset_update[:, :size], reset_update[:, size:]
        new = xp.tanh(gates_x[:, 2 * size :] + reset * gates_h[:, 2 * size :])
        return new + update * (h - new)

    def infer(self, gates_x, gates_h, h):
        _check_pair("gru_cell", gates_x, gates_h, h, 3, "h")
        dtype = np.result_type(gates_x.dtype, gates_h.dtype, h.dtype)
        return ValueSpec(tuple(h.shape), dtype, gates_x.device)

    def cost(self, gates_x, gates_h, h):
        out = self.infer(gates_x, gates_h, h)
        batch, size = h.shape
        return 16 * batch * size, bytes_of(gates_x, gates_h, h), out.nbytes

    def backward(self, ctx, grad):
        gates_x, gates_h, h = ctx.inputs
        gate_size = gates_x.shape[-1]
        through = GRU_CELL_GRAD(grad, gates_x, gates_h, h)  # (N, 7H)
        return (
            through[:, :gate_size],
            through[:, gate_size : 2 * gate_size],
            through[:, 2 * gate_size :],
        )

    def to_onnx(self, emit, inputs, output, attrs):
        gates_x, gates_h, h = emit.operands(list(inputs), emit.dtypes.get(output))
        size = int(emit.shapes[inputs[2]][-1])
        x_r, x_z, x_n = _split(emit, gates_x, [size] * 3)
        h_r, h_z, h_n = _split(emit, gates_h, [size] * 3)
        r = emit.node("Sigmoid", [emit.node("Add", [x_r, h_r])])
        z = emit.node("Sigmoid", [emit.node("Add", [x_z, h_z])])
        n = emit.node("Tanh", [emit.node("Add", [x_n, emit.node("Mul", [r, h_n])])])
        emit.node("Add", [n, emit.node("Mul", [z, emit.node("Sub", [h, n])])], output)


class GRUCellGrad(Op):
    """The gradient of ``gru_cell``: [d gates_x (3H), d gates_h (3H), d h (H)] (N, 7H) from
    grad (N, H) = dh' and the cell's inputs. With r, z, n recomputed and a = d(n's
    pre-activation):

        a = dh' (1 - z) (1 - n^2);  d pre_r = a gates_h[n] r (1 - r)
        d pre_z = dh' (h - n) z (1 - z)
        d gates_x = [d pre_r, d pre_z, a];  d gates_h = [d pre_r, d pre_z, a r];  d h = dh' z
    """

    name = "gru_cell_grad"
    save_inputs, save_output = True, False

    def forward(self, ctx, xp, grad, gates_x, gates_h, h):
        size = h.shape[-1]
        reset_update = _sigmoid(xp, gates_x[:, : 2 * size] + gates_h[:, : 2 * size])
        reset, update = reset_update[:, :size], reset_update[:, size:]
        hidden_new = gates_h[:, 2 * size :]
        new = xp.tanh(gates_x[:, 2 * size :] + reset * hidden_new)
        grad_new = grad * ((1 - update) * (1 - new * new))
        dtype = xp.result_type(grad, gates_x, gates_h, h)
        out = xp.empty((h.shape[0], 7 * size), dtype=dtype)
        out[:, :size] = grad_new * (hidden_new * (reset * (1 - reset)))
        out[:, size : 2 * size] = grad * ((h - new) * (update * (1 - update)))
        out[:, 2 * size : 3 * size] = grad_new
        out[:, 3 * size : 5 * size] = out[:, : 2 * size]
        out[:, 5 * size : 6 * size] = grad_new * reset
        out[:, 6 * size :] = grad * update
        return out

    def infer(self, grad, gates_x, gates_h, h):
        size = _check_pair("gru_cell_grad", gates_x, gates_h, h, 3, "h")
        dtype = np.result_type(grad.dtype, gates_x.dtype, gates_h.dtype, h.dtype)
        return ValueSpec((h.shape[0], 7 * size), dtype, gates_x.device)

    def cost(self, grad, gates_x, gates_h, h):
        out = self.infer(grad, gates_x, gates_h, h)
        batch, size = h.shape
        return 30 * batch * size, bytes_of(grad, gates_x, gates_h, h), out.nbytes

    def backward(self, ctx, grad_of_result):
        grad, gates_x, gates_h, h = ctx.inputs
        size = h.shape[-1]
        # the forward's values, as Tensors of the inputs
        reset_update = (gates_x[:, : 2 * size] + gates_h[:, : 2 * size]).sigmoid()
        reset, update = reset_update[:, :size], reset_update[:, size:]
        hidden_new = gates_h[:, 2 * size :]
        new = (gates_x[:, 2 * size :] + reset * hidden_new).tanh()
        slope_r, slope_z, slope_n = reset * (1 - reset), update * (1 - update), 1 - new * new
        grad_new = grad * ((1 - update) * slope_n)  # a

        blocks = [grad_of_result[:, k * size : (k + 1) * size] for k in range(7)]
        bar_r = blocks[0] + blocks[3]  # d pre_r appears twice
        bar_z = blocks[1] + blocks[4]
        bar_kept = blocks[6]
        # what reaches a: directly, through a r, and through d pre_r = a hn slope_r
        bar_new_grad = blocks[2] + blocks[5] * reset + bar_r * (hidden_new * slope_r)
        decay = h - new
        grad_grad = (
            bar_new_grad * ((1 - update) * slope_n) + bar_z * (decay * slope_z) + bar_kept * update
        )
        # through the activations
        bar_update = (
            bar_z * (grad * (decay * (1 - 2 * update)))
            + bar_kept * grad
            - bar_new_grad * (grad * slope_n)
        )
        bar_new = -(bar_new_grad * (grad * ((1 - update) * (2 * new)))) - bar_z * (grad * slope_z)
        bar_reset = bar_r * (grad_new * (hidden_new * (1 - 2 * reset))) + blocks[5] * grad_new
        bar_hidden_new = bar_r * (grad_new * slope_r)
        bar_pre_new = bar_new * slope_n  # n = tanh(x_n + r hn)
        bar_reset = bar_reset + bar_pre_new * hidden_new
        bar_hidden_new = bar_hidden_new + bar_pre_new * reset
        bar_pre_r, bar_pre_z = bar_reset * slope_r, bar_update * slope_z
        grad_gates_x = _concatenate([bar_pre_r, bar_pre_z, bar_pre_new], axis=1)
        grad_gates_h = _concatenate([bar_pre_r, bar_pre_z, bar_hidden_new], axis=1)
        grad_h = bar_z * (grad * slope_z)
        return grad_grad, grad_gates_x, grad_gates_h, grad_h


# ----- Elman RNN ----------------------------------------------------------------------------------


class RNNCell(Op):
    """One Elman step after its two products: h' = act(gates_x + gates_h + b_ih + b_hh),
    gates_x, gates_h (N, H), b_ih, b_hh (H,) optional (both or neither, added here so that their
    gradient is one sum); attribute ``nonlinearity``, 'tanh' or 'relu'."""

    name = "rnn_cell"
    save_inputs, save_output = False, True

    def forward(self, ctx, xp, gates_x, gates_h, *biases, nonlinearity):
        return _activate(xp, _pre_activation(gates_x, gates_h, biases), nonlinearity)

    def check(self, gates_x, gates_h, *biases, nonlinearity):
        if nonlinearity not in NONLINEARITIES:
            raise ArgumentError(
                f"[rnn_cell] nonlinearity must be 'tanh' or 'relu', got {nonlinearity!r}"
            )
        _check_pair("rnn_cell", gates_x, gates_h, gates_h, 1, "gates_h")
        _check_biases("rnn_cell", biases, gates_x.shape[-1])

    def infer(self, gates_x, gates_h, *biases, nonlinearity):
        _check_pair("rnn_cell", gates_x, gates_h, gates_h, 1, "gates_h")
        _check_biases("rnn_cell", biases, gates_x.shape[-1])
        dtype = np.result_type(gates_x.dtype, gates_h.dtype, *(b.dtype for b in biases))
        return ValueSpec(tuple(gates_x.shape), dtype, gates_x.device)

    def cost(self, gates_x, gates_h, *biases, nonlinearity):
        out = self.infer(gates_x, gates_h, *biases, nonlinearity=nonlinearity)
        return (2 + len(biases)) * out.numel, bytes_of(gates_x, gates_h, *biases), out.nbytes

    def backward(self, ctx, grad):
        grad_pre = RNN_CELL_GRAD(grad, ctx.output, nonlinearity=ctx.attrs["nonlinearity"])
        if len(ctx.inputs) == 2:
            return grad_pre, grad_pre
        grad_bias = grad_pre.sum(axis=0)
        return grad_pre, grad_pre, grad_bias, grad_bias

    def to_onnx(self, emit, inputs, output, attrs):
        gates_x, gates_h, *biases = emit.operands(list(inputs), emit.dtypes.get(output))
        pre = emit.node("Add", [gates_x, gates_h])
        for bias in biases:
            pre = emit.node("Add", [pre, bias])
        kind = "Tanh" if attrs["nonlinearity"] == "tanh" else "Relu"
        emit.node(kind, [pre], output)


class RNNCellGrad(Op):
    """The gradient of ``rnn_cell``'s pre-activation from grad (N, H) and its output h (N, H):
    grad (1 - h^2) for tanh, grad (h > 0) for relu (0 at 0, as PyTorch)."""

    name = "rnn_cell_grad"
    save_inputs, save_output = True, False

    def forward(self, ctx, xp, grad, h, *, nonlinearity):
        return grad * _slope(xp, h, nonlinearity)

    def infer(self, grad, h, *, nonlinearity):
        dtype = np.result_type(grad.dtype, h.dtype)
        return ValueSpec(tuple(h.shape), dtype, h.device)

    def cost(self, grad, h, *, nonlinearity):
        out = self.infer(grad, h, nonlinearity=nonlinearity)
        return 3 * out.numel, bytes_of(grad, h), out.nbytes

    def backward(self, ctx, grad_of_result):
        grad, h = ctx.inputs
        if ctx.attrs["nonlinearity"] == "relu":  # a constant mask: its derivative is zero
            mask = ctx.tensor((h.array > 0).astype(h.array.dtype))
            return grad_of_result * mask, h * 0
        return grad_of_result * (1 - h * h), grad_of_result * grad * (-2 * h)


def _split(emit, value: str, sizes: list) -> list:
    """ONNX Split of ``value`` (N, sum(sizes)) along axis 1: one fresh name per part."""
    parts = [emit.fresh("cell_part") for _ in sizes]
    split = emit.constant(np.asarray(sizes, dtype=np.int64))
    emit.nodes.append(emit.helper.make_node("Split", [value, split], parts, axis=1))
    for part in parts:
        emit.dtypes[part] = emit.dtype(value)
        emit.ranks[part] = 2
    return parts


LSTM_CELL, LSTM_CELL_GRAD = LSTMCell(), LSTMCellGrad()
GRU_CELL, GRU_CELL_GRAD = GRUCell(), GRUCellGrad()
RNN_CELL, RNN_CELL_GRAD = RNNCell(), RNNCellGrad()

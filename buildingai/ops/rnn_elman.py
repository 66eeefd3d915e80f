"""The time loop of one Elman RNN layer and direction as one op: ``rnn_recurrence``, with
back-propagation through time as one gradient op, ``rnn_recurrence_grad``.

h_t = act(gates_x_t + h_{t-1} @ w_hh^T + b_hh), act = tanh or relu, where gates_x holds the
input part x_t @ w_ih^T + b_ih of every step (one product over the sequence, done by the
caller). Composed of primitives each step costs four dispatched ops forward and about ten in
backward, which at the sizes of one step sets the speed; as in ``ops/rnn.py`` for the LSTM, the
loop is one op and its gradient another, whose own backward (the transposed recurrence, Tensor
ops) gives higher derivatives. ``nn.functional.rnn`` builds RNN layers on it.
"""

from __future__ import annotations

import numpy as np

from ..errors import ArgumentError, ShapeError
from .abstract import ValueSpec, bytes_of
from .base import Op
from .rnn import _after, _emit_scan, _one_state_body, _previous, _stack

NONLINEARITIES = ("tanh", "relu")


def _activate(xp, pre, nonlinearity: str):
    return xp.tanh(pre) if nonlinearity == "tanh" else xp.maximum(pre, 0)


def _slope(xp, h, nonlinearity: str):
    """act'(pre) from act's output h: 1 - h^2 for tanh, h > 0 for relu (0 at 0, as PyTorch)."""
    return 1 - h * h if nonlinearity == "tanh" else (h > 0).astype(h.dtype)


class RNNRecurrence(Op):
    """h_t for every step of one Elman RNN layer and direction.

    gates_x (L, N, H): x_t @ w_ih^T + b_ih for every step; h0 (N, H); w_hh (H, H); b_hh (H,)
    optional. Attributes ``nonlinearity`` ('tanh' or 'relu') and ``reverse`` (run from the last
    step to the first). Output (L, N, H): h_t at position t (in input order).
    """

    name = "rnn_recurrence"
    save_inputs, save_output = True, True

    def forward(self, ctx, xp, gates_x, h0, w_hh, b_hh=None, *, nonlinearity, reverse):
        dtype = xp.result_type(gates_x, h0, w_hh)
        out = xp.empty(gates_x.shape, dtype=dtype)
        h = h0
        for t in range(gates_x.shape[0] - 1, -1, -1) if reverse else range(gates_x.shape[0]):
            pre = h @ w_hh.T + gates_x[t]
            if b_hh is not None:
                pre = pre + b_hh
            out[t] = h = _activate(xp, pre, nonlinearity)
        return out

    def check(self, gates_x, h0, w_hh, b_hh=None, *, nonlinearity, reverse):
        if nonlinearity not in NONLINEARITIES:
            raise ArgumentError(
                f"[rnn_recurrence] nonlinearity must be 'tanh' or 'relu', got {nonlinearity!r}"
            )

    def infer(self, gates_x, h0, w_hh, b_hh=None, *, nonlinearity, reverse):
        length, batch, size = gates_x.shape
        if (
            tuple(h0.shape) != (batch, size)
            or tuple(w_hh.shape) != (size, size)
            or (b_hh is not None and tuple(b_hh.shape) != (size,))
        ):
            raise ShapeError(
                f"[rnn_recurrence] gates_x {gates_x.shape}, h0 {h0.shape} and w_hh "
                f"{w_hh.shape} do not fit: expected (L, N, H), (N, H), (H, H)",
                help="gates_x holds the input part x_t @ w_ih^T + b_ih for every step",
            )
        dtype = np.result_type(gates_x.dtype, h0.dtype, w_hh.dtype)
        return ValueSpec(gates_x.shape, dtype, gates_x.device)

    def cost(self, gates_x, h0, w_hh, b_hh=None, *, nonlinearity, reverse):
        out = self.infer(gates_x, h0, w_hh, b_hh, nonlinearity=nonlinearity, reverse=reverse)
        length, batch, size = gates_x.shape
        # per step the (N, H) x (H, H) product, the sums and the activation
        flops = length * (2 * batch * size * size + 4 * batch * size)
        return flops, bytes_of(gates_x, h0, w_hh, b_hh), out.nbytes

    def backward(self, ctx, grad):
        gates_x, h0, w_hh = ctx.inputs[:3]
        nonlinearity, reverse = ctx.attrs["nonlinearity"], ctx.attrs["reverse"]
        length, batch, size = gates_x.shape
        out = ctx.output  # tied to this node: its dependence on the inputs counts
        grad_pre = RNN_RECURRENCE_GRAD(
            grad, out, w_hh, nonlinearity=nonlinearity, reverse=reverse
        )  # (L, N, H): also the gradient of gates_x
        first = length - 1 if reverse else 0  # the step processed first reads h0
        flat_pre = grad_pre.reshape(length * batch, size)
        h_prev = _previous(out, h0, reverse).reshape(length * batch, size)
        grad_h0 = grad_pre[first] @ w_hh if h0.requires_grad else None
        grads = [grad_pre, grad_h0, flat_pre.T @ h_prev]
        if len(ctx.inputs) > 3:
            grads.append(flat_pre.sum(axis=0))
        return tuple(grads)

    def to_onnx(self, emit, inputs, output, attrs):
        # a Scan over the steps, as for the LSTM: every step's h, in input order
        gates_x, h0, w_hh, *bias = emit.operands(list(inputs), emit.dtypes.get(output))
        size = int(emit.shapes[inputs[2]][1])
        w_hh_t = emit.node("Transpose", [w_hh], perm=[1, 0])  # read by the body (outer scope)
        helper = emit.helper
        elem = helper.np_dtype_to_tensor_dtype(emit.dtype(gates_x))
        name = {key: emit.fresh(f"rnn_step_{key}") for key in ("h", "x", "r", "s", "p", "n")}
        nodes = [
            helper.make_node("MatMul", [name["h"], w_hh_t], [name["r"]]),
            helper.make_node("Add", [name["r"], name["x"]], [name["s"]]),
        ]
        pre = name["s"]
        if bias:
            nodes.append(helper.make_node("Add", [pre, bias[0]], [name["p"]]))
            pre = name["p"]
        kind = "Tanh" if attrs["nonlinearity"] == "tanh" else "Relu"
        nodes.append(helper.make_node(kind, [pre], [name["n"]]))
        nodes.append(helper.make_node("Identity", [name["n"]], [name["n"] + "_scan"]))
        names = (name["h"], name["x"], name["n"], name["n"] + "_scan")
        body = _one_state_body(emit, nodes, "rnn_step", names, size, size, elem)
        _emit_scan(emit, body, [h0], gates_x, output, ["rnn_h_last"], attrs["reverse"])


class RNNRecurrenceGrad(Op):
    """Back-propagation through time of ``rnn_recurrence``: the gradient of every step's
    pre-activation.

    Inputs: grad (L, N, H) of the output; states (L, N, H), the recurrence's output; w_hh
    (H, H). Attributes as the recurrence's. Output (L, N, H). From the step processed last back
    to the first (t + 1 is the step processed after t):

        d pre_t = (grad_t + d pre_{t+1} @ w_hh) * act'(pre_t)

    with act' from the output: 1 - h_t^2 for tanh, h_t > 0 for relu.
    """

    name = "rnn_recurrence_grad"
    save_inputs, save_output = True, True

    def forward(self, ctx, xp, grad, states, w_hh, *, nonlinearity, reverse):
        out = xp.empty(states.shape, dtype=xp.result_type(grad, states, w_hh))
        after = None  # d pre of the step processed after t
        for t in range(states.shape[0]) if reverse else range(states.shape[0] - 1, -1, -1):
            dh = grad[t] if after is None else grad[t] + after @ w_hh
            out[t] = after = dh * _slope(xp, states[t], nonlinearity)
        return out

    def infer(self, grad, states, w_hh, *, nonlinearity, reverse):
        dtype = np.result_type(grad.dtype, states.dtype, w_hh.dtype)
        return ValueSpec(states.shape, dtype, states.device)

    def cost(self, grad, states, w_hh, *, nonlinearity, reverse):
        out = self.infer(grad, states, w_hh, nonlinearity=nonlinearity, reverse=reverse)
        length, batch, size = states.shape
        flops = length * (2 * batch * size * size + 4 * batch * size)
        return flops, bytes_of(grad, states, w_hh), out.nbytes

    def backward(self, ctx, grad_of_result):
        grad, states, w_hh = ctx.inputs
        nonlinearity, reverse = ctx.attrs["nonlinearity"], ctx.attrs["reverse"]
        length, _, size = states.shape
        grad_pre = ctx.output  # tied to this node: its dependence on the inputs counts
        if nonlinearity == "tanh":
            slope = 1 - states * states
        else:  # a constant mask: relu' has no derivative of its own
            slope = ctx.tensor((states.array > 0).astype(states.array.dtype))
        dh = grad + _after(grad_pre, reverse) @ w_hh  # the forward's dh, as Tensors
        # The transposed recurrence, from the step processed first: ``pre_bar`` collects what
        # reaches d pre_t (directly, and through dh of the step processed before it).
        pre_bars, dh_bars = [None] * length, [None] * length
        dh_bar = None
        for t in range(length - 1, -1, -1) if reverse else range(length):
            pre_bar = grad_of_result[t]
            if dh_bar is not None:
                pre_bar = pre_bar + dh_bar @ w_hh.T
            dh_bar = pre_bar * slope[t]
            pre_bars[t], dh_bars[t] = pre_bar, dh_bar
        pre_bar, dh_bar = _stack(pre_bars), _stack(dh_bars)
        grad_w_hh = _after(grad_pre, reverse).reshape(-1, size).T @ dh_bar.reshape(-1, size)
        grad_states = None
        if nonlinearity == "tanh":
            grad_states = pre_bar * dh * (-2 * states)
        return dh_bar, grad_states, grad_w_hh


RNN_RECURRENCE, RNN_RECURRENCE_GRAD = RNNRecurrence(), RNNRecurrenceGrad()

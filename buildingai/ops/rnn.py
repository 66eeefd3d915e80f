"""The time loop of one LSTM layer and direction as one fused op: ``lstm_recurrence``.

Composed from primitives, an LSTM step costs about fifteen dispatched ops forward and forty in
backward, and the gradient of every per-step slice of the input gates is a full-size tensor;
at the sizes of a recurrent step that overhead, not arithmetic, sets the speed. This op runs
the loop on backend arrays and writes its backward (back-propagation through time) with
Tensor ops: the recurrent-weight gradient becomes one product over all steps, and the gate
gradients are stacked once. The backward reads the forward's gate activations through
``lstm_activations``, which ties them to the inputs they were computed from, so the same rule
gives first derivatives and, recorded, derivatives of every higher order.
``nn.functional.rnn`` builds LSTM layers on it.
"""

from __future__ import annotations

import numpy as np

from ..errors import ShapeError
from .abstract import ValueSpec, bytes_of, memory_cost
from .base import Op
from .shape import CONCATENATE


def _concatenate(tensors: list, axis: int = 0):
    """Tensors joined along an existing axis, through dispatch."""
    return CONCATENATE(*tensors, axis=axis)


def _sigmoid(xp, x):
    """1 / (1 + exp(-x)); 0 where exp(-x) overflows, as in PyTorch."""
    with np.errstate(over="ignore"):
        return 1 / (1 + xp.exp(-x))


def _stack(tensors: list):
    """Equally shaped tensors joined along a new first axis, through dispatch."""
    return CONCATENATE(*(tensor.unsqueeze(0) for tensor in tensors), axis=0)


class LSTMRecurrence(Op):
    """h_t, c_t for every step of one LSTM layer and direction.

    gates_x (L, N, 4H): the input part of the gates (x_t W_ih^T + b_ih) for every step;
    h0, c0 (N, H); w_hh (4H, H); b_hh (4H,) optional. Attribute ``reverse``: run from the last
    step to the first. Output (L, N, 2H): [h_t, c_t] at position t (in input order).
    """

    name = "lstm_recurrence"
    save_inputs, save_output = True, True

    def forward(self, ctx, xp, gates_x, h0, c0, w_hh, b_hh=None, *, reverse):
        length, batch, gate_size = gates_x.shape
        size = gate_size // 4
        dtype = xp.result_type(gates_x, h0, c0, w_hh)
        out = xp.empty((length, batch, 2 * size), dtype=dtype)
        acts = xp.empty((length, batch, gate_size), dtype=dtype)  # i, f, g, o after activation
        w_hh_t = w_hh.T
        h, c = h0, c0
        for t in range(length - 1, -1, -1) if reverse else range(length):
            pre = h @ w_hh_t + gates_x[t]
            if b_hh is not None:
                pre += b_hh
            act = acts[t]
            act[...] = _sigmoid(xp, pre)  # the input, forget and output gates
            act[:, 2 * size : 3 * size] = xp.tanh(pre[:, 2 * size : 3 * size])  # the cell input
            c = act[:, size : 2 * size] * c + act[:, :size] * act[:, 2 * size : 3 * size]
            h = act[:, 3 * size :] * xp.tanh(c)
            out[t, :, :size] = h
            out[t, :, size:] = c
        ctx.acts = acts
        return out

    def infer(self, gates_x, h0, c0, w_hh, b_hh=None, *, reverse):
        length, batch, gate_size = gates_x.shape
        size = h0.shape[-1]
        expected = {"h0": (batch, size), "c0": (batch, size), "w_hh": (gate_size, size)}
        if gate_size != 4 * size or any(
            tuple(spec.shape) != expected[name]
            for name, spec in (("h0", h0), ("c0", c0), ("w_hh", w_hh))
        ):
            raise ShapeError(
                f"[lstm_recurrence] gates_x {gates_x.shape}, h0 {h0.shape}, c0 {c0.shape} and "
                f"w_hh {w_hh.shape} do not fit: expected (L, N, 4H), (N, H), (N, H), (4H, H)",
                help="gates_x holds the input part of the four gates for every step",
            )
        dtype = np.result_type(gates_x.dtype, h0.dtype, c0.dtype, w_hh.dtype)
        return ValueSpec((length, batch, 2 * size), dtype, gates_x.device)

    def cost(self, gates_x, h0, c0, w_hh, b_hh=None, *, reverse):
        out = self.infer(gates_x, h0, c0, w_hh, b_hh, reverse=reverse)
        length, batch, gate_size = gates_x.shape
        size = h0.shape[-1]
        # per step: the recurrent GEMM (N, H) x (H, 4H), its sums with the input gates and bias,
        # the four activations, and the cell and hidden updates (about 6 per hidden unit)
        recurrent = 2 * batch * size * gate_size
        elementwise = (3 if b_hh is not None else 2) * batch * gate_size + 6 * batch * size
        flops = length * (recurrent + elementwise)
        return flops, bytes_of(gates_x, h0, c0, w_hh, b_hh), out.nbytes

    def backward(self, ctx, grad):
        gates_x, h0, c0, w_hh = ctx.inputs[:4]
        bias = ctx.inputs[4:]
        reverse = ctx.attrs["reverse"]
        size = h0.shape[-1]
        out = ctx.output  # [h_t, c_t], tied to this node: its dependence on the inputs counts
        hs, cs = out[..., :size], out[..., size:]
        h_prev, c_prev = _previous(hs, h0, reverse), _previous(cs, c0, reverse)
        acts = LSTM_ACTIVATIONS(ctx.tensor(ctx.acts), gates_x, h_prev, w_hh, *bias)
        return _backpropagate_through_time(grad, ctx.inputs, acts, cs, h_prev, c_prev, reverse)

    def to_onnx(self, emit, inputs, output, attrs):
        # ONNX's LSTM returns the cell state of the last step only, while this op returns every
        # step's [h, c]: a Scan over the steps computes exactly what forward does.
        gates_x, h0, c0, w_hh, *bias = emit.operands(list(inputs), emit.dtypes.get(output))
        size = int(emit.shapes[inputs[3]][1])  # w_hh is (4H, H)
        w_hh_t = emit.node("Transpose", [w_hh], perm=[1, 0])  # read by the body (outer scope)
        body = _scan_body(emit, w_hh_t, bias[0] if bias else None, size, emit.dtype(gates_x))
        direction = [1 if attrs["reverse"] else 0]
        emit.nodes.append(
            emit.helper.make_node(
                "Scan",
                [h0, c0, gates_x],
                [emit.fresh("lstm_h_last"), emit.fresh("lstm_c_last"), output],
                body=body,
                num_scan_inputs=1,
                # reverse: steps are read from the last one, and each step's [h, c] is
                # prepended, so that position t of the output belongs to step t
                scan_input_directions=direction,
                scan_output_directions=direction,
            )
        )
        emit.dtypes[output] = emit.dtype(gates_x)
        emit.ranks[output] = 3


class LSTMActivations(Op):
    """The gate activations of an LSTM at every step, i, f, g, o =
    sigmoid, sigmoid, tanh, sigmoid of ``pre = gates_x + h_prev @ w_hh^T + b_hh``, given as the
    values ``lstm_recurrence``'s forward computed.

    Inputs: acts (L, N, 4H), the activations kept by the forward (a value); gates_x (L, N, 4H);
    h_prev (L, N, H), the state before each step; w_hh (4H, H); b_hh (4H,) optional -> acts.
    The output is ``acts`` itself; the backward is that of the formula, written with Tensor ops
    on the output (sigmoid' = a (1 - a), tanh' = 1 - a^2), so second derivatives of the
    recurrence see how the activations depend on its inputs.
    """

    name = "lstm_activations"
    save_inputs, save_output = True, True
    view = True  # the output is its first input

    def forward(self, ctx, xp, acts, gates_x, h_prev, w_hh, b_hh=None):
        return acts

    def infer(self, acts, gates_x, h_prev, w_hh, b_hh=None):
        return acts

    def cost(self, acts, gates_x, h_prev, w_hh, b_hh=None):
        return memory_cost((acts,), acts, 0)  # nothing computed: the forward's values

    def backward(self, ctx, grad):
        _, gates_x, h_prev, w_hh = ctx.inputs[:4]
        acts = ctx.output
        length, batch, gate_size = acts.shape
        size = gate_size // 4
        slope = acts * (1 - acts)  # sigmoid's derivative, in terms of its output
        cell_input = acts[..., 2 * size : 3 * size]
        slope = _concatenate(
            [slope[..., : 2 * size], 1 - cell_input * cell_input, slope[..., 3 * size :]], axis=2
        )
        grad_pre = grad * slope  # (L, N, 4H)
        flat_pre = grad_pre.reshape(length * batch, gate_size)
        grads = [
            None,
            grad_pre,
            grad_pre @ w_hh,
            flat_pre.T @ h_prev.reshape(length * batch, size),
        ]
        if len(ctx.inputs) > 4:
            grads.append(flat_pre.sum(axis=0))
        return tuple(grads)


LSTM_RECURRENCE, LSTM_ACTIVATIONS = LSTMRecurrence(), LSTMActivations()


def _scan_body(emit, w_hh_t: str, b_hh: str | None, size: int, dtype):
    """The ONNX graph of one step for ``LSTMRecurrence.to_onnx``: (h, c, gates_x_t) ->
    (h', c', [h', c']). ``w_hh_t`` (H, 4H) and ``b_hh`` (4H,) are outer-scope values."""
    helper = emit.helper
    elem = helper.np_dtype_to_tensor_dtype(dtype)
    # Names unique in the whole model: a subgraph may not redefine a name of the outer graph.
    name = {key: emit.fresh(f"lstm_step_{key}") for key in _STEP_VALUES}
    split = emit.constant(np.full(4, size, dtype=np.int64))
    nodes = [
        helper.make_node("MatMul", [name["h"], w_hh_t], [name["recurrent"]]),
        helper.make_node("Add", [name["recurrent"], name["x"]], [name["summed"]]),
    ]
    pre = name["summed"]
    if b_hh is not None:
        nodes.append(helper.make_node("Add", [pre, b_hh], [name["pre"]]))
        pre = name["pre"]
    gates = [name["i_pre"], name["f_pre"], name["g_pre"], name["o_pre"]]
    nodes += [
        helper.make_node("Split", [pre, split], gates, axis=1),
        helper.make_node("Sigmoid", [gates[0]], [name["i"]]),
        helper.make_node("Sigmoid", [gates[1]], [name["f"]]),
        helper.make_node("Tanh", [gates[2]], [name["g"]]),
        helper.make_node("Sigmoid", [gates[3]], [name["o"]]),
        helper.make_node("Mul", [name["f"], name["c"]], [name["kept"]]),
        helper.make_node("Mul", [name["i"], name["g"]], [name["written"]]),
        helper.make_node("Add", [name["kept"], name["written"]], [name["c_next"]]),
        helper.make_node("Tanh", [name["c_next"]], [name["tanh_c"]]),
        helper.make_node("Mul", [name["o"], name["tanh_c"]], [name["h_next"]]),
        helper.make_node("Concat", [name["h_next"], name["c_next"]], [name["step"]], axis=1),
    ]

    def info(key, dims):
        return helper.make_tensor_value_info(name[key], elem, dims)

    return helper.make_graph(
        nodes,
        emit.fresh("lstm_step"),
        [info("h", [None, size]), info("c", [None, size]), info("x", [None, 4 * size])],
        [
            info("h_next", [None, size]),
            info("c_next", [None, size]),
            info("step", [None, 2 * size]),
        ],
    )


_STEP_VALUES = (
    "h", "c", "x", "recurrent", "summed", "pre", "i_pre", "f_pre", "g_pre", "o_pre", "i", "f",
    "g", "o", "kept", "written", "c_next", "tanh_c", "h_next", "step",
)  # fmt: skip


def _previous(states, initial, reverse: bool):
    """h_{t-1} (or c_{t-1}) at every step t, in input order: the initial state at the first
    step processed, the state of the step processed before it elsewhere."""
    if reverse:
        return _concatenate([states[1:], initial.unsqueeze(0)])
    return _concatenate([initial.unsqueeze(0), states[:-1]])


def _backpropagate_through_time(
    grad, inputs: tuple, acts, cs, h_prev, c_prev, reverse: bool
) -> tuple:
    """Gradients of (gates_x, h0, c0, w_hh[, b_hh]) from grad (L, N, 2H) of [h_t, c_t], given
    the gate activations (L, N, 4H), the cell states and the states before each step."""
    gates_x, h0, c0, w_hh = inputs[:4]
    size = h0.shape[-1]
    length = gates_x.shape[0]
    i, f, g, o = (acts[..., k * size : (k + 1) * size] for k in range(4))
    tanh_c = cs.tanh()
    # Everything that does not depend on the incoming gradient, for all steps at once:
    # d c_t / d h_t through tanh, and the factors turning dc_t and dh_t into gate gradients.
    through_tanh = o * (1 - tanh_c * tanh_c)  # (L, N, H)
    cell_factors = _concatenate([g * i * (1 - i), c_prev * f * (1 - f), i * (1 - g * g)], axis=2)
    output_factor = tanh_c * o * (1 - o)  # (L, N, H)
    grad_h, grad_c = grad[..., :size], grad[..., size:]

    batch = h0.shape[0]
    dh_next = dc_next = None
    d_gates = [None] * length
    for t in range(length) if reverse else range(length - 1, -1, -1):
        dh = grad_h[t] if dh_next is None else grad_h[t] + dh_next
        dc = grad_c[t] + dh * through_tanh[t]
        if dc_next is not None:
            dc = dc + dc_next
        d_cell = (dc.unsqueeze(1) * cell_factors[t].reshape(batch, 3, size)).reshape(
            batch, 3 * size
        )
        d_gate = _concatenate([d_cell, dh * output_factor[t]], axis=1)  # (N, 4H)
        d_gates[t] = d_gate
        dh_next = d_gate @ w_hh
        dc_next = dc * f[t]
    d_gates_x = _stack(d_gates)  # (L, N, 4H)
    # One GEMM over all steps for the recurrent weight: sum_t d_gates_t^T h_{t-1}.
    flat_gates = d_gates_x.reshape(length * batch, 4 * size)
    d_w_hh = flat_gates.T @ h_prev.reshape(length * batch, size)
    grads = [d_gates_x, dh_next, dc_next, d_w_hh]
    if len(inputs) > 4:
        grads.append(flat_gates.sum(axis=0))
    return tuple(grads)

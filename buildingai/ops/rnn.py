"""The time loop of one LSTM layer and direction as one fused op: ``lstm_recurrence``.

Composed from primitives, an LSTM step costs about fifteen dispatched ops forward and forty in
backward, and the gradient of every per-step slice of the input gates is a full-size tensor;
at the sizes of a recurrent step that overhead, not arithmetic, sets the speed. This op runs
the loop on backend arrays. Its backward is back-propagation through time as one gradient op,
``lstm_recurrence_grad`` (the gradient of every step's pre-activations and cell state), after
which the recurrent-weight gradient is one product over all steps. The backward reads the
forward's gate activations through ``lstm_activations``, which ties them to the inputs they were
computed from; ``lstm_recurrence_grad``'s own backward, the transposed recurrence written with
Tensor ops, gives derivatives of every higher order. ``nn.functional.rnn`` builds LSTM layers on
it.
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
        length, batch, gate_size = gates_x.shape
        size = gate_size // 4
        out = ctx.output  # [h_t, c_t], tied to this node: its dependence on the inputs counts
        h_prev = _previous(out[..., :size], h0, reverse)
        acts = LSTM_ACTIVATIONS(ctx.tensor(ctx.acts), gates_x, h_prev, w_hh, *bias)
        # back-propagation through time, one op: [d pre-activations, d c_t] at every step
        through_time = LSTM_RECURRENCE_GRAD(grad, acts, out, c0, w_hh, reverse=reverse)
        grad_pre = through_time[..., :gate_size]  # (L, N, 4H): also the gradient of gates_x
        first = length - 1 if reverse else 0  # the step processed first reads h0 and c0
        grad_h0 = grad_c0 = None  # for initial states that need none (zeros, most often)
        if h0.requires_grad:
            grad_h0 = grad_pre[first] @ w_hh
        if c0.requires_grad:
            grad_c0 = through_time[first, :, gate_size:] * acts[first, :, size : 2 * size]
        # One GEMM over all steps for the recurrent weight: sum_t d_pre_t^T h_{t-1}.
        flat_pre = grad_pre.reshape(length * batch, gate_size)
        grad_w_hh = flat_pre.T @ h_prev.reshape(length * batch, size)
        grads = [grad_pre, grad_h0, grad_c0, grad_w_hh]
        if bias:
            grads.append(flat_pre.sum(axis=0))
        return tuple(grads)

    def to_onnx(self, emit, inputs, output, attrs):
        # ONNX's LSTM returns the cell state of the last step only, while this op returns every
        # step's [h, c]: a Scan over the steps computes exactly what forward does.
        gates_x, h0, c0, w_hh, *bias = emit.operands(list(inputs), emit.dtypes.get(output))
        size = int(emit.shapes[inputs[3]][1])  # w_hh is (4H, H)
        w_hh_t = emit.node("Transpose", [w_hh], perm=[1, 0])  # read by the body (outer scope)
        body = _scan_body(emit, w_hh_t, bias[0] if bias else None, size, emit.dtype(gates_x))
        _emit_scan(
            emit, body, [h0, c0], gates_x, output, ["lstm_h_last", "lstm_c_last"], attrs["reverse"]
        )


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


class LSTMRecurrenceGrad(Op):
    """Back-propagation through time of ``lstm_recurrence``: the gradient of every step's
    pre-activations (i, f, g, o before their sigmoid or tanh) and of every cell state.

    Inputs: grad (L, N, 2H), the gradient of the recurrence's output [h_t, c_t]; acts
    (L, N, 4H), the gate activations; states (L, N, 2H), the recurrence's output; c0 (N, H);
    w_hh (4H, H). Attribute ``reverse`` as the recurrence's. Output (L, N, 5H):
    [d pre_t (4H), d c_t (H)] at position t. From the step processed last back to the first:

        dh_t = grad_h_t + d pre_{t+1} @ w_hh
        dc_t = grad_c_t + dh_t * o_t (1 - tanh(c_t)^2) + dc_{t+1} * f_{t+1}
        d pre_t = [dc_t g_t i_t (1 - i_t), dc_t c_{t-1} f_t (1 - f_t), dc_t i_t (1 - g_t^2),
                   dh_t tanh(c_t) o_t (1 - o_t)]

    (t + 1 is the step processed after t: t - 1 with ``reverse``). As one op the loop costs one
    product and a few passes per step; composed of Tensor ops it cost about ten dispatched ops
    per step. The backward runs the transposed recurrence forward in time, with Tensor ops.
    """

    name = "lstm_recurrence_grad"
    save_inputs, save_output = True, True

    def forward(self, ctx, xp, grad, acts, states, c0, w_hh, *, reverse):
        length, batch, gate_size = acts.shape
        size = gate_size // 4
        cells = states[..., size:]
        out = xp.empty((length, batch, 5 * size), dtype=xp.result_type(grad, acts, w_hh))
        grad_pre_after = grad_c_after = None  # d pre and dc * f of the step processed after t
        for t in range(length) if reverse else range(length - 1, -1, -1):
            first = t == (length - 1 if reverse else 0)
            c_prev = c0 if first else cells[t + 1 if reverse else t - 1]
            i, f, g, o = (acts[t, :, k * size : (k + 1) * size] for k in range(4))
            tanh_c = xp.tanh(cells[t])
            dh = grad[t, :, :size]
            if grad_pre_after is not None:
                dh = dh + grad_pre_after @ w_hh
            dc = grad[t, :, size:] + dh * (o * (1 - tanh_c * tanh_c))
            if grad_c_after is not None:
                dc = dc + grad_c_after
            grad_pre = out[t, :, :gate_size]
            grad_pre[:, :size] = dc * (g * (i * (1 - i)))
            grad_pre[:, size : 2 * size] = dc * (c_prev * (f * (1 - f)))
            grad_pre[:, 2 * size : 3 * size] = dc * (i * (1 - g * g))
            grad_pre[:, 3 * size :] = dh * (tanh_c * (o * (1 - o)))
            out[t, :, gate_size:] = dc
            grad_pre_after, grad_c_after = grad_pre, dc * f
        return out

    def infer(self, grad, acts, states, c0, w_hh, *, reverse):
        length, batch, gate_size = acts.shape
        dtype = np.result_type(grad.dtype, acts.dtype, w_hh.dtype)
        return ValueSpec((length, batch, 5 * (gate_size // 4)), dtype, acts.device)

    def cost(self, grad, acts, states, c0, w_hh, *, reverse):
        out = self.infer(grad, acts, states, c0, w_hh, reverse=reverse)
        length, batch, gate_size = acts.shape
        size = gate_size // 4
        # per step: the product (N, 4H) x (4H, H) and about 25 operations per hidden unit
        flops = length * (2 * batch * gate_size * size + 25 * batch * size)
        return flops, bytes_of(grad, acts, states, c0, w_hh), out.nbytes

    def backward(self, ctx, grad_of_result):
        grad, acts, states, c0, w_hh = ctx.inputs
        reverse = ctx.attrs["reverse"]
        length = acts.shape[0]
        size = acts.shape[-1] // 4
        through_time = ctx.output  # tied to this node: its dependence on the inputs counts
        grad_pre, dc = through_time[..., : 4 * size], through_time[..., 4 * size :]
        # the forward's values, as Tensors of the inputs
        i, f, g, o = (acts[..., k * size : (k + 1) * size] for k in range(4))
        cells = states[..., size:]
        c_prev = _previous(cells, c0, reverse)
        tanh_c = cells.tanh()
        dh = grad[..., :size] + _after(grad_pre, reverse) @ w_hh
        slope_i, slope_f, slope_o = i * (1 - i), f * (1 - f), o * (1 - o)
        slope_g, slope_c = 1 - g * g, 1 - tanh_c * tanh_c
        factor_i, factor_f, factor_g = g * slope_i, c_prev * slope_f, i * slope_g
        factor_o, factor_h = tanh_c * slope_o, o * slope_c  # dh's paths to d pre_o and to dc

        # The transposed recurrence, from the step processed first to the last: ``pre_bar``
        # and ``c_bar`` collect what reaches d pre_t and dc_t, ``h_bar`` what reaches dh_t.
        upstream_pre, upstream_c = grad_of_result[..., : 4 * size], grad_of_result[..., 4 * size :]
        pre_bars, h_bars, c_bars = [None] * length, [None] * length, [None] * length
        h_bar = c_bar = None
        for t in range(length - 1, -1, -1) if reverse else range(length):
            pre_bar = upstream_pre[t]
            if h_bar is not None:  # d pre_t reached dh of the step processed before it
                pre_bar = pre_bar + h_bar @ w_hh.T
            c_bar_t = (
                upstream_c[t]
                + pre_bar[:, :size] * factor_i[t]
                + pre_bar[:, size : 2 * size] * factor_f[t]
                + pre_bar[:, 2 * size : 3 * size] * factor_g[t]
            )
            if c_bar is not None:  # dc_t reached dc of the step processed before it through f_t
                c_bar_t = c_bar_t + c_bar * f[t]
            c_bar = c_bar_t
            h_bar = pre_bar[:, 3 * size :] * factor_o[t] + c_bar * factor_h[t]
            pre_bars[t], h_bars[t], c_bars[t] = pre_bar, h_bar, c_bar
        pre_bar, h_bar, c_bar = _stack(pre_bars), _stack(h_bars), _stack(c_bars)
        bar_i, bar_f = pre_bar[..., :size] * dc, pre_bar[..., size : 2 * size] * dc
        bar_g, bar_o = pre_bar[..., 2 * size : 3 * size] * dc, pre_bar[..., 3 * size :] * dh
        bar_h = c_bar * dh  # of factor_h
        bar_forget = _previous(c_bar, c_bar[0] * 0, reverse) * dc  # f_t's carry of dc_t

        # through the factors to the activations and the cell states
        grad_i = bar_i * (g * (1 - 2 * i)) + bar_g * slope_g
        grad_f = bar_f * (c_prev * (1 - 2 * f)) + bar_forget
        grad_g = bar_i * slope_i - bar_g * (2 * i * g)
        grad_o = bar_o * (tanh_c * (1 - 2 * o)) + bar_h * slope_c
        grad_tanh_c = bar_o * slope_o - bar_h * (2 * o * tanh_c)
        grad_c_prev = bar_f * slope_f
        grad_cells = grad_tanh_c * slope_c + _after(grad_c_prev, reverse)
        first = length - 1 if reverse else 0
        grad_acts = _concatenate([grad_i, grad_f, grad_g, grad_o], axis=2)
        grad_states = _concatenate([cells * 0, grad_cells], axis=2)
        flat_after = _after(grad_pre, reverse).reshape(-1, 4 * size)
        grad_w_hh = flat_after.T @ h_bar.reshape(-1, size)
        grad_grad = _concatenate([h_bar, c_bar], axis=2)
        return grad_grad, grad_acts, grad_states, grad_c_prev[first], grad_w_hh


LSTM_RECURRENCE, LSTM_ACTIVATIONS = LSTMRecurrence(), LSTMActivations()
LSTM_RECURRENCE_GRAD = LSTMRecurrenceGrad()


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


def _emit_scan(
    emit, body, initial: list, gates_x: str, output: str, last: list, reverse: bool
) -> None:
    """A Scan of ``body`` over the steps of ``gates_x`` (L, N, *) from the states ``initial``,
    run from the last step to the first when ``reverse``: ``output`` (L, N, *) gets every
    step's scan output at that step's position; the final states get fresh names from the
    prefixes ``last``."""
    direction = [1 if reverse else 0]
    emit.nodes.append(
        emit.helper.make_node(
            "Scan",
            [*initial, gates_x],
            [*(emit.fresh(prefix) for prefix in last), output],
            body=body,
            num_scan_inputs=1,
            # reverse: steps are read from the last one, and each step's output is
            # prepended, so that position t of the output belongs to step t
            scan_input_directions=direction,
            scan_output_directions=direction,
        )
    )
    emit.dtypes[output] = emit.dtype(gates_x)
    emit.ranks[output] = 3


def _one_state_body(emit, nodes: list, graph: str, names: tuple, size: int, x_size: int, elem):
    """The ONNX graph of one step of a recurrence with one state (Elman RNN, GRU) from its
    ``nodes``: (h (N, size), x (N, x_size)) -> (h', h' again as the scan output), where
    ``names`` are (h, x, h', scan output) and ``graph`` the prefix of the graph's name."""
    h, x, h_next, scan = names
    helper = emit.helper
    return helper.make_graph(
        nodes,
        emit.fresh(graph),
        [
            helper.make_tensor_value_info(h, elem, [None, size]),
            helper.make_tensor_value_info(x, elem, [None, x_size]),
        ],
        [
            helper.make_tensor_value_info(h_next, elem, [None, size]),
            helper.make_tensor_value_info(scan, elem, [None, size]),
        ],
    )


def _previous(states, initial, reverse: bool):
    """h_{t-1} (or c_{t-1}) at every step t, in input order: the initial state at the first
    step processed, the state of the step processed before it elsewhere."""
    if reverse:
        return _concatenate([states[1:], initial.unsqueeze(0)])
    return _concatenate([initial.unsqueeze(0), states[:-1]])


def _after(values, reverse: bool):
    """The value of the step processed after t, at every step t (in input order), zeros at
    the step processed last."""
    zeros = values[:1] * 0
    if reverse:
        return _concatenate([zeros, values[:-1]])
    return _concatenate([values[1:], zeros])

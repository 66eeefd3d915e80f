"""The time loop of one GRU layer and direction as one op: ``gru_recurrence``, with
back-propagation through time as one gradient op, ``gru_recurrence_grad``.

Per step, with gates_x_t = x_t @ w_ih^T + b_ih (all steps in one product, by the caller) in the
order r, z, n, and hn_t = h_{t-1} @ w_hn^T + b_hn:

    r, z = sigmoid(gates_x_t[r, z] + h_{t-1} @ w_h[r, z]^T + b_h[r, z])
    n = tanh(gates_x_t[n] + r * hn_t)
    h_t = n + z * (h_{t-1} - n)

The backward recomputes r, z, n and hn for all steps at once from the states before each step
(one product over the sequence and a few passes), so they are Tensors of the inputs and higher
derivatives follow; back-propagation through time is then linear in the incoming gradient, with
those values as coefficients, and is one op whose own backward is the transposed recurrence.
"""

from __future__ import annotations

import numpy as np

from ..errors import ShapeError
from .abstract import ValueSpec, bytes_of
from .base import Op
from .rnn import _concatenate, _emit_scan, _one_state_body, _previous, _sigmoid, _stack


class GRURecurrence(Op):
    """h_t for every step of one GRU layer and direction.

    gates_x (L, N, 3H); h0 (N, H); w_hh (3H, H); b_hh (3H,) optional. Attribute ``reverse``:
    run from the last step to the first. Output (L, N, H): h_t at position t (in input order).
    """

    name = "gru_recurrence"
    save_inputs, save_output = True, True

    def forward(self, ctx, xp, gates_x, h0, w_hh, b_hh=None, *, reverse):
        length, batch, gate_size = gates_x.shape
        size = gate_size // 3
        out = xp.empty((length, batch, size), dtype=xp.result_type(gates_x, h0, w_hh))
        h = h0
        for t in range(length - 1, -1, -1) if reverse else range(length):
            gates_h = h @ w_hh.T
            if b_hh is not None:
                gates_h = gates_h + b_hh
            reset_update = _sigmoid(xp, gates_x[t, :, : 2 * size] + gates_h[:, : 2 * size])
            reset, update = reset_update[:, :size], reset_update[:, size:]
            new = xp.tanh(gates_x[t, :, 2 * size :] + reset * gates_h[:, 2 * size :])
            out[t] = h = new + update * (h - new)
        return out

    def infer(self, gates_x, h0, w_hh, b_hh=None, *, reverse):
        length, batch, gate_size = gates_x.shape
        size = h0.shape[-1]
        if (
            gate_size != 3 * size
            or tuple(h0.shape) != (batch, size)
            or tuple(w_hh.shape) != (gate_size, size)
            or (b_hh is not None and tuple(b_hh.shape) != (gate_size,))
        ):
            raise ShapeError(
                f"[gru_recurrence] gates_x {gates_x.shape}, h0 {h0.shape} and w_hh "
                f"{w_hh.shape} do not fit: expected (L, N, 3H), (N, H), (3H, H)",
                help="gates_x holds the input part of the three gates for every step",
            )
        dtype = np.result_type(gates_x.dtype, h0.dtype, w_hh.dtype)
        return ValueSpec((length, batch, size), dtype, gates_x.device)

    def cost(self, gates_x, h0, w_hh, b_hh=None, *, reverse):
        out = self.infer(gates_x, h0, w_hh, b_hh, reverse=reverse)
        length, batch, gate_size = gates_x.shape
        size = gate_size // 3
        # per step the (N, H) x (H, 3H) product and about 12 operations per hidden unit
        flops = length * (2 * batch * size * gate_size + 12 * batch * size)
        return flops, bytes_of(gates_x, h0, w_hh, b_hh), out.nbytes

    def backward(self, ctx, grad):
        gates_x, h0, w_hh = ctx.inputs[:3]
        bias = ctx.inputs[3:]
        reverse = ctx.attrs["reverse"]
        length, batch, gate_size = gates_x.shape
        size = gate_size // 3
        out = ctx.output  # tied to this node: its dependence on the inputs counts
        h_prev = _previous(out, h0, reverse)
        # the forward's gates for all steps at once, as Tensors of the inputs
        gates_h = h_prev @ w_hh.T
        if bias:
            gates_h = gates_h + bias[0]
        reset_update = (gates_x[..., : 2 * size] + gates_h[..., : 2 * size]).sigmoid()
        reset, update = reset_update[..., :size], reset_update[..., size:]
        hidden_new = gates_h[..., 2 * size :]
        new = (gates_x[..., 2 * size :] + reset * hidden_new).tanh()
        # d pre_n, d pre_z, d pre_r per unit of dh_t
        slope_new = (1 - update) * (1 - new * new)
        slope_update = (h_prev - new) * (update * (1 - update))
        slope_reset = slope_new * hidden_new * (reset * (1 - reset))
        coefficients = _concatenate(
            [slope_reset, slope_update, slope_new * reset, update], axis=2
        )  # the gradient of the hidden product [r, z, n] per unit of dh_t, and z
        dh = GRU_RECURRENCE_GRAD(grad, coefficients, w_hh, reverse=reverse)  # (L, N, H)
        grad_gates_x = _concatenate([dh * slope_reset, dh * slope_update, dh * slope_new], axis=2)
        grad_hidden = _concatenate(
            [grad_gates_x[..., : 2 * size], grad_gates_x[..., 2 * size :] * reset], axis=2
        )
        first = length - 1 if reverse else 0  # the step processed first reads h0
        grad_h0 = None  # for an initial state that needs none (zeros, most often)
        if h0.requires_grad:
            grad_h0 = dh[first] * update[first] + grad_hidden[first] @ w_hh
        flat_hidden = grad_hidden.reshape(length * batch, gate_size)
        grads = [grad_gates_x, grad_h0, flat_hidden.T @ h_prev.reshape(length * batch, size)]
        if bias:
            grads.append(flat_hidden.sum(axis=0))
        return tuple(grads)

    def to_onnx(self, emit, inputs, output, attrs):
        # a Scan over the steps, as for the LSTM: every step's h, in input order
        gates_x, h0, w_hh, *bias = emit.operands(list(inputs), emit.dtypes.get(output))
        size = int(emit.shapes[inputs[2]][1])
        w_hh_t = emit.node("Transpose", [w_hh], perm=[1, 0])  # read by the body (outer scope)
        helper = emit.helper
        elem = helper.np_dtype_to_tensor_dtype(emit.dtype(gates_x))
        keys = ("h", "x", "gh", "ghb", "xr", "xz", "xn", "hr", "hz", "hn", "ar", "r", "az", "z")
        keys += ("rhn", "an", "n", "d", "zd", "next", "scan")
        name = {key: emit.fresh(f"gru_step_{key}") for key in keys}
        split = emit.constant(np.full(3, size, dtype=np.int64))
        node = helper.make_node
        nodes = [node("MatMul", [name["h"], w_hh_t], [name["gh"]])]
        gates_h = name["gh"]
        if bias:
            nodes.append(node("Add", [gates_h, bias[0]], [name["ghb"]]))
            gates_h = name["ghb"]
        nodes += [
            node("Split", [name["x"], split], [name["xr"], name["xz"], name["xn"]], axis=1),
            node("Split", [gates_h, split], [name["hr"], name["hz"], name["hn"]], axis=1),
            node("Add", [name["xr"], name["hr"]], [name["ar"]]),
            node("Sigmoid", [name["ar"]], [name["r"]]),
            node("Add", [name["xz"], name["hz"]], [name["az"]]),
            node("Sigmoid", [name["az"]], [name["z"]]),
            node("Mul", [name["r"], name["hn"]], [name["rhn"]]),
            node("Add", [name["xn"], name["rhn"]], [name["an"]]),
            node("Tanh", [name["an"]], [name["n"]]),
            node("Sub", [name["h"], name["n"]], [name["d"]]),
            node("Mul", [name["z"], name["d"]], [name["zd"]]),
            node("Add", [name["n"], name["zd"]], [name["next"]]),
            node("Identity", [name["next"]], [name["scan"]]),
        ]
        names = (name["h"], name["x"], name["next"], name["scan"])
        body = _one_state_body(emit, nodes, "gru_step", names, size, 3 * size, elem)
        _emit_scan(emit, body, [h0], gates_x, output, ["gru_h_last"], attrs["reverse"])


class GRURecurrenceGrad(Op):
    """Back-propagation through time of ``gru_recurrence``: dh_t, the gradient of every step's
    output h_t counting its uses by later steps.

    Inputs: grad (L, N, H) of the output; coefficients (L, N, 4H) = [c_r, c_z, c_n, z] per step,
    where (dh_t c_r, dh_t c_z, dh_t c_n) is the gradient of the step's hidden product
    h_{t-1} @ w_hh^T + b_hh and z its update gate; w_hh (3H, H). Output (L, N, H). From the step
    processed last back to the first (t + 1 is the step processed after t):

        dh_t = grad_t + dh_{t+1} z_{t+1} + (dh_{t+1} [c_r, c_z, c_n]_{t+1}) @ w_hh
    """

    name = "gru_recurrence_grad"
    save_inputs, save_output = True, True

    def forward(self, ctx, xp, grad, coefficients, w_hh, *, reverse):
        length = grad.shape[0]
        size = grad.shape[-1]
        out = xp.empty(grad.shape, dtype=xp.result_type(grad, coefficients, w_hh))
        carry = None  # what dh of the step processed after t passes back to h_{t-1}
        for t in range(length) if reverse else range(length - 1, -1, -1):
            out[t] = dh = grad[t] if carry is None else grad[t] + carry
            hidden = coefficients[t, :, : 3 * size] * xp.tile(dh, 3)
            carry = dh * coefficients[t, :, 3 * size :] + hidden @ w_hh
        return out

    def infer(self, grad, coefficients, w_hh, *, reverse):
        dtype = np.result_type(grad.dtype, coefficients.dtype, w_hh.dtype)
        return ValueSpec(grad.shape, dtype, grad.device)

    def cost(self, grad, coefficients, w_hh, *, reverse):
        out = self.infer(grad, coefficients, w_hh, reverse=reverse)
        length, batch, size = grad.shape
        flops = length * (6 * batch * size * size + 8 * batch * size)
        return flops, bytes_of(grad, coefficients, w_hh), out.nbytes

    def backward(self, ctx, grad_of_result):
        grad, coefficients, w_hh = ctx.inputs
        reverse = ctx.attrs["reverse"]
        length, size = grad.shape[0], grad.shape[-1]
        dh = ctx.output  # tied to this node: its dependence on the inputs counts
        factors, update = coefficients[..., : 3 * size], coefficients[..., 3 * size :]
        # The transposed recurrence, from the step processed first: ``dh_bar`` collects what
        # reaches dh_t, directly and through the carry into the step processed before it.
        dh_bars, spread_bars = [None] * length, [None] * length
        dh_bar = None
        for t in range(length - 1, -1, -1) if reverse else range(length):
            total = grad_of_result[t]
            if dh_bar is not None:  # dh_t carried into dh of the step processed before it
                spread = dh_bar @ w_hh.T  # (N, 3H): reaches dh_t [c_r, c_z, c_n]_t
                spread_bars[t] = spread
                blocks = spread * factors[t]
                total = (
                    total
                    + dh_bar * update[t]
                    + blocks[:, :size]
                    + blocks[:, size : 2 * size]
                    + blocks[:, 2 * size :]
                )
            dh_bars[t] = dh_bar = total
        first = length - 1 if reverse else 0
        spread_bars[first] = _concatenate([dh[first] * 0] * 3, axis=1)  # nothing carried in
        dh_bar, spread_bar = _stack(dh_bars), _stack(spread_bars)
        carried = _previous(dh_bar, dh_bar[first] * 0, reverse)  # dh_bar of the step before
        dh3 = _concatenate([dh, dh, dh], axis=2)
        grad_coefficients = _concatenate([spread_bar * dh3, carried * dh], axis=2)
        hidden = (factors * dh3).reshape(-1, 3 * size)
        grad_w_hh = hidden.T @ carried.reshape(-1, size)
        return dh_bar, grad_coefficients, grad_w_hh


GRU_RECURRENCE, GRU_RECURRENCE_GRAD = GRURecurrence(), GRURecurrenceGrad()

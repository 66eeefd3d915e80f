"""A whole step of the Elman cell as one op: ``rnn_cell_step``, both products, the biases and
the nonlinearity.

``rnn_cell`` (``ops/rnn_cells.py``) takes the step after its two products, which stay ``linear``
calls of their own: three ops and three graph nodes per step. At the sizes of one step (tens of
rows), each costs more in dispatch and in the backward engine than in arithmetic, so
``rnn_tanh_cell`` and ``rnn_relu_cell`` call this op instead: one op forward, one node whose
backward makes the same five ops the three nodes made (the nonlinearity's slope, three products
and the bias sum), without the two extra nodes' bookkeeping.

The backward reads the inputs and the output only (``h' = act(pre)`` gives the slope), so its
ops differentiate again: second derivatives come through them.
"""

from __future__ import annotations

import numpy as np

from ..errors import ArgumentError, ShapeError
from .abstract import ValueSpec, bytes_of
from .base import Op
from .linalg import MATMUL, linear_array
from .reduce import SUM
from .rnn_cells import RNN_CELL_GRAD, _check_biases, _pre_activation
from .rnn_elman import NONLINEARITIES, _activate


def _check_step(x, h, w_ih, w_hh, biases) -> None:
    """x (N, I), h (N, H), w_ih (H, I), w_hh (H, H), biases none or both (H,)."""
    fits = (
        len(x.shape) == 2
        and len(h.shape) == 2
        and tuple(w_ih.shape) == (h.shape[1], x.shape[1])
        and tuple(w_hh.shape) == (h.shape[1], h.shape[1])
        and x.shape[0] == h.shape[0]
    )
    if not fits:
        shapes = ", ".join(
            f"{name} {tuple(value.shape)}"
            for name, value in (("x", x), ("h", h), ("w_ih", w_ih), ("w_hh", w_hh))
        )
        raise ShapeError(
            f"[rnn_cell_step] {shapes} do not fit: expected x (N, I), h (N, H), w_ih (H, I), "
            "w_hh (H, H)",
            help="the weights are laid out (hidden_size, input_size) and (hidden_size, "
            "hidden_size), as in PyTorch's RNNCell",
        )
    _check_biases("rnn_cell_step", biases, h.shape[1])


class RNNCellStep(Op):
    """One Elman step: h' = act(x w_ih^T + h w_hh^T + b_ih + b_hh).

    x (N, I), h (N, H), w_ih (H, I), w_hh (H, H), b_ih and b_hh (H,) optional (both or
    neither) -> h' (N, H); attribute ``nonlinearity``, 'tanh' or 'relu'. The sums run in the
    order ``rnn_cell`` adds its products and biases, so the two give the same values.
    """

    name = "rnn_cell_step"
    save_inputs, save_output = True, True
    autocast = "low"  # the products are most of the work, as in linear

    def check(self, x, h, w_ih, w_hh, *biases, nonlinearity):
        if nonlinearity not in NONLINEARITIES:
            raise ArgumentError(
                f"[rnn_cell_step] nonlinearity must be 'tanh' or 'relu', got {nonlinearity!r}"
            )
        _check_step(x, h, w_ih, w_hh, biases)

    def forward(self, ctx, xp, x, h, w_ih, w_hh, *biases, nonlinearity):
        pre = _pre_activation(linear_array(xp, x, w_ih), linear_array(xp, h, w_hh), biases)
        return _activate(xp, pre, nonlinearity)

    def infer(self, x, h, w_ih, w_hh, *biases, nonlinearity):
        _check_step(x, h, w_ih, w_hh, biases)
        dtypes = [x.dtype, h.dtype, w_ih.dtype, w_hh.dtype, *(bias.dtype for bias in biases)]
        return ValueSpec(tuple(h.shape), np.result_type(*dtypes), x.device)

    def cost(self, x, h, w_ih, w_hh, *biases, nonlinearity):
        out = self.infer(x, h, w_ih, w_hh, *biases, nonlinearity=nonlinearity)
        inner = x.shape[1] + h.shape[1]
        flops = 2 * out.numel * inner + (2 + len(biases)) * out.numel
        return flops, bytes_of(x, h, w_ih, w_hh, *biases), out.nbytes

    def backward(self, ctx, grad):
        x, h, w_ih, w_hh, *biases = ctx.inputs
        grad_pre = RNN_CELL_GRAD(grad, ctx.output, nonlinearity=ctx.attrs["nonlinearity"])
        grads = [
            MATMUL(grad_pre, w_ih) if x.requires_grad else None,
            MATMUL(grad_pre, w_hh) if h.requires_grad else None,
            MATMUL(grad_pre, x, transpose_a=True) if w_ih.requires_grad else None,
            MATMUL(grad_pre, h, transpose_a=True) if w_hh.requires_grad else None,
        ]
        if biases:
            needed = any(bias.requires_grad for bias in biases)
            grad_bias = SUM(grad_pre, axes=(0,), keepdims=False) if needed else None
            grads += [grad_bias, grad_bias]
        return tuple(grads)

    def to_onnx(self, emit, inputs, output, attrs):
        x, h, w_ih, w_hh, *biases = emit.operands(list(inputs), emit.dtypes.get(output))
        pre = emit.node("Add", [emit.node("Gemm", [x, w_ih], transB=1),
                                emit.node("Gemm", [h, w_hh], transB=1)])  # fmt: skip
        for bias in biases:
            pre = emit.node("Add", [pre, bias])
        kind = "Tanh" if attrs["nonlinearity"] == "tanh" else "Relu"
        emit.node(kind, [pre], output)


RNN_CELL_STEP = RNNCellStep()

"""The LSTM time loop and its back-propagation through time with acceleration on
(``accel/recurrence.py``): the same values and gradients as the records', and float32 errors
against a float64 reference no larger than PyTorch's own float32 LSTM's."""

from __future__ import annotations

import numpy as np
import pytest

import buildingai as bai
from buildingai.nn.rnn import LSTM
from buildingai.ops.rnn import LSTM_RECURRENCE, LSTM_RECURRENCE_GRAD

torch = pytest.importorskip("torch")
pytest.importorskip("numba")


def _pair(dtype, seed=0, **options):
    torch.manual_seed(seed)
    theirs = torch.nn.LSTM(6, 16, **options).to(getattr(torch, np.dtype(dtype).name))
    ours = LSTM(6, 16, dtype=dtype, **options)
    ours.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})
    return ours, theirs


def _ours(layer, x, upstream, accelerated):
    with bai.accel.enabled(accelerated):
        inputs = [bai.Tensor(x, requires_grad=True), *layer.parameters()]
        out, (h, c) = layer(inputs[0])
        total = (out * bai.Tensor(upstream)).sum() + (h * h).sum() + c.sum()
        grads = bai.grad(total, inputs)
    return [out.numpy(), h.numpy(), c.numpy(), *(g.numpy() for g in grads)]


def _theirs(layer, x, upstream):
    inputs = [torch.tensor(x, requires_grad=True), *layer.parameters()]
    out, (h, c) = layer(inputs[0])
    total = (out * torch.tensor(upstream)).sum() + (h * h).sum() + c.sum()
    grads = torch.autograd.grad(total, inputs)
    return [t.detach().numpy() for t in (out, h, c, *grads)]


def _data(dtype, layer, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((9, 4, 6)).astype(dtype)
    width = 16 * (2 if layer.bidirectional else 1)
    return x, rng.standard_normal((9, 4, width)).astype(dtype)


@pytest.mark.parametrize(
    "options", [{}, {"bidirectional": True, "num_layers": 2}, {"bias": False}], ids=str
)
def test_accelerated_lstm_equals_the_records_and_pytorch(options):
    layer, theirs = _pair(np.float32, **options)
    x, upstream = _data(np.float32, layer)
    reference = _ours(layer, x, upstream, accelerated=False)
    accelerated = _ours(layer, x, upstream, accelerated=True)
    torch_values = _theirs(theirs, x, upstream)
    for mine, record, pytorch in zip(accelerated, reference, torch_values):
        np.testing.assert_allclose(mine, record, rtol=1e-5, atol=2e-6)
        np.testing.assert_allclose(mine, pytorch, rtol=1e-5, atol=2e-6)


def test_the_fused_kernels_run_for_float32():
    layer, _ = _pair(np.float32)
    x, upstream = _data(np.float32, layer)
    names = []

    class Names(bai.autograd.dispatch.DispatchMode):
        def before_op(self, op, inputs, attrs):
            names.append(op.name)

    with bai.autograd.dispatch.dispatch_mode(Names()):
        _ours(layer, x, upstream, accelerated=True)
    assert {"lstm_recurrence", "lstm_recurrence_grad"} <= set(names)
    with bai.accel.enabled(True):
        fused = {entry.name for entry in LSTM_RECURRENCE.accelerated}
        fused |= {entry.name for entry in LSTM_RECURRENCE_GRAD.accelerated}
    assert {"lstm_recurrence.fused", "lstm_recurrence_grad.fused"} <= fused


def test_mismatched_shapes_reach_the_records_error():
    gates_x = bai.zeros((3, 2, 8))
    with bai.accel.enabled(True), pytest.raises(Exception, match="lstm_recurrence|shape|broadcast"):
        LSTM_RECURRENCE(
            gates_x, bai.zeros((2, 3)), bai.zeros((2, 2)), bai.zeros((8, 2)), reverse=False
        )


def test_float32_error_is_within_pytorchs_own():
    """Max error of float32 outputs and gradients against float64, ours with the fused kernels
    against PyTorch's float32 LSTM: at most 1.5 times PyTorch's, for every output."""
    layer64, theirs64 = _pair(np.float64, seed=3, bidirectional=True)
    layer32, theirs32 = _pair(np.float32, seed=3, bidirectional=True)
    x, upstream = _data(np.float64, layer64, seed=4)
    exact = _theirs(theirs64, x, upstream)
    ours = _ours(layer32, x.astype(np.float32), upstream.astype(np.float32), accelerated=True)
    pytorch = _theirs(theirs32, x.astype(np.float32), upstream.astype(np.float32))
    for index, (reference, mine, theirs) in enumerate(zip(exact, ours, pytorch)):
        our_error = np.abs(mine - reference).max()
        their_error = np.abs(theirs - reference).max()
        assert our_error <= 1.5 * their_error + 1e-7, (index, our_error, their_error)

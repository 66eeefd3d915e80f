"""The LSTM, GRU and Elman RNN time loops and their back-propagation through time with acceleration on
(``accel/recurrence.py``): the same values and gradients as the records', and float32 errors
against a float64 reference no larger than PyTorch's own float32 layers'."""

from __future__ import annotations

from contextlib import contextmanager

import numpy as np
import pytest

import buildingai as bai
from buildingai.accel import recurrence
from buildingai.nn.rnn import GRU, LSTM, RNN, GRUCell, LSTMCell
from buildingai.ops import all_ops
from buildingai.ops.rnn import LSTM_RECURRENCE, LSTM_RECURRENCE_GRAD
from buildingai.ops.rnn_elman import RNN_RECURRENCE, RNN_RECURRENCE_GRAD
from buildingai.ops.rnn_gru import GRU_RECURRENCE, GRU_RECURRENCE_GRAD

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


def test_float32_error_at_a_language_models_size_is_within_pytorchs(monkeypatch):
    """The LSTM language model's layer (width 256, batch 20, 35 steps), whose recurrent products
    run on packed panels: float32 outputs and gradients within ``BOUND`` times PyTorch's
    float32 error against float64."""
    from tests.accel.test_float32_accuracy import assert_within_pytorchs

    widths = []
    column_blocks = recurrence._column_blocks

    def noting_widths(*args):
        blocks = column_blocks(*args)
        widths.append(blocks.shape[2])
        return blocks

    monkeypatch.setattr(recurrence, "_column_blocks", noting_widths)
    torch.manual_seed(5)
    theirs64 = torch.nn.LSTM(256, 256).double()
    theirs32 = torch.nn.LSTM(256, 256)
    theirs32.load_state_dict(theirs64.state_dict())
    ours = LSTM(256, 256)
    ours.load_state_dict({k: v.detach().float().numpy() for k, v in theirs64.state_dict().items()})
    rng = np.random.default_rng(6)
    x, upstream = rng.standard_normal((35, 20, 256)), rng.standard_normal((35, 20, 256))
    exact = _theirs(theirs64, x, upstream)
    mine = _ours(ours, x.astype(np.float32), upstream.astype(np.float32), accelerated=True)
    pytorch = _theirs(theirs32, x.astype(np.float32), upstream.astype(np.float32))
    names = ["output", "h", "c", "input grad", "w_ih grad", "w_hh grad", "b_ih grad", "b_hh grad"]
    for name, reference, value, their in zip(names, exact, mine, pytorch):
        assert_within_pytorchs(f"LSTM(256, 256) {name}", value, their, reference)
    from buildingai.accel.kernels.compiled.panel_tile import PANEL

    assert widths and set(widths) == {PANEL}  # forward and back on panels


# ----- GRU and Elman RNN --------------------------------------------------------------------------

KERNELS = {
    "GRU": ("gru_recurrence.fused", "gru_recurrence_grad.fused"),
    "RNN": ("rnn_recurrence.fused", "rnn_recurrence_grad.fused"),
}
OPS = {"GRU": (GRU_RECURRENCE, GRU_RECURRENCE_GRAD), "RNN": (RNN_RECURRENCE, RNN_RECURRENCE_GRAD)}
LAYERS = [("GRU", {}), ("RNN", {}), ("RNN", {"nonlinearity": "relu"})]
LAYER_IDS = ["GRU", "RNN tanh", "RNN relu"]


@contextmanager
def _kernels_that_ran(kind):
    """The names of ``kind``'s kernels that computed a result inside the block (entered with
    acceleration on)."""
    names = []
    entries = [entry for op in OPS[kind] for entry in op.accelerated]
    runs = [entry.run for entry in entries]

    def noting(entry, run):
        def noted(*args, **kwargs):
            result = run(*args, **kwargs)
            if result is not NotImplemented:
                names.append(entry.name)
            return result

        return noted

    for entry, run in zip(entries, runs):
        entry.run = noting(entry, run)
    try:
        yield names
    finally:
        for entry, run in zip(entries, runs):
            entry.run = run


def _one_state_pair(kind, dtype, seed=0, **options):
    torch.manual_seed(seed)
    theirs = getattr(torch.nn, kind)(6, 16, **options).to(getattr(torch, np.dtype(dtype).name))
    ours = {"GRU": GRU, "RNN": RNN}[kind](6, 16, dtype=dtype, **options)
    ours.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})
    return ours, theirs


def _one_state_ours(layer, x, upstream, accelerated):
    with bai.accel.enabled(accelerated):
        inputs = [bai.Tensor(x, requires_grad=True), *layer.parameters()]
        out, h = layer(inputs[0])
        total = (out * bai.Tensor(upstream)).sum() + (h * h).sum()
        grads = bai.grad(total, inputs)
    return [out.numpy(), h.numpy(), *(g.numpy() for g in grads)]


def _one_state_theirs(layer, x, upstream):
    inputs = [torch.tensor(x, requires_grad=True), *layer.parameters()]
    out, h = layer(inputs[0])
    total = (out * torch.tensor(upstream)).sum() + (h * h).sum()
    grads = torch.autograd.grad(total, inputs)
    return [t.detach().numpy() for t in (out, h, *grads)]


@pytest.mark.parametrize(("kind", "layer_options"), LAYERS, ids=LAYER_IDS)
@pytest.mark.parametrize(
    "options", [{}, {"bidirectional": True, "num_layers": 2}, {"bias": False}], ids=str
)
def test_accelerated_layer_equals_the_records_and_pytorch(kind, layer_options, options):
    layer, theirs = _one_state_pair(kind, np.float32, **layer_options, **options)
    x, upstream = _data(np.float32, layer)
    reference = _one_state_ours(layer, x, upstream, accelerated=False)
    accelerated = _one_state_ours(layer, x, upstream, accelerated=True)
    torch_values = _one_state_theirs(theirs, x, upstream)
    for mine, record, pytorch in zip(accelerated, reference, torch_values):
        np.testing.assert_allclose(mine, record, rtol=1e-5, atol=2e-6)
        np.testing.assert_allclose(mine, pytorch, rtol=1e-5, atol=2e-6)


@pytest.mark.parametrize(("kind", "layer_options"), LAYERS, ids=LAYER_IDS)
def test_the_fused_kernels_run_for_float32_only(kind, layer_options):
    with bai.accel.enabled(True):
        registered = {entry.name for op in OPS[kind] for entry in op.accelerated}
    assert set(KERNELS[kind]) <= registered
    ran = []
    for dtype in (np.float32, np.float64):
        layer, _ = _one_state_pair(kind, dtype, **layer_options)
        x, upstream = _data(dtype, layer)
        with bai.accel.enabled(True), _kernels_that_ran(kind) as names:
            _one_state_ours(layer, x, upstream, accelerated=True)
        ran.append(names)
    assert set(KERNELS[kind]) <= set(ran[0])
    assert not set(KERNELS[kind]) & set(ran[1])


@pytest.mark.parametrize(("kind", "layer_options"), LAYERS, ids=LAYER_IDS)
def test_float64_with_acceleration_on_matches_the_record_and_pytorch(kind, layer_options):
    layer, theirs = _one_state_pair(kind, np.float64, seed=1, bidirectional=True, **layer_options)
    x, upstream = _data(np.float64, layer, seed=2)
    reference = _one_state_ours(layer, x, upstream, accelerated=False)
    accelerated = _one_state_ours(layer, x, upstream, accelerated=True)
    pytorch = _one_state_theirs(theirs, x, upstream)
    for mine, record, theirs_value in zip(accelerated, reference, pytorch):
        np.testing.assert_allclose(mine, record, rtol=1e-12, atol=1e-14)  # other kernels' order
        np.testing.assert_allclose(mine, theirs_value, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize(("kind", "layer_options"), LAYERS, ids=LAYER_IDS)
def test_float32_error_is_within_pytorchs_and_the_records_own(kind, layer_options):
    """Max error of float32 outputs and gradients against float64: with the fused kernels at
    most twice the larger of PyTorch's float32 layer's and the float32 record's (the GRU's
    record itself reaches about 3 times PyTorch's on some gradients: its backward recomputes
    the gates)."""
    options = {"bidirectional": True, **layer_options}
    layer64, theirs64 = _one_state_pair(kind, np.float64, seed=3, **options)
    layer32, theirs32 = _one_state_pair(kind, np.float32, seed=3, **options)
    x, upstream = _data(np.float64, layer64, seed=4)
    exact = _one_state_theirs(theirs64, x, upstream)
    x32, upstream32 = x.astype(np.float32), upstream.astype(np.float32)
    ours = _one_state_ours(layer32, x32, upstream32, accelerated=True)
    record = _one_state_ours(layer32, x32, upstream32, accelerated=False)
    pytorch = _one_state_theirs(theirs32, x32, upstream32)
    for index, (reference, mine, plain, theirs) in enumerate(zip(exact, ours, record, pytorch)):
        our_error = np.abs(mine - reference).max()
        bound = max(np.abs(theirs - reference).max(), np.abs(plain - reference).max())
        assert our_error <= 2 * bound + 1e-7, (index, our_error, bound)


@pytest.mark.parametrize(("kind", "layer_options"), LAYERS, ids=LAYER_IDS)
def test_accelerated_second_derivatives_equal_the_records(kind, layer_options):
    """The fused kernels run only the first-order loops; the records' backward of the gradient
    op (the transposed recurrence) still gives second derivatives."""
    layer, _ = _one_state_pair(kind, np.float32, seed=5, **layer_options)
    x, _ = _data(np.float32, layer, seed=6)
    results = []
    for accelerated in (False, True):
        with bai.accel.enabled(accelerated):
            inputs = [bai.Tensor(x, requires_grad=True), *layer.parameters()]
            out, _ = layer(inputs[0])
            (grad_x,) = bai.grad((out * out).sum(), [inputs[0]], create_graph=True)
            second = bai.grad((grad_x * grad_x).sum(), inputs[1:], allow_unused=True)
        results.append([None if g is None else g.numpy() for g in second])
    for mine, record in zip(*results):
        if record is None:
            assert mine is None
        else:
            np.testing.assert_allclose(mine, record, rtol=1e-4, atol=1e-5)


# ----- cells --------------------------------------------------------------------------------------

CELL_KINDS = {"LSTMCell": LSTMCell, "GRUCell": GRUCell}


@pytest.mark.parametrize("kind", sorted(CELL_KINDS))
@pytest.mark.parametrize("bias", [True, False])
def test_accelerated_cells_equal_the_records_and_pytorch(kind, bias):
    torch.manual_seed(0)
    theirs = getattr(torch.nn, kind)(6, 16, bias=bias)
    layer = CELL_KINDS[kind](6, 16, bias=bias)
    layer.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})
    rng = np.random.default_rng(0)
    x = rng.standard_normal((5, 4, 6)).astype(np.float32)
    upstream = rng.standard_normal((5, 4, 16)).astype(np.float32)

    def run(lib, layer, grad, accelerated):
        with bai.accel.enabled(accelerated):
            inputs = [lib.tensor(x, requires_grad=True), *layer.parameters()]
            state, outputs = None, []
            for t in range(x.shape[0]):
                state = layer(inputs[0][t], state)
                outputs.append(state[0] if isinstance(state, tuple) else state)
            total = (lib.stack(outputs) * lib.tensor(upstream)).sum()
            return [
                np.asarray(g.detach() if lib is torch else g.numpy()) for g in grad(total, inputs)
            ]

    names = {"LSTMCell": ("lstm_cell", "lstm_cell_grad"), "GRUCell": ("gru_cell", "gru_cell_grad")}
    ops = [op for op in all_ops() if op.name in names[kind]]
    with bai.accel.enabled(True):
        assert all(f"{op.name}.fused" in {e.name for e in op.accelerated} for op in ops)
    reference = run(bai, layer, bai.grad, accelerated=False)
    accelerated = run(bai, layer, bai.grad, accelerated=True)
    pytorch = run(torch, theirs, torch.autograd.grad, accelerated=False)
    for mine, record, theirs_grad in zip(accelerated, reference, pytorch):
        np.testing.assert_allclose(mine, record, rtol=1e-5, atol=2e-6)
        np.testing.assert_allclose(mine, theirs_grad, rtol=1e-5, atol=2e-6)


def test_the_cell_twins_take_float32_arrays_of_fitting_shapes_only():
    from buildingai.accel import recurrence

    rng = np.random.default_rng(0)

    def arrays(dtype=np.float32, batch=3, size=4, width=4 * 4, grad_width=2 * 4):
        gates = [rng.standard_normal((batch, width)).astype(dtype) for _ in range(2)]
        c = rng.standard_normal((batch, size)).astype(dtype)
        biases = [rng.standard_normal(width).astype(dtype) for _ in range(2)]
        grad = rng.standard_normal((batch, grad_width)).astype(dtype)
        return gates, c, biases, grad

    with bai.accel.enabled(True):
        (gx, gh), c, biases, grad = arrays()
        assert recurrence._lstm_cell_fits(np, gx, gh, c, *biases)
        assert recurrence._lstm_cell_fits(np, gx, gh, c)
        assert recurrence._lstm_cell_grad_fits(np, grad, gx, gh, c, *biases)
        assert not recurrence._lstm_cell_fits(np, gx, gh, c.astype(np.float64), *biases)
        assert not recurrence._lstm_cell_fits(np, gx.astype(np.float64), gh, c, *biases)
        assert not recurrence._lstm_cell_fits(np, gx, gh, c, biases[0][:-1], biases[1])
        assert not recurrence._lstm_cell_fits(np, gx[:, :-1], gh, c, *biases)
        assert not recurrence._lstm_cell_fits(np, gx, gh, c[:, :0], *biases)
        assert not recurrence._lstm_cell_grad_fits(np, grad[:, :-1], gx, gh, c, *biases)
        assert not recurrence._lstm_cell_grad_fits(np, grad.astype(np.float64), gx, gh, c)
        assert not recurrence._lstm_cell_fits(np, gx, gh, bai.tensor(c), *biases)

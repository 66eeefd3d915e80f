"""RNN, LSTM, GRU and their cells against PyTorch in float64, with weights copied through state
dicts both ways: outputs, final states, and the gradients of inputs, initial states and every
parameter; finite-difference and second-derivative checks; dropout; errors."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import buildingai as bai
from buildingai.errors import ArgumentError, BuildingAIError, DTypeError, ShapeError
from buildingai.nn import functional as F
from buildingai.nn.rnn import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNCell
from tests.helpers import check_op

torch = pytest.importorskip("torch")

INPUT, HIDDEN = 3, 4
PAIRS = {"RNN": (RNN, torch.nn.RNN), "LSTM": (LSTM, torch.nn.LSTM), "GRU": (GRU, torch.nn.GRU)}
CELLS = {
    "RNNCell": (RNNCell, torch.nn.RNNCell),
    "LSTMCell": (LSTMCell, torch.nn.LSTMCell),
    "GRUCell": (GRUCell, torch.nn.GRUCell),
}


def _build(pair, from_torch: bool = True, **kwargs):
    """The same layer in both libraries, float64, with the weights of one copied to the other."""
    ours_cls, theirs_cls = pair
    ours = ours_cls(INPUT, HIDDEN, dtype=bai.float64, **kwargs)
    theirs = theirs_cls(INPUT, HIDDEN, **kwargs).double()
    if from_torch:
        ours.load_state_dict({k: v.numpy() for k, v in theirs.state_dict().items()})
    else:
        theirs.load_state_dict({k: torch.tensor(v.numpy()) for k, v in ours.state_dict().items()})
    return ours, theirs


def _flatten(value) -> list:
    """Tensors in an (output, state) structure, in order."""
    if isinstance(value, (tuple, list)):
        return [t for part in value for t in _flatten(part)]
    return [value]


def _compare(ours, theirs, inputs: list[np.ndarray], structure, seed: int = 1) -> None:
    """Run both modules on ``inputs`` (x, then states arranged by ``structure``), compare every
    output, then backpropagate one random weighting of all outputs and compare the gradients of
    the inputs and of every parameter."""
    ours_in = [bai.Tensor(a.copy(), requires_grad=True) for a in inputs]
    theirs_in = [torch.tensor(a.copy(), requires_grad=True) for a in inputs]
    ours_out = _flatten(ours(*structure(ours_in)))
    theirs_out = _flatten(theirs(*structure(theirs_in)))
    assert len(ours_out) == len(theirs_out)
    rng = np.random.default_rng(seed)
    ours_loss, theirs_loss = 0, 0
    for k, (o, t) in enumerate(zip(ours_out, theirs_out)):
        assert tuple(o.shape) == tuple(t.shape), f"output {k}: {o.shape} != {tuple(t.shape)}"
        np.testing.assert_allclose(o.numpy(), t.detach().numpy(), rtol=1e-10, atol=1e-12)
        weight = rng.standard_normal(tuple(o.shape))
        ours_loss = ours_loss + (o * bai.Tensor(weight)).sum()
        theirs_loss = theirs_loss + (t * torch.tensor(weight)).sum()
    ours_loss.backward()
    theirs_loss.backward()
    for k, (o, t) in enumerate(zip(ours_in, theirs_in)):
        np.testing.assert_allclose(
            o.grad.numpy(), t.grad.numpy(), rtol=1e-9, atol=1e-12, err_msg=f"input {k}"
        )
    theirs_params = dict(theirs.named_parameters())
    ours_params = dict(ours.named_parameters())
    assert sorted(ours_params) == sorted(theirs_params)
    for name, param in ours_params.items():
        np.testing.assert_allclose(
            param.grad.numpy(),
            theirs_params[name].grad.numpy(),
            rtol=1e-9,
            atol=1e-12,
            err_msg=name,
        )


def _states(kind: str, x_shape: tuple, count: int, rng, proj_size: int = 0, batch_first=False):
    """Random initial states for input ``x_shape`` (None: no batch)."""
    batched = len(x_shape) == 3
    lead = (count, x_shape[0 if batch_first else 1]) if batched else (count,)
    states = [rng.standard_normal(lead + (proj_size or HIDDEN,))]
    if kind == "LSTM":
        states.append(rng.standard_normal(lead + (HIDDEN,)))
    return states


SEQUENCE_CASES = [
    # (kind, constructor arguments, input shape, with initial states)
    ("LSTM", {}, (5, 2, INPUT), False),
    ("LSTM", {}, (5, 2, INPUT), True),
    ("LSTM", {"num_layers": 2}, (4, 3, INPUT), True),
    ("LSTM", {"bidirectional": True}, (4, 2, INPUT), True),
    ("LSTM", {"num_layers": 2, "bidirectional": True, "batch_first": True}, (2, 4, INPUT), True),
    ("LSTM", {"num_layers": 2, "bidirectional": True}, (4, 2, INPUT), False),
    ("LSTM", {"bias": False}, (3, 2, INPUT), True),
    ("LSTM", {"num_layers": 2}, (4, INPUT), True),  # unbatched
    ("LSTM", {"batch_first": True, "bidirectional": True}, (4, INPUT), False),  # unbatched
    ("LSTM", {"proj_size": 2, "num_layers": 2, "bidirectional": True}, (3, 2, INPUT), True),
    ("LSTM", {}, (1, 1, INPUT), True),  # one step, one sequence
    ("LSTM", {}, (17, 2, INPUT), False),  # long enough to slice the steps in blocks
    ("GRU", {}, (5, 2, INPUT), False),
    ("GRU", {}, (5, 2, INPUT), True),
    ("GRU", {"num_layers": 2, "bidirectional": True}, (4, 3, INPUT), True),
    ("GRU", {"batch_first": True, "bias": False}, (2, 5, INPUT), True),
    ("GRU", {"num_layers": 2}, (4, INPUT), True),  # unbatched
    ("GRU", {}, (17, 2, INPUT), True),
    ("RNN", {}, (5, 2, INPUT), True),
    ("RNN", {"nonlinearity": "relu"}, (5, 2, INPUT), True),
    ("RNN", {"nonlinearity": "relu", "num_layers": 2, "bidirectional": True}, (4, 2, INPUT), False),
    ("RNN", {"batch_first": True, "bias": False, "num_layers": 2}, (3, 4, INPUT), True),
    ("RNN", {"nonlinearity": "relu"}, (4, INPUT), True),  # unbatched
]


@pytest.mark.parametrize("kind, kwargs, x_shape, with_states", SEQUENCE_CASES)
def test_sequence_layers_match_pytorch(kind, kwargs, x_shape, with_states):
    rng = np.random.default_rng(0)
    ours, theirs = _build(PAIRS[kind], **kwargs)
    x = rng.standard_normal(x_shape)
    if not with_states:
        _compare(ours, theirs, [x], lambda t: (t[0],))
        return
    count = kwargs.get("num_layers", 1) * (2 if kwargs.get("bidirectional") else 1)
    states = _states(
        kind, x_shape, count, rng, kwargs.get("proj_size", 0), kwargs.get("batch_first", False)
    )
    if kind == "LSTM":
        _compare(ours, theirs, [x, *states], lambda t: (t[0], (t[1], t[2])))
    else:
        _compare(ours, theirs, [x, *states], lambda t: (t[0], t[1]))


@pytest.mark.parametrize("kind", ["RNN", "LSTM", "GRU"])
def test_weights_copied_from_ours_to_pytorch(kind):
    ours, theirs = _build(PAIRS[kind], from_torch=False, num_layers=2, bidirectional=True)
    x = np.random.default_rng(3).standard_normal((4, 2, INPUT))
    _compare(ours, theirs, [x], lambda t: (t[0],))


@pytest.mark.parametrize("kind", ["RNN", "LSTM", "GRU"])
def test_parameter_names_shapes_and_initialisation(kind):
    kwargs = {"num_layers": 2, "bidirectional": True}
    if kind == "LSTM":
        kwargs["proj_size"] = 2
    ours_cls, theirs_cls = PAIRS[kind]
    bai.manual_seed(0)
    ours = ours_cls(INPUT, 25, **kwargs)
    theirs = theirs_cls(INPUT, 25, **kwargs)
    ours_shapes = {name: tuple(p.shape) for name, p in ours.named_parameters()}
    theirs_shapes = {name: tuple(p.shape) for name, p in theirs.named_parameters()}
    assert list(ours_shapes.items()) == list(theirs_shapes.items())  # names, order and shapes
    values = np.concatenate([p.numpy().ravel() for p in ours.parameters()])
    assert values.dtype == np.float32
    assert np.abs(values).max() <= 1 / 5 and np.abs(values).max() > 0.19  # U(-1/sqrt(H), ...)
    assert len(ours.all_weights) == 4 and ours.all_weights[1][0] is ours.weight_ih_l0_reverse


def test_repr_matches_pytorch():
    assert repr(LSTM(3, 4, num_layers=2, batch_first=True, dropout=0.5)) == repr(
        torch.nn.LSTM(3, 4, num_layers=2, batch_first=True, dropout=0.5)
    )
    assert repr(GRU(3, 4, bias=False, bidirectional=True)) == repr(
        torch.nn.GRU(3, 4, bias=False, bidirectional=True)
    )
    assert repr(LSTM(3, 4, proj_size=2)) == repr(torch.nn.LSTM(3, 4, proj_size=2))
    assert repr(RNN(3, 4, nonlinearity="relu")) == "RNN(3, 4, nonlinearity='relu')"
    assert repr(GRUCell(3, 4, bias=False)) == repr(torch.nn.GRUCell(3, 4, bias=False))


# ----- cells -----------------------------------------------------------------------------------


CELL_CASES = [
    ("RNNCell", {}, (3, INPUT), True),
    ("RNNCell", {"nonlinearity": "relu"}, (3, INPUT), True),
    ("RNNCell", {"bias": False}, (INPUT,), True),  # unbatched
    ("RNNCell", {}, (2, INPUT), False),
    ("LSTMCell", {}, (3, INPUT), True),
    ("LSTMCell", {}, (3, INPUT), False),
    ("LSTMCell", {"bias": False}, (INPUT,), True),
    ("GRUCell", {}, (3, INPUT), True),
    ("GRUCell", {}, (INPUT,), False),
    ("GRUCell", {"bias": False}, (2, INPUT), True),
]


@pytest.mark.parametrize("kind, kwargs, x_shape, with_states", CELL_CASES)
def test_cells_match_pytorch(kind, kwargs, x_shape, with_states):
    rng = np.random.default_rng(0)
    ours, theirs = _build(CELLS[kind], **kwargs)
    x = rng.standard_normal(x_shape)
    if not with_states:
        _compare(ours, theirs, [x], lambda t: (t[0],))
        return
    state_shape = x_shape[:-1] + (HIDDEN,)
    if kind == "LSTMCell":
        h, c = rng.standard_normal(state_shape), rng.standard_normal(state_shape)
        _compare(ours, theirs, [x, h, c], lambda t: (t[0], (t[1], t[2])))
    else:
        _compare(ours, theirs, [x, rng.standard_normal(state_shape)], lambda t: (t[0], t[1]))


@pytest.mark.parametrize("kind", ["RNNCell", "LSTMCell", "GRUCell"])
def test_cells_read_a_weight_replaced_by_a_plain_tensor(kind):
    """A cell reads its weights from its parameter store; one deleted and assigned again as a
    plain tensor (the fast-weights style) is the one it uses."""
    rng = np.random.default_rng(1)
    ours, theirs = _build(CELLS[kind])
    replacement = rng.standard_normal(tuple(ours.weight_hh.shape))
    del ours.weight_hh
    ours.weight_hh = bai.tensor(replacement)
    with torch.no_grad():
        theirs.weight_hh.copy_(torch.tensor(replacement))
    x, h = rng.standard_normal((3, INPUT)), rng.standard_normal((3, HIDDEN))
    states = (h, h) if kind == "LSTMCell" else h
    ours_out = ours(bai.tensor(x), _nested(bai.tensor, states))
    theirs_out = theirs(torch.tensor(x), _nested(torch.tensor, states))
    for got, expected in zip(_flatten(ours_out), _flatten(theirs_out), strict=True):
        np.testing.assert_allclose(got.numpy(), expected.detach().numpy(), rtol=1e-10)


def _nested(make, states):
    return tuple(make(s) for s in states) if isinstance(states, tuple) else make(states)


@pytest.mark.parametrize("kind", ["rnn_tanh_cell", "rnn_relu_cell", "gru_cell"])
def test_functional_cells_second_derivatives(kind):
    gates = 3 if kind == "gru_cell" else 1
    check_op(
        getattr(F, kind),
        (2, 3),
        (2, 2),
        (gates * 2, 3),
        (gates * 2, 2),
        (gates * 2,),
        (gates * 2,),
        torch_fn=getattr(torch, kind),
        gradgrad=kind != "rnn_relu_cell",  # relu's second derivative is zero (None here)
    )


def test_functional_lstm_cell_second_derivatives():
    check_op(
        lambda x, h, c, *w: F.lstm_cell(x, (h, c), *w),
        (2, 3),
        (2, 2),
        (2, 2),
        (8, 3),
        (8, 2),
        (8,),
        (8,),
        torch_fn=lambda x, h, c, *w: torch.lstm_cell(x, (h, c), *w),
        gradgrad=True,
    )


# ----- whole sequences: finite differences and second derivatives -------------------------------


def _torch_sequence(kind, num_layers=1, bidirectional=False, **kwargs):
    """A torch function of (x, *states, *weights) running a torch layer with those weights."""
    layer = PAIRS[kind][1](2, 2, num_layers=num_layers, bidirectional=bidirectional, **kwargs)
    layer = layer.double()
    names = [name for name, _ in layer.named_parameters()]
    states = 2 if kind == "LSTM" else 1

    def run(x, *rest):
        hx = rest[:states]
        params = dict(zip(names, rest[states:]))
        hx = tuple(hx) if kind == "LSTM" else hx[0]
        output, final = torch.func.functional_call(layer, params, (x, hx))
        return (output, *final) if kind == "LSTM" else (output, final)

    return run, len(names)


def _ours_sequence(kind, num_layers=1, bidirectional=False):
    function = {"LSTM": F.lstm, "GRU": F.gru, "RNN": F.rnn_tanh}[kind]
    states = 2 if kind == "LSTM" else 1
    groups = num_layers * (2 if bidirectional else 1)

    def run(x, *rest):
        hx = rest[:states]
        weights = rest[states:]
        grouped = [list(weights[4 * k : 4 * k + 4]) for k in range(groups)]
        output, final = function(
            x, tuple(hx) if kind == "LSTM" else hx[0], grouped, num_layers, bidirectional
        )
        return (output, *final) if kind == "LSTM" else (output, final)

    return run


@pytest.mark.parametrize(
    "kind, num_layers, bidirectional, gradgrad",
    # Second derivatives of the deep case cost minutes of finite differences; one layer shows
    # that the recurrence differentiates twice.
    [("LSTM", 1, False, True), ("LSTM", 2, True, False), ("GRU", 1, True, False)],
)
def test_sequence_gradcheck_and_second_derivatives(kind, num_layers, bidirectional, gradgrad):
    theirs, count = _torch_sequence(kind, num_layers, bidirectional)
    ours = _ours_sequence(kind, num_layers, bidirectional)
    directions = 2 if bidirectional else 1
    length, batch = (3, 2) if num_layers == 1 else (2, 1)  # finite differences cost per element
    state = (num_layers * directions, batch, 2)
    states = [state, state] if kind == "LSTM" else [state]
    gates = 4 if kind == "LSTM" else 3
    weights = []
    for layer in range(num_layers):
        width = 2 if layer == 0 else 2 * directions
        weights += [(gates * 2, width), (gates * 2, 2), (gates * 2,), (gates * 2,)] * directions
    assert len(weights) == count
    check_op(ours, (length, batch, 2), *states, *weights, torch_fn=theirs, gradgrad=gradgrad)


# ----- dropout between layers -------------------------------------------------------------------


def test_dropout_between_layers_only_in_training():
    ours, theirs = _build(PAIRS["LSTM"], num_layers=3, dropout=0.5)
    x = np.random.default_rng(0).standard_normal((5, 4, INPUT))
    ours.eval()
    theirs.eval()
    _compare(ours, theirs, [x], lambda t: (t[0],))  # eval: dropout is off, exact parity
    evaluated, _ = ours(bai.Tensor(x))
    ours.train()
    bai.manual_seed(0)
    first, _ = ours(bai.Tensor(x))
    bai.manual_seed(0)
    again, _ = ours(bai.Tensor(x))
    second, _ = ours(bai.Tensor(x))
    assert not np.allclose(first.numpy(), evaluated.numpy())
    np.testing.assert_array_equal(first.numpy(), again.numpy())  # seeded: reproducible
    assert not np.allclose(first.numpy(), second.numpy())
    # Dropout acts on the inputs of layers 2 and 3 only: one layer is never dropped.
    single = LSTM(INPUT, HIDDEN, dtype=bai.float64)
    with pytest.warns(UserWarning, match="no effect with num_layers=1"):
        dropped = LSTM(INPUT, HIDDEN, dropout=0.5, dtype=bai.float64)
    dropped.load_state_dict(single.state_dict())
    np.testing.assert_array_equal(
        dropped(bai.Tensor(x))[0].numpy(), single(bai.Tensor(x))[0].numpy()
    )


def test_float32_and_no_grad():
    layer = GRU(INPUT, HIDDEN, num_layers=2)
    x = bai.Tensor(np.random.default_rng(0).standard_normal((3, 2, INPUT)).astype(np.float32))
    with bai.no_grad():
        output, h_n = layer(x)
    assert output.dtype == np.float32 and h_n.dtype == np.float32
    assert not output.requires_grad and tuple(h_n.shape) == (2, 2, HIDDEN)


# ----- errors ------------------------------------------------------------------------------------


def test_wrong_input_sizes_name_the_module_and_shapes():
    layer = LSTM(INPUT, HIDDEN, num_layers=2)
    with pytest.raises(ShapeError, match=r"\[LSTM\] expected input with 3 features.*\(5, 2, 7\)"):
        layer(bai.zeros((5, 2, 7)))
    with pytest.raises(ShapeError, match=r"\[LSTM\] expected a 3-D batched input.*\(5,\)"):
        layer(bai.zeros(5))
    with pytest.raises(ShapeError, match=r"expected h0 of shape \(2, 2, 4\).*got \(1, 2, 4\)"):
        layer(bai.zeros((5, 2, INPUT)), (bai.zeros((1, 2, 4)), bai.zeros((2, 2, 4))))
    with pytest.raises(ShapeError, match=r"expected c0 of shape \(2, 4\) for unbatched"):
        layer(bai.zeros((5, INPUT)), (bai.zeros((2, 4)), bai.zeros((2, 1, 4))))
    with pytest.raises(BuildingAIError, match=r"\[LSTM\] expected hx as a pair \(h0, c0\)"):
        layer(bai.zeros((5, 2, INPUT)), bai.zeros((2, 2, 4)))
    with pytest.raises(ShapeError, match=r"\[GRU\] expected h0 of shape \(2, 3, 4\)") as info:
        GRU(INPUT, HIDDEN, bidirectional=True, batch_first=True)(
            bai.zeros((3, 5, INPUT)), bai.zeros((2, 5, 4))
        )
    assert "(in GRU)" in str(info.value) and "help:" in str(info.value)
    with pytest.raises(DTypeError, match=r"\[RNN\] expected a floating-point input"):
        RNN(INPUT, HIDDEN)(bai.zeros((2, 2, INPUT), dtype=bai.int64))


def test_cell_errors():
    with pytest.raises(ShapeError, match=r"\[LSTMCell\] expected input \(N, 3\).*got \(2, 5\)"):
        LSTMCell(INPUT, HIDDEN)(bai.zeros((2, 5)))
    with pytest.raises(
        ShapeError, match=r"\[GRUCell\] expected state h of shape \(2, 4\).*\(3, 4\)"
    ):
        GRUCell(INPUT, HIDDEN)(bai.zeros((2, INPUT)), bai.zeros((3, 4)))
    with pytest.raises(ShapeError, match=r"\[LSTMCell\] expected state c of shape \(4,\)"):
        LSTMCell(INPUT, HIDDEN)(bai.zeros(INPUT), (bai.zeros(4), bai.zeros((1, 4))))
    with pytest.raises(BuildingAIError, match=r"\[LSTMCell\] expected hx as a pair"):
        LSTMCell(INPUT, HIDDEN)(bai.zeros((2, INPUT)), bai.zeros((2, 4)))
    with pytest.raises(BuildingAIError, match=r"\[lstm_cell\] expected a state of shape"):
        F.lstm_cell(
            bai.zeros((2, 3)),
            (bai.zeros((2, 4)), bai.zeros((2, 5))),
            *[bai.zeros(s) for s in [(16, 3), (16, 4)]],
        )


def test_constructor_errors():
    with pytest.raises(ArgumentError, match=r"\[RNN\] unknown nonlinearity 'gelu'"):
        RNN(3, 4, nonlinearity="gelu")
    with pytest.raises(ArgumentError, match=r"\[RNNCell\] unknown nonlinearity"):
        RNNCell(3, 4, nonlinearity="sigmoid")
    with pytest.raises(ArgumentError, match=r"\[LSTM\] dropout must be a number in \[0, 1\]"):
        LSTM(3, 4, num_layers=2, dropout=1.5)
    with pytest.raises(ArgumentError, match=r"\[GRU\] hidden_size must be a positive integer"):
        GRU(3, 0)
    with pytest.raises(ArgumentError, match=r"\[LSTM\] num_layers must be a positive integer"):
        LSTM(3, 4, num_layers=0)
    with pytest.raises(ArgumentError, match=r"proj_size \(4\) has to be smaller than hidden_size"):
        LSTM(3, 4, proj_size=4)
    with pytest.raises(ArgumentError, match=r"\[LSTM\] proj_size must be a non-negative"):
        LSTM(3, 4, proj_size=-1)
    with pytest.raises(ArgumentError, match=r"\[LSTMCell\] input_size must be a positive"):
        LSTMCell(0, 4)
    with pytest.raises(BuildingAIError, match=r"\[lstm\] expected 2 weight groups"):
        F.lstm(bai.zeros((2, 1, 3)), None, [[bai.zeros((16, 3)), bai.zeros((16, 4))]], 2)


def test_no_warning_without_dropout():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        LSTM(3, 4)
        LSTM(3, 4, num_layers=2, dropout=0.2)


def _ops_of_a_training_step(layer) -> list[str]:
    """The names of the ops dispatched by the layer's forward over 50 steps and its backward."""
    from buildingai.autograd.dispatch import DispatchMode, dispatch_mode

    class Names(DispatchMode):
        def __init__(self):
            self.names = []

        def before_op(self, op, inputs, attrs):
            self.names.append(op.name)

    x = bai.Tensor(np.random.default_rng(0).standard_normal((50, 2, 3)), requires_grad=True)
    recorder = Names()
    with dispatch_mode(recorder):
        out, _ = layer(x)
        bai.grad(out.sum(), [x, *layer.parameters()])
    return recorder.names


@pytest.mark.parametrize("nonlinearity", ["tanh", "relu"])
def test_an_elman_layer_runs_its_time_loop_as_one_op_each_way(nonlinearity):
    names = _ops_of_a_training_step(bai.nn.RNN(3, 4, nonlinearity=nonlinearity))
    assert names.count("rnn_recurrence") == 1
    assert names.count("rnn_recurrence_grad") == 1
    assert len(names) < 40  # not ops per step: 50 steps


def test_a_gru_layer_runs_its_time_loop_as_one_op_each_way():
    names = _ops_of_a_training_step(bai.nn.GRU(3, 4))
    assert names.count("gru_recurrence") == 1
    assert names.count("gru_recurrence_grad") == 1
    assert len(names) < 80  # not ops per step: 50 steps

"""Cases of the nn primitives: softmax, dropout, embedding, losses, normalization, the
special functions' gradients and the LSTM recurrence."""

from __future__ import annotations

from collections.abc import Callable

import buildingai.nn.functional as F
from buildingai.nn.functional.rnn_fused import lstm_recurrence

from .base import (
    NO_ONNX_MAPPING,
    TF,
    Draw,
    Sample,
    backward_of,
    case,
    tested_through,
    torch,
    trailing_sizes,
)

# ----- nn primitives ------------------------------------------------------------------------------


def _softmax(name: str, method: str) -> Callable:
    def make(d: Draw) -> Sample:
        x = d.floats("n", "m", *d.sizes(0, 1, 2, 4), low=-5.0, high=5.0)
        axis = d.choice((-1, 0, 1))
        return d.capture(name, lambda: getattr(x, method)(axis))

    return make


case(
    "softmax",
    _softmax("softmax", "softmax"),
    torch=lambda x, *, axis: torch.softmax(x, axis),
    gradgrad=True,
)
case(
    "log_softmax",
    _softmax("log_softmax", "log_softmax"),
    torch=lambda x, *, axis: torch.log_softmax(x, axis),
    gradgrad=True,
)


def _row_gradient(forward: str):
    """Samples of ``<forward>_grad``: the op the backward of ``forward`` along an axis runs."""

    def build(d: Draw) -> Sample:
        x = d.floats("n", *d.sizes(1, 2, 2, 4), grad=True)
        axis = d.choice((-1, 0))
        return d.capture(
            f"{forward}_grad",
            lambda: backward_of(lambda t: getattr(t, forward)(axis), x),
            symbols={(0, 0): "n", (1, 0): "n"},
        )

    return build


case("softmax_grad", _row_gradient("softmax"), gradcheck=True, onnx=NO_ONNX_MAPPING)
case("log_softmax_grad", _row_gradient("log_softmax"), gradcheck=True, onnx=NO_ONNX_MAPPING)


def _dropout(d: Draw) -> Sample:
    x = d.floats("n", *trailing_sizes(d, 1, 2))
    mask = d.bools(*d.choice((d.dims_of(x)[1:], d.dims_of(x))))
    scale = d.choice((2.0, 1.25))
    return d.call("dropout", x, mask, scale=scale)


case(
    "dropout",
    _dropout,
    torch=lambda x, mask, *, scale: torch.where(mask, x * scale, 0.0),
    gradgrad=True,
)


def _embedding(d: Draw) -> Sample:
    rows, dim = d.size(3, 6), d.size(1, 4)
    indices = d.ints("n", *trailing_sizes(d, 0, 1), high=rows)
    weight = d.floats(rows, dim)
    padding_idx = d.choice((None, 0))
    return d.capture("embedding", lambda: F.embedding(indices, weight, padding_idx=padding_idx))


case(
    "embedding",
    _embedding,
    torch=lambda t, w, *, padding_idx: TF.embedding(t, w, padding_idx=padding_idx),
    gradgrad=True,
)


def _embedding_grad(d: Draw) -> Sample:
    rows, dim = d.size(3, 6), d.size(1, 4)
    indices = d.ints("n", d.size(1, 3), high=rows)
    weight = d.floats(rows, dim, grad=True)
    padding_idx = d.choice((None, 1))
    return d.capture(
        "embedding_grad",
        lambda: backward_of(lambda w: F.embedding(indices, w, padding_idx=padding_idx), weight),
        symbols={(0, 0): "n", (1, 0): "n"},
    )


case("embedding_grad", _embedding_grad, gradcheck=True, onnx=NO_ONNX_MAPPING)


def _binary_cross_entropy(d: Draw) -> Sample:
    x = d.floats("n", *trailing_sizes(d), low=0.05, high=0.95)
    t = d.floats(*d.dims_of(x), low=0.0, high=1.0)
    return d.capture("binary_cross_entropy", lambda: F.binary_cross_entropy(x, t, reduction="none"))


case(
    "binary_cross_entropy",
    _binary_cross_entropy,
    torch=lambda x, t: TF.binary_cross_entropy(x, t, reduction="none"),
    grad_inputs=(0,),  # PyTorch gives no derivative in the target
    gradgrad=True,
    onnx_domain={0: (0.0, 1.0), 1: (0.0, 1.0)},
)


def _cross_entropy(d: Draw) -> Sample:
    classes = d.size(2, 5)
    spatial = trailing_sizes(d, 0, 1)
    x = d.floats("n", classes, *spatial)
    target = d.ints("n", *spatial, high=classes)
    weight = d.choice((None, d.floats(classes, low=0.5, high=1.5)))
    ignore_index = d.choice((-100, 1))
    reduction = d.choice(("mean", "sum", "none"))
    return d.capture(
        "cross_entropy",
        lambda: F.cross_entropy(
            x, target, weight=weight, ignore_index=ignore_index, reduction=reduction
        ),
    )


def _torch_cross_entropy(x, target, weight=None, *, axis, ignore_index, reduction):
    assert axis == 1
    return TF.cross_entropy(
        x, target, weight=weight, ignore_index=ignore_index, reduction=reduction
    )


case(
    "cross_entropy",
    _cross_entropy,
    torch=_torch_cross_entropy,
    grad_inputs=(0,),  # the class weights are constants
    gradgrad=True,
)


def _cross_entropy_grad(d: Draw) -> Sample:
    classes = d.size(2, 5)
    x = d.floats("n", classes, grad=True)
    target = d.ints("n", high=classes)
    reduction = d.choice(("mean", "none"))
    return d.capture(
        "cross_entropy_grad",
        lambda: backward_of(lambda t: F.cross_entropy(t, target, reduction=reduction), x),
        symbols={(1, 0): "n", (2, 0): "n", (3, 0): "n"}
        | ({(0, 0): "n"} if reduction == "none" else {}),
    )


case(
    "cross_entropy_grad",
    _cross_entropy_grad,
    no_grad=tested_through("cross_entropy"),
    onnx=NO_ONNX_MAPPING,
)


def _nll_loss(d: Draw) -> Sample:
    classes = d.size(2, 5)
    spatial = trailing_sizes(d, 0, 1)
    x = d.floats("n", classes, *spatial, low=-4.0, high=-0.1)  # log-probabilities
    target = d.ints("n", *spatial, high=classes)
    weight = d.choice((None, d.floats(classes, low=0.5, high=1.5)))
    ignore_index = d.choice((-100, 1))
    reduction = d.choice(("mean", "sum", "none"))
    return d.capture(
        "nll_loss",
        lambda: F.nll_loss(
            x, target, weight=weight, ignore_index=ignore_index, reduction=reduction
        ),
    )


def _torch_nll_loss(x, target, weight=None, *, axis, ignore_index, reduction):
    assert axis == 1
    return TF.nll_loss(x, target, weight=weight, ignore_index=ignore_index, reduction=reduction)


case(
    "nll_loss",
    _nll_loss,
    torch=_torch_nll_loss,
    grad_inputs=(0,),  # the class weights are constants
)


def _nll_loss_grad(d: Draw) -> Sample:
    classes = d.size(2, 5)
    x = d.floats("n", classes, low=-4.0, high=-0.1, grad=True)
    target = d.ints("n", high=classes)
    reduction = d.choice(("mean", "none"))
    return d.capture(
        "nll_loss_grad",
        lambda: backward_of(lambda t: F.nll_loss(t, target, reduction=reduction), x),
        symbols={(1, 0): "n", (2, 0): "n"} | ({(0, 0): "n"} if reduction == "none" else {}),
    )


case(
    "nll_loss_grad",
    _nll_loss_grad,
    gradcheck=True,
    grad_inputs=(0,),  # linear in the upstream gradient; x is read for its shape only
    onnx=NO_ONNX_MAPPING,
)


def _log_softmax_nll_grad(d: Draw) -> Sample:
    classes = d.size(2, 5)
    log_probs = d.floats("n", classes, low=-4.0, high=-0.1)
    reduced = d.choice((True, False))
    grad = d.floats() if reduced else d.floats("n")
    scale = d.floats("n", low=0.0, high=1.0)  # 0 for an ignored sample
    index = d.rng.integers(0, classes, size=(d.n, 1))
    return d.call(
        "log_softmax_nll_grad",
        grad,
        log_probs,
        scale,
        index=index,
        axis=1,
        symbols={(1, 0): "n", (2, 0): "n"} | ({} if reduced else {(0, 0): "n"}),
    )


def _torch_log_softmax_nll_grad(grad, log_probs, scale, *, index, axis):
    """nll_loss_grad's scatter of -(grad * scale), then log_softmax_grad's rule, in PyTorch."""
    at_target = -(grad * scale)
    scattered = torch.zeros_like(log_probs).scatter(
        axis, torch.as_tensor(index), at_target.unsqueeze(axis)
    )
    return scattered - log_probs.exp() * scattered.sum(axis, keepdim=True)


case(
    "log_softmax_nll_grad",
    _log_softmax_nll_grad,
    torch=_torch_log_softmax_nll_grad,
    grad_inputs=(0, 1),  # scale is a constant, as nll_loss_grad's
    onnx=NO_ONNX_MAPPING,
    covered_by=("tests/graph/test_loss_gradient.py",),
)


def _standardize(d: Draw) -> Sample:
    x = d.floats("n", *d.sizes(1, 2, 2, 4))
    axes = d.choice(((-1,), (1, -1) if x.ndim > 2 else (-1,), (0,)))
    return d.capture("standardize", lambda: F.standardize(x, axes, eps=1e-5))


def _torch_standardize(x, *, axes, eps):
    mean = x.mean(dim=axes, keepdim=True)
    variance = x.var(dim=axes, correction=0, keepdim=True)
    return (x - mean) / torch.sqrt(variance + eps)


case(
    "standardize",
    _standardize,
    torch=_torch_standardize,
    gradgrad=True,
)


def _standardize_grad(d: Draw) -> Sample:
    x = d.floats("n", d.size(2, 4), grad=True)
    return d.capture(
        "standardize_grad",
        lambda: backward_of(lambda t: F.standardize(t, (-1,)), x),
        symbols={(i, 0): "n" for i in range(4)},
    )


case(
    "standardize_grad",
    _standardize_grad,
    no_grad=tested_through("standardize"),
    onnx=NO_ONNX_MAPPING,
)


def _layer_norm(d: Draw) -> Sample:
    normalized = d.sizes(1, 2, 2, 4)
    x = d.floats("n", *normalized)
    weight = d.floats(*normalized)
    bias = d.choice((None, d.floats(*normalized)))
    return d.capture("layer_norm", lambda: F.layer_norm(x, normalized, weight, bias))


case(
    "layer_norm",
    _layer_norm,
    torch=lambda x, w, b=None, *, axes, eps: TF.layer_norm(x, w.shape, w, b, eps),
    gradgrad=True,
)


def _layer_norm_grads(name: str) -> Callable:
    def make(d: Draw) -> Sample:
        normalized = d.sizes(1, 2, 2, 4)
        x = d.floats("n", *normalized, grad=True)
        weight = d.floats(*normalized, grad=True)
        positions = {"layer_norm_input_grad": (0, 1, 3, 4), "layer_norm_weight_grad": (0, 1, 2, 3)}
        return d.capture(
            name,
            lambda: backward_of(lambda a, w: F.layer_norm(a, normalized, w), x, weight),
            symbols={(i, 0): "n" for i in positions[name]},
        )

    return make


# xhat and rstd are the forward's values, which the backward recomputes from x
for _name in ("layer_norm_input_grad", "layer_norm_weight_grad"):
    case(
        _name,
        _layer_norm_grads(_name),
        no_grad=tested_through("layer_norm"),
        onnx=NO_ONNX_MAPPING,
    )


# ----- special functions' gradients ---------------------------------------------------------------


def _special_grad(name: str, forward: Callable) -> Callable:
    def make(d: Draw) -> Sample:
        x = d.floats("n", *trailing_sizes(d), grad=True)
        symbols = {(0, 0): "n", (1, 0): "n", (2, 0): "n"}
        return d.capture(name, lambda: backward_of(forward, x), symbols=symbols)

    return make


# the cache input is a constant function of x (the forward's gate): only grad varies freely
case(
    "gelu_grad",
    _special_grad("gelu_grad", lambda t: t.gelu(approximate="tanh")),
    gradcheck=True,
    grad_inputs=(0,),
    onnx=NO_ONNX_MAPPING,
)
case(
    "silu_grad",
    _special_grad("silu_grad", lambda t: t.silu()),
    gradcheck=True,
    grad_inputs=(0,),
    onnx=NO_ONNX_MAPPING,
)


def _output_grad(name: str, forward: Callable) -> Callable:
    """Samples of ``name``, the gradient record of ``forward`` that reads its output."""

    def make(d: Draw) -> Sample:
        x = d.floats("n", *trailing_sizes(d), grad=True)
        return d.capture(name, lambda: backward_of(forward, x), symbols={(0, 0): "n", (1, 0): "n"})

    return make


for _name, _forward in (("sigmoid_grad", lambda t: t.sigmoid()), ("tanh_grad", lambda t: t.tanh())):
    case(_name, _output_grad(_name, _forward), gradcheck=True, onnx=NO_ONNX_MAPPING)
case(
    "softplus_grad",
    _special_grad("softplus_grad", lambda t: t.softplus(beta=1.5, threshold=2.0)),
    gradcheck=True,
    onnx=NO_ONNX_MAPPING,
)


# ----- recurrence ---------------------------------------------------------------------------------


def _lstm_recurrence(d: Draw) -> Sample:
    length, hidden = d.size(1, 3), d.size(1, 3)
    gates_x = d.floats(length, "n", 4 * hidden, low=-1.0, high=1.0)
    h0 = d.floats("n", hidden, low=-1.0, high=1.0)
    c0 = d.floats("n", hidden, low=-1.0, high=1.0)
    w_hh = d.floats(4 * hidden, hidden, low=-1.0, high=1.0)
    bias = d.choice(((), (d.floats(4 * hidden, low=-1.0, high=1.0),)))
    reverse = d.choice((False, True))
    return d.call("lstm_recurrence", gates_x, h0, c0, w_hh, *bias, reverse=reverse)


def _torch_lstm_recurrence(gates_x, h0, c0, w_hh, b_hh=None, *, reverse):
    size = h0.shape[-1]
    h, c = h0, c0
    steps = range(gates_x.shape[0] - 1, -1, -1) if reverse else range(gates_x.shape[0])
    out = [None] * gates_x.shape[0]
    for t in steps:
        pre = gates_x[t] + h @ w_hh.T + (0 if b_hh is None else b_hh)
        i, f = torch.sigmoid(pre[:, :size]), torch.sigmoid(pre[:, size : 2 * size])
        g, o = torch.tanh(pre[:, 2 * size : 3 * size]), torch.sigmoid(pre[:, 3 * size :])
        c = f * c + i * g
        h = o * torch.tanh(c)
        out[t] = torch.cat([h, c], dim=-1)
    return torch.stack(out)


case(
    "lstm_recurrence",
    _lstm_recurrence,
    torch=_torch_lstm_recurrence,
    gradgrad=True,
)


def _lstm_activations(d: Draw) -> Sample:
    hidden = d.size(1, 3)
    gates_x = d.floats(d.size(1, 3), "n", 4 * hidden, low=-1.0, high=1.0, grad=True)
    h0 = d.floats("n", hidden, low=-1.0, high=1.0)
    c0 = d.floats("n", hidden, low=-1.0, high=1.0)
    w_hh = d.floats(4 * hidden, hidden, low=-1.0, high=1.0, grad=True)
    return d.capture(
        "lstm_activations",
        lambda: backward_of(
            lambda g, w: lstm_recurrence(g, h0, c0, w, reverse=False), gates_x, w_hh
        ),
        symbols={(0, 1): "n", (1, 1): "n", (2, 1): "n"},
    )


def _lstm_recurrence_grad(d: Draw) -> Sample:
    # any values: the op is a smooth function of all of them, whether or not acts and states
    # came from one forward
    length, hidden = d.size(1, 3), d.size(1, 3)
    grad = d.floats(length, "n", 2 * hidden)
    acts = d.floats(length, "n", 4 * hidden, low=0.05, high=0.95)
    states = d.floats(length, "n", 2 * hidden, low=-1.0, high=1.0)
    c0 = d.floats("n", hidden, low=-1.0, high=1.0)
    w_hh = d.floats(4 * hidden, hidden, low=-1.0, high=1.0)
    reverse = d.choice((False, True))
    return d.call("lstm_recurrence_grad", grad, acts, states, c0, w_hh, reverse=reverse)


case(
    "lstm_recurrence_grad",
    _lstm_recurrence_grad,
    gradcheck=True,
    gradgrad=True,
    onnx=NO_ONNX_MAPPING,
)


def _rnn_recurrence(d: Draw) -> Sample:
    length, hidden = d.size(1, 3), d.size(1, 3)
    gates_x = d.floats(length, "n", hidden, low=-1.0, high=1.0)
    h0 = d.floats("n", hidden, low=-1.0, high=1.0)
    w_hh = d.floats(hidden, hidden, low=-1.0, high=1.0)
    bias = d.choice(((), (d.floats(hidden, low=-1.0, high=1.0),)))
    attrs = {"nonlinearity": d.choice(("tanh", "relu")), "reverse": d.choice((False, True))}
    return d.call("rnn_recurrence", gates_x, h0, w_hh, *bias, **attrs)


def _torch_rnn_recurrence(gates_x, h0, w_hh, b_hh=None, *, nonlinearity, reverse):
    act = torch.tanh if nonlinearity == "tanh" else torch.relu
    h, out = h0, [None] * gates_x.shape[0]
    steps = range(gates_x.shape[0] - 1, -1, -1) if reverse else range(gates_x.shape[0])
    for t in steps:
        out[t] = h = act(gates_x[t] + h @ w_hh.T + (0 if b_hh is None else b_hh))
    return torch.stack(out)


case("rnn_recurrence", _rnn_recurrence, torch=_torch_rnn_recurrence, gradgrad=True)


def _rnn_recurrence_grad(d: Draw) -> Sample:
    # any values: a smooth function of them away from relu's kink (states kept off 0)
    length, hidden = d.size(1, 3), d.size(1, 3)
    grad = d.floats(length, "n", hidden)
    states = d.floats(length, "n", hidden, low=0.1, high=0.9)
    w_hh = d.floats(hidden, hidden, low=-1.0, high=1.0)
    attrs = {"nonlinearity": d.choice(("tanh", "relu")), "reverse": d.choice((False, True))}
    return d.call("rnn_recurrence_grad", grad, states, w_hh, **attrs)


case(
    "rnn_recurrence_grad",
    _rnn_recurrence_grad,
    gradcheck=True,
    gradgrad=True,
    onnx=NO_ONNX_MAPPING,
)


def _gru_recurrence(d: Draw) -> Sample:
    length, hidden = d.size(1, 3), d.size(1, 3)
    gates_x = d.floats(length, "n", 3 * hidden, low=-1.0, high=1.0)
    h0 = d.floats("n", hidden, low=-1.0, high=1.0)
    w_hh = d.floats(3 * hidden, hidden, low=-1.0, high=1.0)
    bias = d.choice(((), (d.floats(3 * hidden, low=-1.0, high=1.0),)))
    reverse = d.choice((False, True))
    return d.call("gru_recurrence", gates_x, h0, w_hh, *bias, reverse=reverse)


def _torch_gru_recurrence(gates_x, h0, w_hh, b_hh=None, *, reverse):
    h, out = h0, [None] * gates_x.shape[0]
    steps = range(gates_x.shape[0] - 1, -1, -1) if reverse else range(gates_x.shape[0])
    for t in steps:
        gates_h = h @ w_hh.T + (0 if b_hh is None else b_hh)
        r, z, _ = torch.sigmoid(gates_x[t] + gates_h).chunk(3, dim=-1)
        n = torch.tanh(gates_x[t].chunk(3, dim=-1)[2] + r * gates_h.chunk(3, dim=-1)[2])
        out[t] = h = (1 - z) * n + z * h
    return torch.stack(out)


case("gru_recurrence", _gru_recurrence, torch=_torch_gru_recurrence, gradgrad=True)


def _gru_recurrence_grad(d: Draw) -> Sample:
    # any values: the op is a smooth function of all of them
    length, hidden = d.size(1, 3), d.size(1, 3)
    grad = d.floats(length, "n", hidden)
    coefficients = d.floats(length, "n", 4 * hidden, low=-1.0, high=1.0)
    w_hh = d.floats(3 * hidden, hidden, low=-1.0, high=1.0)
    reverse = d.choice((False, True))
    return d.call("gru_recurrence_grad", grad, coefficients, w_hh, reverse=reverse)


case(
    "gru_recurrence_grad",
    _gru_recurrence_grad,
    gradcheck=True,
    gradgrad=True,
    onnx=NO_ONNX_MAPPING,
)


case(
    "lstm_activations",
    _lstm_activations,
    no_grad=tested_through("lstm_recurrence"),  # its first input is the forward's values
    onnx=NO_ONNX_MAPPING,
)

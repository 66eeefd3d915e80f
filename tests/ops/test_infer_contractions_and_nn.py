"""``infer`` and ``cost`` of the contraction, convolution, pooling, neural-network, loss,
normalisation and recurrence records: infer agrees with forward (shape, dtype, device) on
concrete inputs, stays symbolic where ``DimExpr`` can say the size (else raises
``SymbolicSizeError`` naming the op), and contractions count 2 FLOPs per multiply-add."""

from __future__ import annotations

import numpy as np
import pytest

import buildingai as bai
from buildingai.ops import conv, layer_norm, linalg, loss, nn, norm, pool, rnn
from buildingai.ops.abstract import DimExpr, SymbolicSizeError, ValueSpec, spec_of

RNG = np.random.default_rng(0)
F32, F64 = np.float32, np.float64

# Sizes that the symbolic tests replace by symbols: a batch of 7 and a height of 11 (no other
# dimension of a case may take these values).
BATCH, HEIGHT = 7, 11
SYMBOLS = {BATCH: "n", HEIGHT: "h"}


def floats(*shape, dtype=F32, low=-1.0, high=1.0):
    return bai.tensor(RNG.uniform(low, high, size=shape).astype(dtype))


def ints(*shape, high=5):
    return bai.tensor(RNG.integers(0, high, size=shape).astype(np.int64))


def bools(*shape):
    return bai.tensor(RNG.random(shape) < 0.5)


CONV = {"stride": (1, 1), "padding": (1, 1), "dilation": (1, 1), "groups": 1}
CONV_STRIDED = {"stride": (2, 2), "padding": (1, 0), "dilation": (1, 2), "groups": 2}
POOL = {"kernel": (2, 2), "stride": (2, 2), "padding": (0, 0), "dilation": (1, 1)}
POOL_SLIDING = {"kernel": (3, 3), "stride": (1, 1), "padding": (1, 1), "dilation": (1, 1)}


def _pool_choice(x, **geometry):
    return (x, pool.MAX_POOL2D(x, ceil_mode=False, **geometry)), geometry


def _cross_entropy_grad(reduced: bool):
    """Inputs of cross_entropy_grad: the gradient of a reduced loss is 0-d, of per-sample
    losses (BATCH,)."""
    x, target = floats(BATCH, 5, dtype=F64), ints(BATCH)
    scale = bai.tensor(np.full(BATCH, 0.5))
    probs = bai.tensor(np.full((BATCH, 5), 0.2))
    index = target.numpy().reshape(BATCH, 1)
    grad = bai.tensor(np.float64(1.0)) if reduced else floats(BATCH, dtype=F64)
    return (grad, x, probs, scale), {
        "index": index,
        "axis": 1,
    }


def _nll_loss_grad(reduced: bool):
    """Inputs of nll_loss_grad: the gradient of a reduced loss is 0-d, of per-sample losses
    (BATCH,)."""
    x, target = floats(BATCH, 5, dtype=F64), ints(BATCH)
    scale = bai.tensor(np.full(BATCH, 0.5))
    index = target.numpy().reshape(BATCH, 1)
    grad = bai.tensor(np.float64(1.0)) if reduced else floats(BATCH, dtype=F64)
    return (grad, x, scale), {"index": index, "axis": 1}


# name -> (op, inputs, attrs, whether symbolic sizes stay symbolic)
CASES = {
    "matmul": (linalg.MATMUL, (floats(BATCH, 3, 4), floats(4, 5)), {}, True),
    "matmul_batched": (linalg.MATMUL, (floats(2, 1, 3, 4), floats(BATCH, 4, 6)), {}, True),
    "matmul_transposed": (
        linalg.MATMUL,
        (floats(4, BATCH, dtype=F64), floats(5, 4)),
        {"transpose_a": True, "transpose_b": True},
        True,
    ),
    "linear": (linalg.LINEAR, (floats(BATCH, 3, 4), floats(5, 4), floats(5)), {}, True),
    "linear_relu": (
        linalg.LINEAR_RELU,
        (floats(BATCH, 3, 4), floats(5, 4), floats(5)),
        {},
        True,
    ),
    "linear_vector": (linalg.LINEAR, (floats(4), floats(BATCH, 4, dtype=F64)), {}, True),
    "einsum": (
        linalg.EINSUM,
        (floats(BATCH, 3, 4), floats(BATCH, 4, 5)),
        {"equation": "bij,bjk->bik"},
        True,
    ),
    "einsum_sum": (linalg.EINSUM, (floats(BATCH, 3),), {"equation": "ij->j"}, True),
    "conv2d": (
        conv.CONV2D,
        (floats(BATCH, 3, HEIGHT, 9), floats(4, 3, 3, 3), floats(4)),
        CONV,
        True,
    ),
    "conv2d_relu": (
        conv.CONV2D_RELU,
        (floats(BATCH, 3, HEIGHT, 9), floats(4, 3, 3, 3), floats(4)),
        CONV,
        True,
    ),
    "conv2d_strided": (
        conv.CONV2D,
        (floats(BATCH, 4, HEIGHT, 9), floats(6, 2, 3, 2)),
        CONV_STRIDED,
        False,  # (h - 1) // 2 depends on the parity of h
    ),
    "conv2d_input_grad": (
        conv.CONV2D_INPUT_GRAD,
        (floats(BATCH, 6, 6, 4), floats(6, 2, 3, 2)),
        {"input_size": (12, 9), **CONV_STRIDED},
        True,
    ),
    "conv2d_weight_grad": (
        conv.CONV2D_WEIGHT_GRAD,
        (floats(BATCH, 3, HEIGHT, 9), floats(BATCH, 4, HEIGHT, 9)),
        {"weight_size": (3, 3), **CONV},
        True,
    ),
    "max_pool2d": (
        pool.MAX_POOL2D,
        (floats(BATCH, 3, 12, 10),),
        {**POOL, "ceil_mode": False},
        True,
    ),
    "max_pool2d_sliding_ceil": (
        pool.MAX_POOL2D,
        (floats(BATCH, 3, HEIGHT, 10),),
        {**POOL_SLIDING, "ceil_mode": True},
        True,  # stride 1: ceil and floor agree, and the last-window test does not depend on h
    ),
    "max_pool2d_strided_ceil": (
        pool.MAX_POOL2D,
        (floats(BATCH, 3, HEIGHT, 10),),
        {**POOL, "ceil_mode": True},
        False,
    ),
    "max_pool2d_choice": (
        pool.MAX_POOL2D_CHOICE,
        *_pool_choice(floats(BATCH, 3, 12, 10), **POOL),
        True,
    ),
    "max_pool2d_scatter": (
        pool.MAX_POOL2D_SCATTER,
        (floats(BATCH, 3, 6, 5), bai.tensor(np.zeros((BATCH, 3, 6, 5), np.int8))),
        {"input_size": (12, 10), **POOL},
        True,
    ),
    "max_pool2d_gather": (
        pool.MAX_POOL2D_GATHER,
        (floats(BATCH, 3, 12, 10), bai.tensor(np.ones((BATCH, 3, 6, 5), np.int8))),
        POOL,
        True,
    ),
    "softmax": (nn.SOFTMAX, (floats(BATCH, 5),), {"axis": 1}, True),
    "softmax_grad": (
        nn.SOFTMAX_GRAD,
        (floats(BATCH, 5, dtype=F64), floats(BATCH, 5)),
        {"axis": 1},
        True,
    ),
    "log_softmax": (nn.LOG_SOFTMAX, (floats(3, BATCH, dtype=F64),), {"axis": 0}, True),
    "log_softmax_grad": (
        nn.LOG_SOFTMAX_GRAD,
        (floats(BATCH, 5, dtype=F64), floats(BATCH, 5)),
        {"axis": 1},
        True,
    ),
    "dropout": (nn.DROPOUT, (floats(BATCH, 4), bools(BATCH, 1)), {"scale": 2.0}, True),
    "embedding": (nn.EMBEDDING, (ints(BATCH, 3), floats(6, 4)), {"padding_idx": None}, True),
    "embedding_grad": (
        nn.EMBEDDING_GRAD,
        (floats(BATCH, 3, 4, dtype=F64), ints(BATCH, 3)),
        {"num_embeddings": 6, "padding_idx": 0},
        True,
    ),
    "binary_cross_entropy": (
        loss.BINARY_CROSS_ENTROPY,
        (floats(BATCH, 3, low=0.1, high=0.9), floats(BATCH, 3, dtype=F64, low=0, high=1)),
        {},
        True,
    ),
    "binary_cross_entropy_bool_targets": (  # (t - 1) promotes bool targets to int64
        loss.BINARY_CROSS_ENTROPY,
        (floats(BATCH, 3, low=0.1, high=0.9), bools(BATCH, 3)),
        {},
        True,
    ),
    "cross_entropy_none": (
        loss.CROSS_ENTROPY,
        (floats(BATCH, 5, 3), ints(BATCH, 3)),
        {"axis": 1, "ignore_index": -100, "reduction": "none"},
        True,
    ),
    "cross_entropy_mean": (
        loss.CROSS_ENTROPY,
        (floats(BATCH, 5, dtype=F64), ints(BATCH), floats(5, dtype=F64, low=0.5)),
        {"axis": 1, "ignore_index": 2, "reduction": "mean"},
        True,
    ),
    "cross_entropy_grad": (loss.CROSS_ENTROPY_GRAD, *_cross_entropy_grad(reduced=True), True),
    "cross_entropy_grad_none": (
        loss.CROSS_ENTROPY_GRAD,
        *_cross_entropy_grad(reduced=False),
        True,
    ),
    "nll_loss_none": (
        loss.NLL_LOSS,
        (floats(BATCH, 5, 3), ints(BATCH, 3)),
        {"axis": 1, "ignore_index": -100, "reduction": "none"},
        True,
    ),
    "nll_loss_mean": (
        loss.NLL_LOSS,
        (floats(BATCH, 5, dtype=F64), ints(BATCH), floats(5, dtype=F64, low=0.5)),
        {"axis": 1, "ignore_index": 2, "reduction": "mean"},
        True,
    ),
    "nll_loss_grad": (loss.NLL_LOSS_GRAD, *_nll_loss_grad(reduced=True), True),
    "nll_loss_grad_none": (loss.NLL_LOSS_GRAD, *_nll_loss_grad(reduced=False), True),
    "standardize": (norm.STANDARDIZE, (floats(BATCH, 4, 5),), {"axes": (1, 2), "eps": 1e-5}, True),
    "standardize_grad": (
        norm.STANDARDIZE_GRAD,
        (floats(BATCH, 4), floats(BATCH, 4), floats(BATCH, 4), floats(BATCH, 1)),
        {"axes": (1,), "eps": 1e-5},
        True,
    ),
    "layer_norm": (
        layer_norm.LAYER_NORM,
        (floats(BATCH, 3, 4), floats(4, dtype=F64), floats(4, dtype=F64)),
        {"axes": (2,), "eps": 1e-5},
        True,
    ),
    "layer_norm_input_grad": (
        layer_norm.LAYER_NORM_INPUT_GRAD,
        (
            floats(BATCH, 3, 4),
            floats(BATCH, 3, 4),
            floats(4),
            floats(BATCH, 3, 4),
            floats(BATCH, 3, 1),
        ),
        {"axes": (2,), "eps": 1e-5},
        True,
    ),
    "layer_norm_weight_grad": (
        layer_norm.LAYER_NORM_WEIGHT_GRAD,
        (
            floats(BATCH, 3, 4, dtype=F64),
            floats(BATCH, 3, 4),
            floats(BATCH, 3, 4),
            floats(BATCH, 1, 1),
        ),
        {"axes": (1, 2), "eps": 1e-5},
        True,
    ),
    "lstm_recurrence": (
        rnn.LSTM_RECURRENCE,
        (floats(3, BATCH, 8), floats(BATCH, 2), floats(BATCH, 2), floats(8, 2), floats(8)),
        {"reverse": False},
        True,
    ),
    "lstm_activations": (
        rnn.LSTM_ACTIVATIONS,
        (floats(3, BATCH, 8), floats(3, BATCH, 8), floats(3, BATCH, 2), floats(8, 2), floats(8)),
        {},
        True,
    ),
    "lstm_recurrence_grad": (
        rnn.LSTM_RECURRENCE_GRAD,
        (
            floats(3, BATCH, 4),
            floats(3, BATCH, 8),
            floats(3, BATCH, 4),
            floats(BATCH, 2),
            floats(8, 2),
        ),
        {"reverse": False},
        True,
    ),
}


def _specs(inputs):
    return [spec_of(value) for value in inputs]


def _symbolic(spec):
    if not isinstance(spec, ValueSpec):
        return spec
    shape = tuple(DimExpr((SYMBOLS[d],)) if d in SYMBOLS else d for d in spec.shape)
    return spec.with_shape(shape)


def _evaluate(spec: ValueSpec) -> ValueSpec:
    sizes = {symbol: size for size, symbol in SYMBOLS.items()}
    return spec.with_shape(
        tuple(d.evaluate(sizes) if isinstance(d, DimExpr) else d for d in spec.shape)
    )


@pytest.mark.parametrize("name", sorted(CASES))
def test_infer_agrees_with_forward(name):
    op, inputs, attrs, _ = CASES[name]
    out = op(*inputs, **attrs)
    assert op.infer(*_specs(inputs), **attrs) == spec_of(out)


@pytest.mark.parametrize("name", sorted(CASES))
def test_infer_on_symbolic_sizes(name):
    op, inputs, attrs, stays_symbolic = CASES[name]
    specs = [_symbolic(spec) for spec in _specs(inputs)]
    if not stays_symbolic:
        with pytest.raises(SymbolicSizeError, match=rf"\[{op.name}\]"):
            op.infer(*specs, **attrs)
        return
    inferred = op.infer(*specs, **attrs)
    concrete_spec = op.infer(*_specs(inputs), **attrs)
    assert _evaluate(inferred) == concrete_spec
    if BATCH in concrete_spec.shape:  # the batch stays a symbol, not a guessed size
        assert DimExpr(("n",)) in inferred.shape
    flops, read, written = op.cost(*specs, **attrs)
    concrete = op.cost(*_specs(inputs), **attrs)
    sizes = {symbol: size for size, symbol in SYMBOLS.items()}
    evaluated = tuple(
        v.evaluate(sizes) if isinstance(v, DimExpr) else v for v in (flops, read, written)
    )
    assert evaluated == concrete


@pytest.mark.parametrize("name", sorted(CASES))
def test_cost_is_non_negative_and_counts_the_output(name):
    op, inputs, attrs, _ = CASES[name]
    flops, read, written = op.cost(*_specs(inputs), **attrs)
    assert all(isinstance(v, int) and v >= 0 for v in (flops, read, written))
    assert written == op(*inputs, **attrs).array.nbytes


def test_contractions_count_two_flops_per_multiply_add():
    a, b = ValueSpec((BATCH, 3, 4), np.dtype(F32)), ValueSpec((4, 5), np.dtype(F32))
    assert linalg.MATMUL.cost(a, b)[0] == 2 * BATCH * 3 * 4 * 5
    assert linalg.MATMUL.cost(b, b.with_shape((6, 5)), transpose_b=True)[0] == 2 * 4 * 5 * 6
    assert linalg.MATMUL.cost(a, b) == (2 * BATCH * 60, (BATCH * 12 + 20) * 4, BATCH * 15 * 4)
    weight, bias = ValueSpec((5, 4), np.dtype(F32)), ValueSpec((5,), np.dtype(F32))
    assert linalg.LINEAR.cost(a, weight)[0] == 2 * BATCH * 3 * 4 * 5
    assert linalg.LINEAR.cost(a, weight, bias)[0] == 2 * BATCH * 3 * 4 * 5 + BATCH * 3 * 5
    assert linalg.EINSUM.cost(a, b, equation="bij,jk->bik")[0] == 2 * BATCH * 3 * 4 * 5
    x, w = ValueSpec((2, 4, 9, 8), np.dtype(F32)), ValueSpec((6, 2, 3, 3), np.dtype(F32))
    attrs = {"stride": (2, 1), "padding": (1, 0), "dilation": (1, 1), "groups": 2}
    out = conv.CONV2D.infer(x, w, **attrs)
    assert out.shape == (2, 6, 5, 6)
    macs = 2 * 6 * 5 * 6 * (2 * 3 * 3)  # per output element: C/groups * kh * kw
    assert conv.CONV2D.cost(x, w, **attrs)[0] == 2 * macs
    assert conv.CONV2D_INPUT_GRAD.cost(out, w, input_size=(9, 8), **attrs)[0] == 2 * macs
    assert conv.CONV2D_WEIGHT_GRAD.cost(x, out, weight_size=(3, 3), **attrs)[0] == 2 * macs


def test_cost_counts_the_bytes_actually_moved():
    x, grad = ValueSpec((2, 3, 8, 8), np.dtype(F32)), ValueSpec((2, 4, 8, 8), np.dtype(F32))
    attrs = {"weight_size": (3, 3), "stride": (1, 1), "padding": (1, 1), "dilation": (1, 1)}
    # the weight gradient reads the image and the output gradient
    assert conv.CONV2D_WEIGHT_GRAD.cost(x, grad, **attrs, groups=1)[1] == x.nbytes + grad.nbytes
    # a lookup reads the indices and the rows it picks, not the whole table
    indices, table = ValueSpec((4,), np.dtype(np.int64)), ValueSpec((1000, 8), np.dtype(F32))
    assert nn.EMBEDDING.cost(indices, table, padding_idx=None) == (0, 32 + 4 * 8 * 4, 4 * 8 * 4)


def test_symbolic_strided_convolution_stays_symbolic_when_the_stride_divides():
    batch, height = DimExpr(("n",)), DimExpr(("h",), 2)  # an even height 2h
    x, w = ValueSpec((batch, 3, height, 8), np.dtype(F32)), ValueSpec((4, 3, 3, 3), np.dtype(F32))
    attrs = {"stride": (2, 2), "padding": (1, 1), "dilation": (1, 1), "groups": 1}
    out = conv.CONV2D.infer(x, w, **attrs)
    assert out.shape == (batch, 4, DimExpr(("h",)), 4)  # (2h + 2 - 2 - 1) // 2 + 1 = h
    for h in (3, 4, 5):
        concrete = conv.CONV2D.infer(x.with_shape((2, 3, 2 * h, 8)), w, **attrs)
        assert concrete.shape[2] == out.shape[2].evaluate({"h": h})


def test_infer_rejects_what_forward_rejects():
    f32 = np.dtype(F32)
    with pytest.raises(bai.errors.ShapeError, match=r"\[matmul\]"):
        linalg.MATMUL.infer(ValueSpec((2, 3), f32), ValueSpec((4, 5), f32))
    with pytest.raises(bai.errors.ShapeError, match=r"\[linear\]"):
        linalg.LINEAR.infer(ValueSpec((2, 3), f32), ValueSpec((5, 4), f32))
    with pytest.raises(bai.errors.ShapeError, match=r"\[conv2d\]"):
        conv.CONV2D.infer(ValueSpec((2, 3, 8, 8), f32), ValueSpec((4, 2, 3, 3), f32), **CONV)
    with pytest.raises(bai.errors.ShapeError, match=r"\[lstm_recurrence\]"):
        rnn.LSTM_RECURRENCE.infer(
            ValueSpec((3, 2, 8), f32),
            ValueSpec((2, 3), f32),
            ValueSpec((2, 3), f32),
            ValueSpec((8, 3), f32),
            reverse=False,
        )


MY_MODULES = (linalg, conv, pool, nn, loss, norm, layer_norm, rnn)


@pytest.mark.parametrize("module", MY_MODULES, ids=lambda m: m.__name__.rsplit(".", 1)[-1])
def test_records_have_no_onnx_attribute_and_infer_of_their_own(module):
    records = [
        value
        for value in vars(module).values()
        if isinstance(value, bai.ops.base.Op) and type(value).__module__ == module.__name__
    ]
    assert records
    for record in records:
        assert "onnx" not in type(record).__dict__, f"{record.name}: to_onnx is the one mapping"
        assert type(record).infer is not bai.ops.base.Op.infer, f"{record.name} has no infer"
        assert record.name in CASES or any(case.startswith(record.name) for case in CASES)


def test_all_ops_lists_the_fused_lstm_and_the_gradient_records():
    names = {op.name for op in bai.ops.all_ops()}
    assert {
        "lstm_recurrence",
        "lstm_activations",
        "layer_norm_input_grad",
        "layer_norm_weight_grad",
        "max_pool2d_choice",
    } <= names

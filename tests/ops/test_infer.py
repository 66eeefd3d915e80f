"""``infer`` and ``cost`` of the element-wise, logic, special, cast, reduction, shape and index
records: infer agrees with forward on every op a workload runs (shape, dtype, device), cost is
sane, and symbolic sizes stay symbolic where they can (and raise, naming the op, where they
cannot)."""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest

import buildingai as bai
from buildingai.autograd.dispatch import DispatchMode, dispatch_mode
from buildingai.ops import all_ops, cast, elementwise, index, logic, reduce, shape, special
from buildingai.ops.abstract import DimExpr, SymbolicSizeError, ValueSpec, spec_of
from buildingai.ops.index import index_shape

FAMILY_MODULES = (elementwise, logic, special, cast, reduce, shape, index)
FAMILY_RECORDS = [
    op for op in all_ops() if type(op).__module__ in {m.__name__ for m in FAMILY_MODULES}
]


class Recorder(DispatchMode):
    def __init__(self) -> None:
        self.calls = []

    def after_op(self, op, inputs, output, attrs):
        self.calls.append((op, inputs, output, dict(attrs)))


def _values(dtype, shape=(2, 3), seed=0):
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "b":
        return bai.tensor(rng.random(shape) < 0.5)
    if np.dtype(dtype).kind in "iu":
        return bai.tensor(rng.integers(1, 4, shape).astype(dtype))
    return bai.tensor(rng.uniform(0.5, 2.0, shape).astype(dtype))


FLOATS = ["float32", "float64", "float16", np.dtype(ml_dtypes.bfloat16)]
INTEGERS = ["int32", "int64", "uint8", "int8"]


def _workload():
    """Run every op of the families on several dtypes (and their backward rules on floats)."""
    for dtype in FLOATS + INTEGERS + ["bool"]:
        x, y = _values(dtype), _values(dtype, (1, 3), seed=1)
        numeric = np.dtype(dtype).kind != "b"
        if numeric:
            x + y, x - y, x * y, x / y, -x, x * 2, 2.5 * x, x / 2
            bai.maximum(x, y), bai.minimum(x, 1), x.clamp(1, 2), x.clamp(min=1), x.clamp(max=y)
            x.abs(), x.square(), x.relu(), x.sign(), x.floor(), x.ceil(), x.round()
            x.exp(), x.expm1(), x.log(), x.log1p(), x.sqrt(), x.rsqrt(), x.reciprocal()
            x.sin(), x.cos(), x.tanh(), x.erf(), x.sigmoid(), x.silu(), x.softplus(), x.gelu()
            x.leaky_relu(0.1), x**2, x**y, x.floor_divide(y), x.remainder(y)
            x.sum(), x.sum(axis=1), x.mean(axis=0, keepdims=True), x.var(axis=1), x.std()
            x.amax(axis=1), x.amin(), x.argmax(), x.argmin(axis=1, keepdims=True)
            x.prod(axis=0), x.logsumexp(axis=1), x.norm(), x.norm(ord=1, axis=1)
            x.norm(ord=3.0, axis=1), x.softplus(beta=2.0, threshold=3.0)
            x.cumsum(axis=1), x.cumprod(axis=0), x.sum_to(1, 3)
        x.round(decimals=1) if np.dtype(dtype).kind == "f" else None
        x == y, x != y, x < y, x <= y, x > y, x >= y, x.isnan(), x.isinf(), x.isfinite()
        x.logical_and(y), x.logical_or(y), x.logical_xor(y), x.logical_not()
        if not numeric or np.dtype(dtype).kind in "iu":
            x & y, x | y, x ^ y, ~x
        x.all(axis=1), x.any(), x.count_nonzero(axis=0)
        bai.where(x != 0, x, y), bai.where(x != 0, x, 0.5), x.clone()
        x.reshape(3, 2), x.reshape(-1), x.expand(4, 2, 3), x.permute(1, 0), x[None].squeeze(0)
        x.unsqueeze(1), bai.concatenate([x, y], axis=0), x.T.contiguous()
        x[1], x[:, 1:], x[..., ::2], x[None, 0, -1], x[np.array([0, 1, 1])]
        x[:, np.array([2, 0])], x[np.array([[True, False, True], [False, True, True]])]
        x.astype("float64"), x.pad((1, 2)), x.pad((1, 1), mode="replicate")
        if np.dtype(dtype).kind in "iu":
            bai.one_hot(x.astype("int64"), 5)
    # mixed dtypes, 0-d tensors, and backward rules (which run sum_to, zeros_index_add...)
    a32, b64 = _values("float32"), bai.tensor(np.float64(0.5))
    a32 + b64, a32 * bai.tensor(np.int64(3)), _values("int8") / b64
    bai.concatenate([_values("int32"), _values("float32")], axis=1)
    for dtype in ("float32", "float64"):
        x = bai.tensor(np.random.default_rng(3).standard_normal((2, 3)).astype(dtype))
        x.requires_grad = True
        terms = [x.gelu(), x.gelu(approximate="tanh"), x.silu(), x.softplus(beta=2.0)]
        terms += [x.sigmoid(), x.tanh()]
        terms += [x.reshape(3, 2).T, x[:, 1:].pad((0, 1), mode="reflect"), x[np.array([0, 0])]]
        terms += [x.expand(2, 2, 3).sum(axis=0)]
        total = sum(term.sum() for term in terms)
        (grad,) = bai.grad(total, [x], create_graph=True)
        grad.sum().backward()


@pytest.fixture(scope="module")
def recorded_calls():
    with dispatch_mode(Recorder()) as recorder:
        _workload()
    return recorder.calls


def test_infer_agrees_with_forward(recorded_calls):
    disagreements = []
    for op, inputs, output, attrs in recorded_calls:
        specs = [spec_of(value) for value in inputs]
        inferred = op.infer(*specs, **attrs)
        if inferred != spec_of(output):
            disagreements.append((op.name, specs, inferred, spec_of(output)))
    assert not disagreements


def test_every_family_record_is_covered(recorded_calls):
    seen = {op.name for op, *_ in recorded_calls}
    missing = {op.name for op in FAMILY_RECORDS} - seen - {"to_device"}  # needs a second device
    assert not missing


def test_cost_is_non_negative_and_reads_the_input(recorded_calls):
    for op, inputs, output, attrs in recorded_calls:
        specs = [spec_of(value) for value in inputs]
        flops, read, written = op.cost(*specs, **attrs)
        assert min(flops, read, written) >= 0, op.name
        if op.view:
            assert (flops, read, written) == (0, 0, 0), op.name
        elif op.name not in ("index", "zeros_index_add", "one_hot"):
            assert written == spec_of(output).nbytes, op.name


def test_to_device_infer_names_the_target_device():
    x = ValueSpec((2, 3), np.dtype("float32"))
    assert cast.TO_DEVICE.infer(x, device="cuda").device == "cuda:0"
    assert cast.CAST.infer(x, dtype=np.dtype("int8")) == x.with_dtype("int8")


def test_costs_of_representative_ops():
    x = ValueSpec((8, 4), np.dtype("float32"))  # 32 elements, 128 bytes
    assert elementwise.ADD.cost(x, x) == (32, 256, 128)
    assert elementwise.ADD.cost(x, 1.0) == (32, 128, 128)
    assert special.SIGMOID.cost(x) == (4 * 32, 128, 128)
    assert reduce.SUM.cost(x, axes=(1,), keepdims=False) == (32, 128, 32)  # read once
    assert reduce.VAR.cost(x, axes=None, keepdims=False, correction=1)[1:] == (128, 4)
    assert shape.RESHAPE.cost(x, shape=(4, 8)) == (0, 0, 0)
    assert shape.CONCATENATE.cost(x, x, axis=0) == (0, 256, 256)
    assert reduce.CUMSUM.cost(x, axis=0, exclusive=False, reverse=False) == (32, 128, 128)


# ----- symbolic sizes -----------------------------------------------------------------------------

B, S = DimExpr(("batch",)), DimExpr(("seq",))
F32 = np.dtype("float32")


def spec(*shape, dtype=F32):
    return ValueSpec(tuple(shape), np.dtype(dtype))


def test_elementwise_broadcasts_symbols():
    assert elementwise.ADD.infer(spec(B, 1), spec(1, 4)).shape == (B, 4)
    assert elementwise.WHERE.infer(spec(B, 4, dtype=bool), spec(B, 1), 0.0).shape == (B, 4)
    assert elementwise.ADD.cost(spec(B, 4), 1.0)[0] == 4 * B


def test_reshape_divides_the_symbolic_element_count():
    assert shape.RESHAPE.infer(spec(B, 6), shape=(-1, 3)).shape == (2 * B, 3)
    assert shape.RESHAPE.infer(spec(B, S, 4), shape=(B, -1)).shape == (B, 4 * S)
    assert shape.RESHAPE.infer(spec(B, 4), shape=(2, -1)).shape == (2, 2 * B)
    with pytest.raises(SymbolicSizeError, match=r"\[reshape\]"):
        shape.RESHAPE.infer(spec(B, 3), shape=(-1, 2))
    with pytest.raises(bai.ShapeError, match=r"\[reshape\] cannot reshape"):
        shape.RESHAPE.infer(spec(2, 3), shape=(4, -1))


def test_getitem_keeps_symbols():
    x = spec(B, S, 8)
    assert index.GETITEM.infer(x, index=(slice(None), Ellipsis)).shape == (B, S, 8)
    assert index.GETITEM.infer(x, index=(slice(None), slice(1, None), 0)).shape == (B, S - 1)
    assert index.GETITEM.infer(x, index=(0, Ellipsis)).shape == (S, 8)
    assert index.GETITEM.infer(x, index=(Ellipsis, slice(-3, None))).shape == (B, S, 3)
    assert index.GETITEM.infer(x, index=(slice(None), slice(None, -1))).shape == (B, S - 1, 8)
    assert index.GETITEM.infer(x, index=(None, slice(-2, None))).shape == (1, 2, S, 8)
    # a symbolic size is taken to be at least as large as the slice's bounds
    assert index.GETITEM.infer(x, index=(slice(None, 3), Ellipsis)).shape == (3, S, 8)
    with pytest.raises(SymbolicSizeError, match=r"\[getitem\]"):
        index.GETITEM.infer(x, index=(slice(-3, 2), Ellipsis))
    with pytest.raises(SymbolicSizeError, match=r"\[getitem\]"):
        index.GETITEM.infer(x, index=(slice(None, None, 2), Ellipsis))
    assert index.GETITEM.infer(spec(2 * B, 3), index=(slice(None, None, 2),)).shape == (B, 3)


def test_advanced_index_with_symbols():
    chosen = np.array([[0, 2], [1, 1]])
    x = spec(B, 5, 7)
    assert index.INDEX.infer(x, index=(slice(None), chosen, Ellipsis)).shape == (B, 2, 2, 7)
    assert index.ONE_HOT.infer(spec(B, dtype="int64"), num_classes=4).shape == (B, 4)


def test_shape_ops_with_symbols():
    assert shape.CONCATENATE.infer(spec(B, 3), spec(B, 3), axis=0).shape == (2 * B, 3)
    with pytest.raises(SymbolicSizeError, match=r"\[concatenate\]"):
        shape.CONCATENATE.infer(spec(B, 3), spec(S, 3), axis=0)
    assert shape.PERMUTE.infer(spec(B, S, 2), axes=(2, 0, 1)).shape == (2, B, S)
    assert shape.UNSQUEEZE.infer(spec(B, S), axes=(0, 2)).shape == (1, B, 1, S)
    assert shape.PAD.infer(spec(B, 3), widths=((1, 1), (0, 0)), mode="constant", value=0).shape == (
        B + 2,
        3,
    )
    with pytest.raises(SymbolicSizeError, match=r"\[squeeze\]"):
        shape.SQUEEZE.infer(spec(B, 1), axes=(0,))
    assert shape.EXPAND.infer(spec(1, 3), shape=(B, 3)).shape == (B, 3)


def test_reductions_with_symbols():
    x = spec(B, S, 4)
    assert reduce.SUM.infer(x, axes=(1,), keepdims=False).shape == (B, 4)
    assert reduce.MEAN.infer(x, axes=None, keepdims=True).shape == (1, 1, 1)
    assert reduce.ARGMAX.infer(x, axis=2, keepdims=False) == spec(B, S, dtype="int64")
    assert reduce.SUM.cost(x, axes=None, keepdims=False) == (4 * B * S, 16 * B * S, 4)
    assert reduce.SUM_TO.infer(spec(B, 3), shape=(1, 3)).shape == (1, 3)


# ----- advanced indexing: the shape rule against NumPy -------------------------------------------

INDICES = [
    (np.array([0, 2]),),
    (slice(None), np.array([[1], [0]]), np.array([0, 2, 1])),
    (np.array([0, 1]), slice(1, 3), np.array([1, 0])),  # not adjacent: the selection goes first
    (Ellipsis, np.array([1, 0, 0])),
    (None, np.array([1, 0]), 2),
    (np.array([1, 0]), None, np.array([2, 3])),
    (1, slice(None), np.array([0, 0, 1])),
    (np.array([[True, False, True], [False, False, True]]),),
    (slice(None, None, -1), np.array([True, False, True]), None),
    (Ellipsis, 0, np.array([3, 1])),
]


@pytest.mark.parametrize("index", INDICES, ids=str)
def test_index_shape_matches_numpy(index):
    x = np.zeros((3, 4, 5))
    if any(getattr(part, "dtype", None) == np.dtype(bool) for part in index):
        x = np.zeros((2, 3, 4))
    assert index_shape(x.shape, index) == x[index].shape


def test_index_that_does_not_fit_names_the_op():
    with pytest.raises(bai.IndexingError, match=r"\[getitem\] index 5 is out of range"):
        index.GETITEM.infer(spec(2, 3), index=(5, Ellipsis))
    with pytest.raises(bai.IndexingError, match=r"\[getitem\] too many indices"):
        index.GETITEM.infer(spec(B, 3), index=(0, 0, 0))


def test_float_functions_of_integers_give_the_default_float():
    x = spec(3, dtype="int64")
    for op in (elementwise.EXP, elementwise.SQRT, special.ERF, special.GELU, elementwise.DIV):
        operands = (x, x) if op is elementwise.DIV else (x,)
        attrs = {"approximate": "none"} if op is special.GELU else {}
        assert op.infer(*operands, **attrs).dtype == np.dtype("float32"), op.name
    assert reduce.SUM.infer(spec(3, dtype="uint8"), axes=None, keepdims=False).dtype == "int64"
    assert reduce.MEAN.infer(x, axes=None, keepdims=False).dtype == "float32"
    assert math.isclose(float(bai.tensor(np.array([1, 2], np.uint8)).sum().item()), 3)


def test_boolean_element_wise_records_are_predicates():
    predicates = [elementwise.EQ, elementwise.NE, elementwise.LOGICAL_XOR, elementwise.ISFINITE]
    for op in predicates:
        assert isinstance(op, elementwise.Predicate)
        operands = (spec(B, 2),) if op is elementwise.ISFINITE else (spec(B, 2), spec(1, 2))
        assert op.infer(*operands) == spec(B, 2, dtype=bool)
    assert not isinstance(elementwise.BITWISE_AND, elementwise.Predicate)  # integers out
    assert not hasattr(elementwise, "Elementwise")


def test_family_records_have_to_onnx_as_their_one_mapping():
    for op in FAMILY_RECORDS:
        assert not hasattr(op, "onnx"), op.name  # no second, drifting name beside to_onnx


def test_kernels_hold_array_helpers_and_no_records():
    import importlib
    import pkgutil

    from buildingai.accel import kernels
    from buildingai.ops.base import Op

    names = {info.name for info in pkgutil.iter_modules(kernels.__path__)}
    assert {"row_reduce", "scalar_loops", "split", "conv_grid", "pool_flat"} <= names
    for name in names:
        module = importlib.import_module(f"{kernels.__name__}.{name}")
        assert not any(isinstance(value, Op) for value in vars(module).values()), name
    assert len({op.name for op in all_ops()}) == len(all_ops())

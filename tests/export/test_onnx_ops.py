"""Op-level sweep: each primitive op frozen and exported alone; eager == frozen == onnxruntime,
at two batch sizes from one file. Plus check_onnx and export errors."""

from __future__ import annotations

import math

import numpy as np
import pytest

import buildingai as bai
import buildingai.nn.functional as F
from buildingai.graph import TensorSpec, freeze
from buildingai.ops.linalg import MATMUL

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from buildingai.export import ExportError, check_onnx, export_onnx, run_onnxruntime  # noqa: E402

F32 = "float32"


def spec(*shape, dtype=F32):
    return TensorSpec((None,) + shape, dtype)


def floats(*shape, low=-2.0, high=2.0):
    return ("float", shape, low, high)


def ints(*shape, high=5):
    return ("int", shape, 0, high)


def bools(*shape):
    return ("bool", shape, 0, 1)


def _make(kind, batch, rng):
    what, shape, low, high = kind
    full = (batch,) + shape
    if what == "float":
        return rng.uniform(low, high, size=full).astype(F32)
    if what == "int":
        return rng.integers(low, high, size=full).astype("int64")
    return rng.random(full) < 0.5


def _spec_of(kind):
    what, shape, _, _ = kind
    return spec(*shape, dtype={"float": F32, "int": "int64", "bool": "bool"}[what])


W = bai.tensor(np.random.default_rng(1).standard_normal((5, 4)).astype(F32))
B = bai.tensor(np.random.default_rng(2).standard_normal(5).astype(F32))
TABLE = bai.tensor(np.random.default_rng(3).standard_normal((6, 3)).astype(F32))

CASES = {
    # arithmetic, broadcasting, scalars
    "add": (lambda x, y: x + y, [floats(3, 4), floats(1, 4)]),
    "add_scalar": (lambda x: 1.5 + x, [floats(3)]),
    "sub": (lambda x, y: x - y, [floats(3, 4), floats(3, 1)]),
    "mul": (lambda x: x * 3, [floats(2, 3)]),
    "div": (lambda x, y: x / y, [floats(3), floats(3, low=0.5)]),
    "div_ints": (lambda x: x / 2, [ints(4)]),
    "neg": (lambda x: -x, [floats(3)]),
    "pow_scalar": (lambda x: x**3, [floats(3)]),
    "pow_tensor": (lambda x, y: x**y, [floats(3, low=0.5), floats(3)]),
    "maximum": (lambda x, y: bai.maximum(x, y), [floats(3), floats(3)]),
    "minimum": (lambda x: bai.minimum(x, 0.5), [floats(3)]),
    "clamp": (lambda x: x.clamp(-0.5, 1.0), [floats(4)]),
    "clamp_low": (lambda x: x.clamp(min=0.25), [floats(4)]),
    "clamp_tensor": (lambda x, y: x.clamp(y, 1.0), [floats(4), floats(4)]),
    "floor_divide": (lambda x: x.floor_divide(0.7), [floats(4)]),
    "remainder": (lambda x: x.remainder(0.7), [floats(4)]),
    "remainder_int": (lambda x: x.remainder(3), [ints(4, high=9)]),
    # unary math
    "exp": (lambda x: x.exp(), [floats(3)]),
    "expm1": (lambda x: x.expm1(), [floats(3)]),
    "log": (lambda x: x.log(), [floats(3, low=0.1)]),
    "log1p": (lambda x: x.log1p(), [floats(3, low=-0.5)]),
    "sqrt": (lambda x: x.sqrt(), [floats(3, low=0.1)]),
    "rsqrt": (lambda x: x.rsqrt(), [floats(3, low=0.1)]),
    "reciprocal": (lambda x: x.reciprocal(), [floats(3, low=0.5)]),
    "square": (lambda x: x.square(), [floats(3)]),
    "abs": (lambda x: x.abs(), [floats(3)]),
    "sin": (lambda x: x.sin(), [floats(3)]),
    "cos": (lambda x: x.cos(), [floats(3)]),
    "tanh": (lambda x: x.tanh(), [floats(3)]),
    "relu": (lambda x: x.relu(), [floats(3)]),
    "leaky_relu": (lambda x: x.leaky_relu(0.2), [floats(3)]),
    "sign": (lambda x: x.sign(), [floats(3)]),
    "floor": (lambda x: x.floor(), [floats(3)]),
    "ceil": (lambda x: x.ceil(), [floats(3)]),
    "round": (lambda x: x.round(), [floats(3)]),
    "round_decimals": (lambda x: x.round(decimals=1), [floats(3)]),
    "clone": (lambda x: x.clone() + 1, [floats(3)]),
    "where": (lambda c, x: bai.where(c, x, 0.5), [bools(3), floats(3)]),
    "erf": (lambda x: x.erf(), [floats(3)]),
    "sigmoid": (lambda x: x.sigmoid(), [floats(3)]),
    "silu": (lambda x: x.silu(), [floats(3)]),
    "softplus": (lambda x: x.softplus(), [floats(3, low=-30, high=30)]),
    "softplus_beta": (lambda x: x.softplus(beta=2.0, threshold=5.0), [floats(3, low=-5, high=5)]),
    "gelu": (lambda x: x.gelu(), [floats(3)]),
    "gelu_tanh": (lambda x: x.gelu(approximate="tanh"), [floats(3)]),
    # comparisons and logic
    "eq": (lambda x, y: x.round() == y.round(), [floats(4), floats(4)]),
    "ne": (lambda x: x.round() != 0, [floats(4)]),
    "lt": (lambda x, y: x < y, [floats(4), floats(4)]),
    "le": (lambda x: x <= 0.5, [floats(4)]),
    "gt": (lambda x: x > 0, [floats(4)]),
    "ge": (lambda x, y: x >= y, [floats(4), floats(1)]),
    "logical": (lambda a, b: (a & b) | (a ^ ~b), [bools(4), bools(4)]),
    "logical_float": (lambda x: x.logical_and(x > 0.5), [floats(4)]),
    "isnan_isfinite": (lambda x: (x.log()).isnan() | x.isinf() | x.isfinite(), [floats(4)]),
    # reductions
    "sum": (lambda x: x.sum(axis=-1), [floats(3, 4)]),
    "sum_keepdims": (lambda x: x.sum(axis=(1, 2), keepdims=True), [floats(3, 4)]),
    "sum_bool": (lambda x: (x > 0).sum(axis=1), [floats(4)]),
    "mean": (lambda x: x.mean(axis=1), [floats(3, 4)]),
    "var": (lambda x: x.var(axis=-1), [floats(3, 4)]),
    "std_keepdims": (lambda x: x.std(axis=1, keepdims=True, correction=0), [floats(3, 4)]),
    "max": (lambda x: x.max(axis=1), [floats(3, 4)]),
    "min": (lambda x: x.min(axis=-1, keepdims=True), [floats(3, 4)]),
    "argmax": (lambda x: x.argmax(axis=1), [floats(4)]),
    "argmin_keepdims": (lambda x: x.argmin(axis=-1, keepdims=True), [floats(3, 4)]),
    "prod": (lambda x: x.prod(axis=1), [floats(3, low=0.5)]),
    "logsumexp": (lambda x: x.logsumexp(axis=-1), [floats(4, low=-50, high=50)]),
    "all_any": (lambda x: (x > 0).all(axis=1) | (x > 1).any(axis=1), [floats(4)]),
    "count_nonzero": (lambda x: x.round().count_nonzero(axis=1), [floats(5)]),
    "norm_2": (lambda x: x.norm(dim=1), [floats(4)]),
    "norm_1_inf_3": (
        lambda x: x.norm(p=1, dim=1) + x.norm(p=math.inf, dim=1) + x.norm(p=3, dim=1),
        [floats(4)],
    ),
    "cumsum": (lambda x: x.cumsum(axis=1), [floats(4)]),
    "sum_to": (lambda x: x.sum_to((1, 4)), [floats(3, 4)]),
    # shape
    "reshape": (lambda x: x.reshape(x.shape[0], -1), [floats(3, 4)]),
    "reshape_batch_product": (lambda x: x.reshape(-1, 4) * 2, [floats(3, 4)]),
    "expand": (lambda x: x.expand((x.shape[0], 3, 4)), [floats(1, 4)]),
    "permute": (lambda x: x.permute(2, 0, 1), [floats(3, 4)]),
    "transpose": (lambda x: x.T, [floats(3)]),
    "squeeze_unsqueeze": (lambda x: x.squeeze(1).unsqueeze(-1), [floats(1, 3)]),
    "concatenate": (lambda x, y: bai.concatenate([x, y, x], axis=1), [floats(2), floats(3)]),
    "pad_constant": (lambda x: x.pad(((0, 0), (1, 2)), value=0.5), [floats(4)]),
    "pad_reflect": (lambda x: x.pad(((0, 0), (2, 1)), mode="reflect"), [floats(4)]),
    "pad_replicate": (lambda x: x.pad(((0, 0), (1, 1)), mode="replicate"), [floats(4)]),
    "contiguous": (lambda x: x.T.contiguous(), [floats(3)]),
    # indexing
    "getitem_int": (lambda x: x[:, 1] + x[:, -1], [floats(4, 3)]),
    "getitem_slices": (lambda x: x[1:, ::2, -2:], [floats(5, 4)]),
    "getitem_negative_step": (lambda x: x[:, ::-2], [floats(5)]),
    "getitem_none_ellipsis": (lambda x: x[..., None, 0], [floats(2, 3)]),
    "getitem_batch_slice": (lambda x: x[: x.shape[0] - 1], [floats(3)]),
    "index_array": (lambda x: x[:, np.array([2, 0, 2])], [floats(4)]),
    "one_hot": (lambda t: bai.one_hot(t, 5), [ints(3)]),
    # linear algebra and nn primitives
    "matmul": (lambda x, y: x @ y, [floats(2, 3), floats(3, 4)]),
    "matmul_weight": (lambda x: x @ W, [floats(5)]),
    "matmul_transposed": (
        lambda x, y: MATMUL(x, y, transpose_a=True, transpose_b=True),
        [floats(3, 2), floats(4, 3)],
    ),
    "linear": (lambda x: F.linear(x, W, B), [floats(4)]),
    "linear_3d": (lambda x: F.linear(x, W, B), [floats(2, 4)]),
    "linear_no_bias": (lambda x: F.linear(x, W), [floats(2, 4)]),
    "einsum": (lambda x, y: bai.einsum("bij,bjk->bik", x, y), [floats(2, 3), floats(3, 2)]),
    "softmax": (lambda x: x.softmax(-1), [floats(5, low=-20, high=20)]),
    "log_softmax": (lambda x: x.log_softmax(1), [floats(5, 2)]),
    "embedding": (lambda t: F.embedding(t, TABLE), [ints(4, high=6)]),
    "cast": (lambda x: x.astype("int32") + x.astype("float64").sum(), [floats(3)]),
}


def _run_case(name, batch_sizes=(2, 5)):
    function, kinds = CASES[name]
    # isnan cases take the log of negatives on purpose
    agree_across_runtimes(function, kinds, batch_sizes=batch_sizes, errstate={"invalid": "ignore"})


def agree_across_runtimes(
    function, kinds, *, opset=None, tolerance=1e-5, batch_sizes=(2, 5), errstate=None
):
    """Freeze ``function`` for inputs of ``kinds``, export it, and check on each batch size
    that the frozen graph equals eager and onnxruntime agrees (to ``tolerance`` for floats,
    exactly otherwise). Returns the ONNX model."""
    static = freeze(function, [_spec_of(k) for k in kinds])
    assert not check_onnx(static)
    model = export_onnx(static) if opset is None else export_onnx(static, opset=opset)
    for batch in batch_sizes:
        rng = np.random.default_rng(batch)
        arrays = [_make(k, batch, rng) for k in kinds]
        with np.errstate(**(errstate or {})):
            eager = function(*[bai.tensor(a) for a in arrays]).numpy()
            frozen = static(*arrays).numpy()
        exported = run_onnxruntime(model, *arrays)[0]
        np.testing.assert_array_equal(frozen, eager)
        assert exported.dtype == eager.dtype and exported.shape == eager.shape
        bound = tolerance if eager.dtype.kind == "f" else 0
        np.testing.assert_allclose(exported, eager, rtol=bound, atol=bound)
    return model


@pytest.mark.parametrize("name", sorted(CASES))
def test_op_eager_frozen_onnxruntime_agree(name):
    _run_case(name)


def test_conv2d_and_layer_norm_export():
    weight = bai.tensor(np.random.default_rng(4).standard_normal((4, 3, 3, 3)).astype(F32))

    def function(x):
        y = F.conv2d(x, weight, stride=2, padding=1)
        return F.layer_norm(y, (y.shape[-1],))

    static = freeze(function, [TensorSpec((None, 3, 7, 7))])
    assert not check_onnx(static)
    model = export_onnx(static)
    x = np.random.default_rng(0).standard_normal((3, 3, 7, 7)).astype(F32)
    np.testing.assert_allclose(run_onnxruntime(model, x)[0], static(x).numpy(), atol=1e-5)


def test_check_onnx_lists_unmapped_ops_with_module_paths_and_export_refuses(tmp_path):
    class Net(bai.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = bai.nn.Linear(3, 3)

        def forward(self, x):
            return self.fc(x).cumprod(axis=1)  # cumprod has no ONNX mapping

    static = freeze(Net().eval(), [TensorSpec((None, 3))])
    missing = check_onnx(static)
    assert missing == ["'cumprod' at node 1 in Net"]
    path = tmp_path / "net.onnx"
    with pytest.raises(ExportError, match=r"1 op\(s\) have no ONNX mapping: 'cumprod' at node 1"):
        export_onnx(static, path)
    assert not path.exists()


def test_export_needs_a_signature_for_models():
    with pytest.raises(ExportError, match="needs an input_signature"):
        export_onnx(bai.nn.Linear(2, 2).eval(), None)


def test_export_writes_a_checked_file_with_dynamic_dims(tmp_path):
    path = tmp_path / "linear.onnx"
    assert not check_onnx(freeze(bai.nn.Linear(4, 2).eval(), [TensorSpec((None, 4))]))
    export_onnx(bai.nn.Linear(4, 2).eval(), path, input_signature=[TensorSpec((None, 4))])
    model = onnx.load(str(path))
    onnx.checker.check_model(model, full_check=True)
    dims = model.graph.input[0].type.tensor_type.shape.dim
    assert dims[0].dim_param == "batch" and dims[1].dim_value == 4
    out_dims = model.graph.output[0].type.tensor_type.shape.dim
    assert out_dims[0].dim_param == "batch"


def test_optimized_graphs_export_fused_kernels():
    def function(x):
        return ((x * 0.5).tanh() + 1.0) * x

    static = freeze(function, [TensorSpec((None, 3))], optimize=True)
    assert static.graph.nodes[0].op.name == "fused_elementwise"
    assert not check_onnx(static)
    model = export_onnx(static)
    x = np.random.default_rng(0).standard_normal((4, 3)).astype(F32)
    np.testing.assert_allclose(run_onnxruntime(model, x)[0], static(x).numpy(), atol=1e-6)


@pytest.mark.parametrize("opset", [13, 17])
@pytest.mark.parametrize("with_bias", [True, False])
def test_layer_norm_with_affine_exports_at_old_and_new_opsets(opset, with_bias):
    """One op in eager mode; LayerNormalization from opset 17, its decomposition before."""
    rng = np.random.default_rng(5)
    weight = bai.tensor(rng.standard_normal((3, 4)).astype(F32))
    bias = bai.tensor(rng.standard_normal((3, 4)).astype(F32)) if with_bias else None

    def function(x):
        return F.layer_norm(x, (3, 4), weight, bias)

    static = freeze(function, [TensorSpec((None, 2, 3, 4))])
    model = export_onnx(static, opset=opset)
    types = {node.op_type for node in model.graph.node}
    assert ("LayerNormalization" in types) == (opset >= 17)
    x = rng.standard_normal((5, 2, 3, 4)).astype(F32)
    expected = function(bai.tensor(x)).numpy()
    np.testing.assert_allclose(static(x).numpy(), expected, atol=1e-6)
    np.testing.assert_allclose(run_onnxruntime(model, x)[0], expected, atol=1e-5)


@pytest.mark.parametrize("opset", [17, 18, 20])
def test_opsets_with_reduction_axes_as_inputs_and_native_gelu(opset):
    def function(x):
        return x.gelu().mean(axis=1) + x.max(axis=1) + x.logsumexp(axis=1) + x.var(axis=1)

    static = freeze(function, [TensorSpec((None, 5))])
    assert not check_onnx(static)
    model = export_onnx(static, opset=opset)
    x = np.random.default_rng(0).standard_normal((3, 5)).astype(F32)
    np.testing.assert_allclose(run_onnxruntime(model, x)[0], static(x).numpy(), atol=1e-5)

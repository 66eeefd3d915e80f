"""In-place ops inside a frozen call: ``ReLU(inplace=True)`` on a layer's output (ResNet blocks
write it so) freezes and exports, equal to eager; writing into a parameter or an input of the
call, which a frozen graph cannot repeat, is refused with the op and the line, before anything is
written. Chains of in-place ops (``x.mul_(a).add_(b)``) read the value each op before wrote."""

import numpy as np
import pytest

import buildingai as bai
from buildingai import TensorSpec, float32, nn
from buildingai.graph import CompileWarning, GraphError


class Residual(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.first, self.second = nn.Linear(6, 6), nn.Linear(6, 6)
        self.act = nn.ReLU(inplace=True)

    def forward(self, x):  # (N, 6) -> (N, 6)
        hidden = self.act(self.first(x))  # the residual branch below reads the activated values
        out = self.second(hidden) + hidden
        return out.add_(1.0)


def _model():
    bai.manual_seed(0)
    return Residual().eval()


def test_in_place_activation_freezes_equal_to_eager():
    model = _model()
    static = bai.freeze(model, [TensorSpec((None, 6), float32)])
    for batch in (2, 5):
        x = bai.tensor(np.random.default_rng(batch).standard_normal((batch, 6)).astype(np.float32))
        np.testing.assert_array_equal(static(x).numpy(), model(x).numpy())


def test_in_place_activation_exports_to_onnx(tmp_path):
    pytest.importorskip("onnxruntime")
    from buildingai.export import export_onnx, run_onnxruntime

    model = _model()
    static = bai.freeze(model, [TensorSpec((None, 6), float32)])
    onnx_model = export_onnx(static, tmp_path / "residual.onnx")
    x = np.random.default_rng(3).standard_normal((4, 6)).astype(np.float32)
    np.testing.assert_allclose(run_onnxruntime(onnx_model, x)[0], model(bai.tensor(x)).numpy(),
                               rtol=1e-5, atol=1e-6)  # fmt: skip


def test_writing_into_an_input_or_a_parameter_is_refused():
    def activate(x):
        return nn.functional.relu(x, inplace=True)

    with pytest.raises(GraphError, match=r"'relu\(inplace=True\)' writes into an input"):
        bai.freeze(activate, [TensorSpec((3, 4), float32)])
    layer = nn.Linear(3, 3).eval()

    def shift(x):
        out = layer(x)  # the graph reads the bias here...
        with bai.no_grad():
            layer.bias.add_(1.0)  # ...and eager execution would change it on every call
        return out

    with pytest.raises(GraphError, match=r"'add_' writes into a parameter|writes into a tensor"):
        bai.freeze(shift, [TensorSpec((2, 3), float32)])


def _chained(x):  # (N, 3) -> (N, 3)
    first = x * 1.0
    first.mul_(2.0).add_(1.0)  # each op reads the value the one before it wrote
    second = x * 1.0
    scaled = second.mul_(3.0)  # the result of an in-place op is the tensor itself
    scaled.add_(1.0).mul_(2.0)
    return first + second


def test_chained_in_place_ops_freeze_equal_to_eager():
    static = bai.freeze(_chained, [TensorSpec((None, 3), float32)])
    compiled = bai.compile(_chained, fullgraph=True)
    for batch in (2, 5, 2):
        x = bai.tensor(np.random.default_rng(batch).standard_normal((batch, 3)).astype(np.float32))
        expected = _chained(x).numpy()
        np.testing.assert_allclose(static(x).numpy(), expected, rtol=1e-6)
        np.testing.assert_allclose(compiled(x).numpy(), expected, rtol=1e-6)


class _Counting(nn.Module):
    """Counts its calls in a buffer, in place, in eval mode too."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(3, 3)
        self.register_buffer("calls", bai.zeros(3))

    def forward(self, x):  # (N, 3) -> (N, 3)
        with bai.no_grad():
            self.calls.mul_(0.5).add_(1.0)
        return self.linear(x) + self.calls


def test_a_buffer_written_in_place_is_refused_before_it_is_written():
    model = _Counting().eval()
    with pytest.raises(GraphError, match=r"'mul_' in _Counting writes into a parameter or buffer"):
        bai.freeze(model, [TensorSpec((2, 3), float32)])
    np.testing.assert_array_equal(model.calls.numpy(), np.zeros(3))  # the trace wrote nothing


def test_a_compiled_model_that_writes_a_buffer_runs_eagerly_equal_to_eager():
    x = bai.tensor(np.ones((2, 3), dtype=np.float32))
    bai.manual_seed(0)
    eager = _Counting().eval()
    bai.manual_seed(0)
    model = _Counting().eval()
    compiled = bai.compile(model)
    with bai.no_grad(), pytest.warns(CompileWarning, match="'mul_' in _Counting writes into"):
        outputs = [compiled(x).numpy() for _ in range(3)]
    with bai.no_grad():
        expected = [eager(x).numpy() for _ in range(3)]
    np.testing.assert_allclose(outputs, expected, rtol=1e-6)
    np.testing.assert_array_equal(model.calls.numpy(), eager.calls.numpy())


def test_writing_into_a_view_of_a_parameter_is_refused():
    layer = nn.Linear(3, 3).eval()

    def shift_first_row(x):
        with bai.no_grad():
            layer.weight[0].add_(1.0)
        return layer(x)

    before = layer.weight.numpy().copy()
    with pytest.raises(GraphError, match=r"'add_' writes into a view of a tensor from outside"):
        bai.freeze(shift_first_row, [TensorSpec((2, 3), float32)])
    np.testing.assert_array_equal(layer.weight.numpy(), before)

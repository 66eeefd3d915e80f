"""In-place ops inside a frozen call: ``ReLU(inplace=True)`` on a layer's output (ResNet blocks
write it so) freezes and exports, equal to eager; writing into a parameter or an input of the
call, which a frozen graph cannot repeat, is refused with the op and the line."""

import numpy as np
import pytest

import buildingai as bai
from buildingai import TensorSpec, float32, nn
from buildingai.graph import GraphError


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

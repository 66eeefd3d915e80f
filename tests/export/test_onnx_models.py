"""Whole models: eager == frozen == onnxruntime (1e-5, float32) at two batch sizes from one file."""

from __future__ import annotations

import numpy as np
import pytest

import buildingai as bai
from buildingai import nn
from buildingai.graph import GraphError, TensorSpec, freeze

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from buildingai.export import check_onnx, export_onnx, run_onnxruntime  # noqa: E402

from ..graph.models import CNN, MLP, LSTMClassifier, TransformerClassifier, padded_tokens  # noqa: E402


def _agree(model, static, onnx_model, *arrays, tolerance=1e-5):
    eager = model(*[bai.tensor(a) for a in arrays]).numpy()
    frozen = static(*arrays).numpy()
    exported = run_onnxruntime(onnx_model, *arrays)[0]
    np.testing.assert_allclose(frozen, eager, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(exported, eager, rtol=tolerance, atol=tolerance)


def _images(batch, seed=0):
    return np.random.default_rng(seed).standard_normal((batch, 3, 8, 8)).astype("float32")


def test_mlp(tmp_path):
    model = MLP().eval()
    static = freeze(model, [TensorSpec((None, 12))])
    path = tmp_path / "mlp.onnx"
    assert not check_onnx(static)
    onnx_model = export_onnx(static, path)
    assert path.exists()
    for batch in (1, 7):
        x = np.random.default_rng(batch).standard_normal((batch, 12)).astype("float32")
        _agree(model, static, onnx_model, x)


def _trained_batch_norm(model):
    # running statistics that are not the identity, so that eval-mode batch norm does something
    rng = np.random.default_rng(0)
    with bai.no_grad():
        model.bn.running_mean.data[...] = rng.standard_normal(8).astype("float32")
        model.bn.running_var.data[...] = rng.uniform(0.5, 2.0, 8).astype("float32")
    return model


def test_cnn_with_average_pooling():
    model = _trained_batch_norm(CNN(pool=nn.AvgPool2d(2)).eval())
    static = freeze(model, [TensorSpec((None, 3, 8, 8))])
    assert not check_onnx(static)
    onnx_model = export_onnx(static)
    for batch in (1, 4):
        _agree(model, static, onnx_model, _images(batch, seed=batch))


def test_cnn_with_max_pooling():
    model = _trained_batch_norm(CNN().eval())
    static = freeze(model, [TensorSpec((None, 3, 8, 8))])
    assert "max_pool2d" in {node.op.name for node in static.graph.nodes}
    assert not check_onnx(static)
    onnx_model = export_onnx(static)
    for batch in (1, 4):
        _agree(model, static, onnx_model, _images(batch, seed=batch))


def test_lstm_classifier():
    model = LSTMClassifier().eval()
    static = freeze(model, [TensorSpec((None, "seq"), "int64")])
    for batch, length in ((2, 5), (3, 9)):
        tokens = np.random.default_rng(batch).integers(0, 20, (batch, length))
        np.testing.assert_allclose(
            static(tokens).numpy(), model(bai.tensor(tokens)).numpy(), rtol=1e-6, atol=1e-6
        )
    assert not check_onnx(static)
    onnx_model = export_onnx(static)
    for batch, length in ((2, 5), (3, 9)):
        tokens = np.random.default_rng(batch).integers(0, 20, (batch, length))
        _agree(model, static, onnx_model, tokens)


def test_transformer_encoder_classifier_with_padding_mask():
    model = TransformerClassifier().eval()
    signature = [TensorSpec((None, "seq"), "int64"), TensorSpec((None, "seq"), "bool")]
    static = freeze(model, signature)
    names = {node.op.name for node in static.graph.nodes}
    assert {"layer_norm", "gelu", "softmax", "where"} <= names
    assert not check_onnx(static)
    onnx_model = export_onnx(static)
    for batch, length in ((2, 5), (4, 8)):
        tokens, padding = padded_tokens(batch, length, seed=batch)
        _agree(model, static, onnx_model, tokens, padding)


def test_boolean_padding_masks_are_traced_or_refused_never_baked_in():
    # attention builds a boolean mask with array code outside dispatch; freezing must either
    # trace it (when attention computes it with ops) or refuse, never freeze one mask's values
    class Model(TransformerClassifier):
        def forward(self, tokens, padding):
            hidden = self.encoder(self.embed(tokens), src_key_padding_mask=padding)
            return self.fc(hidden.mean(1))

    model = Model().eval()
    signature = [TensorSpec((None, "seq"), "int64"), TensorSpec((None, "seq"), "bool")]
    try:
        static = freeze(model, signature)
    except GraphError as error:
        assert "changes between traces" in str(error) or "different ops" in str(error)
        return
    tokens, padding = padded_tokens(3, 6)
    np.testing.assert_allclose(
        static(tokens, padding).numpy(),
        model(bai.tensor(tokens), bai.tensor(padding)).numpy(),
        atol=1e-5,
    )

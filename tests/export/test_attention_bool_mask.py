"""Boolean padding masks in attention: traced into the frozen graph (never baked in) and exported;
eager == frozen == onnxruntime at two batch sizes and lengths from one file."""

from __future__ import annotations

import numpy as np
import pytest

import buildingai as bai
from buildingai.graph import TensorSpec, freeze
from buildingai.nn import functional as F

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from buildingai.export import check_onnx, export_onnx, run_onnxruntime  # noqa: E402

from ..graph.models import TransformerClassifier, padded_tokens  # noqa: E402


class BoolMaskClassifier(TransformerClassifier):
    """The encoder classifier, with the bool padding mask (True = padding) passed as is."""

    def forward(self, tokens, padding):  # (N, T) int64, (N, T) bool -> (N, 3)
        hidden = self.encoder(self.embed(tokens), src_key_padding_mask=padding)
        return self.fc(hidden.mean(1))


def _agree(model, static, onnx_model, *arrays):
    eager = model(*[bai.tensor(a) for a in arrays]).numpy()
    frozen = static(*arrays).numpy()
    exported = run_onnxruntime(onnx_model, *arrays)[0]
    assert np.isfinite(eager).all()
    np.testing.assert_allclose(frozen, eager, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(exported, eager, rtol=1e-5, atol=1e-5)


def test_transformer_encoder_with_bool_padding_mask(tmp_path):
    model = BoolMaskClassifier().eval()
    signature = [TensorSpec((None, "seq"), "int64"), TensorSpec((None, "seq"), "bool")]
    static = freeze(model, signature)
    names = {node.op.name for node in static.graph.nodes}
    # the mask is computed from the input by ops, not frozen as one trace's values
    assert {"logical_not", "any", "where"} <= names
    assert not check_onnx(static)
    path = tmp_path / "encoder.onnx"
    onnx_model = export_onnx(static, path)
    assert path.exists()
    for batch, length in ((2, 5), (4, 8)):
        tokens, padding = padded_tokens(batch, length, seed=batch)
        _agree(model, static, onnx_model, tokens, padding)
    # a sequence that is all padding: its queries attend to nothing and get zero attention
    tokens, padding = padded_tokens(3, 6, seed=7)
    padding[1] = True
    _agree(model, static, onnx_model, tokens, padding)


def test_fully_blocked_rows_give_zero_weights_when_frozen():
    def attend(q, k, v, allowed):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=allowed)

    rng = np.random.default_rng(0)
    signature = [
        TensorSpec((None, 4, 3)),
        TensorSpec((None, 5, 3)),
        TensorSpec((None, 5, 2)),
        TensorSpec((None, 4, 5), "bool"),
    ]
    static = freeze(attend, signature)
    onnx_model = export_onnx(static)
    for batch in (1, 3):
        q, k = rng.standard_normal((batch, 4, 3)), rng.standard_normal((batch, 5, 3))
        v = rng.standard_normal((batch, 5, 2))
        q, k, v = (x.astype("float32") for x in (q, k, v))
        allowed = rng.random((batch, 4, 5)) < 0.5
        allowed[0, 1] = False  # query 1 of the first sequence may attend to no key
        eager = attend(*[bai.tensor(x) for x in (q, k, v, allowed)]).numpy()
        np.testing.assert_array_equal(eager[0, 1], 0.0)
        np.testing.assert_allclose(static(q, k, v, allowed).numpy(), eager, atol=1e-6)
        np.testing.assert_allclose(
            run_onnxruntime(onnx_model, q, k, v, allowed)[0], eager, atol=1e-5
        )

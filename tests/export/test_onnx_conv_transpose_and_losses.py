"""ONNX mappings of conv2d_input_grad (the transposed convolution, as ConvTranspose), of
binary_cross_entropy and of cross_entropy: onnxruntime agrees with eager (and frozen) results."""

from __future__ import annotations

import numpy as np
import pytest

import buildingai as bai
import buildingai.nn.functional as F
from buildingai.graph import TensorSpec, freeze

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from buildingai.export import check_onnx, export_onnx, run_onnxruntime  # noqa: E402

F32 = np.float32


@pytest.mark.parametrize(
    "channels, kernel, kwargs",
    [
        ((4, 3), (3, 3), {}),
        ((4, 3), (3, 2), {"stride": 2, "padding": 1}),
        ((4, 3), (3, 3), {"stride": 2, "padding": 1, "output_padding": 1}),
        ((4, 6), (2, 3), {"stride": (2, 3), "output_padding": (1, 2), "groups": 2}),
        ((4, 2), (3, 3), {"stride": 2, "dilation": 2, "padding": 2, "output_padding": 1}),
    ],
    ids=str,
)
def test_conv_transpose2d_exports_as_conv_transpose(channels, kernel, kwargs):
    in_channels, out_channels = channels
    layer = bai.nn.ConvTranspose2d(in_channels, out_channels, kernel, **kwargs).eval()
    static = freeze(layer, [TensorSpec((None, in_channels, 5, 4))])
    assert not check_onnx(static)
    model = export_onnx(static)
    node_types = {node.op_type for node in model.graph.node}
    assert "ConvTranspose" in node_types
    for batch in (1, 3):
        x = np.random.default_rng(batch).standard_normal((batch, in_channels, 5, 4)).astype(F32)
        eager = layer(bai.tensor(x)).numpy()
        np.testing.assert_allclose(static(x).numpy(), eager, rtol=1e-6, atol=1e-6)
        exported = run_onnxruntime(model, x)[0]
        assert exported.shape == eager.shape
        np.testing.assert_allclose(exported, eager, rtol=1e-5, atol=1e-5)


def test_binary_cross_entropy_exports():
    def loss(scores, targets):  # freeze traces with any floats: sigmoid makes probabilities
        return F.binary_cross_entropy(scores.sigmoid(), targets, reduction="none")

    static = freeze(loss, [TensorSpec((None, 3)), TensorSpec((None, 3))])
    assert not check_onnx(static)
    model = export_onnx(static)
    for batch in (2, 5):
        rng = np.random.default_rng(batch)
        scores = rng.uniform(-4, 4, size=(batch, 3)).astype(F32)
        scores[0, :2] = (-200.0, 200.0)  # probabilities 0 and 1: clamped logarithms, loss 100
        targets = rng.uniform(0, 1, size=(batch, 3)).astype(F32)
        eager = loss(bai.tensor(scores), bai.tensor(targets)).numpy()
        exported = run_onnxruntime(model, scores, targets)[0]
        assert exported.dtype == eager.dtype
        np.testing.assert_allclose(exported, eager, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
@pytest.mark.parametrize(
    "shape, weighted, ignore_index",
    [((5,), False, -100), ((4, 5), False, -100), ((4, 5), True, 2), ((3, 5, 2), True, -100)],
    ids=["one-sample", "batch", "weighted-ignoring", "spatial"],
)
def test_cross_entropy_exports(shape, weighted, ignore_index, reduction):
    classes = shape[1] if len(shape) > 1 else shape[0]
    weight = bai.tensor(np.linspace(0.5, 2.0, classes).astype(F32)) if weighted else None
    target_shape = shape[:1] + shape[2:] if len(shape) > 1 else ()

    def loss(logits):
        # targets from the logits' own ranking, so that every traced value is a valid class
        target = logits.argmax(axis=1 if len(shape) > 1 else 0)
        return F.cross_entropy(
            logits, target, weight, ignore_index=ignore_index, reduction=reduction
        )

    static = freeze(loss, [TensorSpec(shape)])
    assert not check_onnx(static)
    model = export_onnx(static)
    assert "NegativeLogLikelihoodLoss" in {node.op_type for node in model.graph.node}
    logits = np.random.default_rng(0).standard_normal(shape).astype(F32)
    eager = loss(bai.tensor(logits)).numpy()
    assert eager.shape == (target_shape if reduction == "none" else ())
    exported = run_onnxruntime(model, logits)[0]
    assert exported.dtype == eager.dtype and exported.shape == eager.shape
    np.testing.assert_allclose(exported, eager, rtol=1e-5, atol=1e-6)


def test_conv_transpose2d_exports_with_a_symbolic_height():
    layer = bai.nn.ConvTranspose2d(4, 3, 3, stride=2, padding=1, output_padding=1).eval()
    static = freeze(layer, [TensorSpec((None, 4, None, 5))])
    model = export_onnx(static)
    for height in (3, 6):
        x = np.random.default_rng(height).standard_normal((2, 4, height, 5)).astype(F32)
        eager = layer(bai.tensor(x)).numpy()
        assert eager.shape == (2, 3, 2 * height, 10)
        np.testing.assert_allclose(run_onnxruntime(model, x)[0], eager, rtol=1e-5, atol=1e-5)

"""The modular vision pipeline with either encoder: eager == frozen == onnxruntime (1e-5, float32)
at two batch sizes from one file."""

from __future__ import annotations

import numpy as np
import pytest

import buildingai as bai
from buildingai import nn
from buildingai.graph import TensorSpec, freeze

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from buildingai.export import export_onnx, run_onnxruntime  # noqa: E402


def _pipeline(encoder):
    bai.manual_seed(0)
    model = nn.Sequential(
        nn.ImagePreprocessor(normalize=True),
        encoder,
        nn.AdaptiveAvgPooler(),
        nn.DenseClassifier(5, hidden=8, in_features=encoder.out_channels),
    )
    rng = np.random.default_rng(0)
    with bai.no_grad():  # running statistics that make eval-mode batch norm do something
        for name, buffer in model.named_buffers():
            if name.endswith("running_mean"):
                buffer.data[...] = rng.standard_normal(buffer.shape).astype("float32") * 0.1
            elif name.endswith("running_var"):
                buffer.data[...] = rng.uniform(0.5, 2.0, buffer.shape).astype("float32")
    return model.eval()


@pytest.mark.parametrize(
    "make_encoder",
    [
        lambda: nn.ResNetEncoder(blocks=[1, 1], block="basic", widths=(8, 16), stem="cifar"),
        lambda: nn.ResNetEncoder(blocks=[1, 1], block="bottleneck", widths=(4, 8), stem="cifar"),
        lambda: nn.VisionTransformer(
            image_size=16, patch_size=4, dim=16, depth=2, heads=2, mlp_dim=32
        ),
    ],
    ids=["resnet-basic", "resnet-bottleneck", "vit"],
)
def test_vision_pipeline_exports(make_encoder, tmp_path):
    model = _pipeline(make_encoder())
    static = freeze(model, [TensorSpec((None, 3, 16, 16))])
    onnx_model = export_onnx(static, tmp_path / "vision.onnx")
    for batch in (1, 3):
        images = np.random.default_rng(batch).uniform(0, 1, (batch, 3, 16, 16)).astype("float32")
        eager = model(bai.tensor(images)).numpy()
        np.testing.assert_allclose(static(images).numpy(), eager, rtol=1e-6, atol=1e-6)
        exported = run_onnxruntime(onnx_model, images)[0]
        np.testing.assert_allclose(exported, eager, rtol=1e-5, atol=1e-5)

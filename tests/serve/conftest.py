"""Models to serve: a checkpoint written by the Trainer (with its config) and an ONNX export."""

import json

import pytest

from buildingai import TensorSpec, export_onnx

from .models import CNN_CONFIG, DIGITS, MLP_CONFIG, write_checkpoint

pytest.importorskip("safetensors")


@pytest.fixture(scope="session")
def mlp_checkpoint(tmp_path_factory):
    """(checkpoint path, the model it holds)."""
    path = tmp_path_factory.mktemp("serve") / "mlp.safetensors"
    return path, write_checkpoint(path, MLP_CONFIG)


@pytest.fixture(scope="session")
def cnn_checkpoint(tmp_path_factory):
    path = tmp_path_factory.mktemp("serve") / "cnn.safetensors"
    return path, write_checkpoint(path, CNN_CONFIG)


@pytest.fixture(scope="session")
def mlp_onnx(tmp_path_factory, mlp_checkpoint):
    """(ONNX path, the BuildingAI model it was exported from); labels in its metadata."""
    pytest.importorskip("onnx")
    pytest.importorskip("onnxruntime")
    import onnx

    path = tmp_path_factory.mktemp("serve") / "mlp.onnx"
    _, model = mlp_checkpoint
    proto = export_onnx(model, input_signature=[TensorSpec((None, 784))])
    onnx.helper.set_model_props(proto, {"labels": json.dumps(DIGITS)})
    onnx.save(proto, str(path))
    return path, model

"""Loading what the server serves: checkpoints with their config, run directories, ONNX files."""

import numpy as np
import pytest

from buildingai.serialization import save
from buildingai.serve import ServeError, load_model, parse_shape

from .models import DIGITS, run_directly


def test_a_checkpoint_rebuilds_its_model_from_the_config(mlp_checkpoint):
    path, model = mlp_checkpoint
    served = load_model(path)
    assert served.kind == "checkpoint"
    assert served.signature.shape == (784,) and served.signature.dtype == np.float32
    assert served.labels == DIGITS  # the classes of the config's dataset
    assert served.output_shape == (10,)
    batch = np.random.default_rng(0).random((5, 784), dtype=np.float32)
    np.testing.assert_array_equal(served.run(batch), run_directly(model, batch))


def test_a_convolutional_model_takes_images(cnn_checkpoint):
    path, model = cnn_checkpoint
    served = load_model(path)
    assert served.signature.shape == (1, 28, 28)
    batch = np.random.default_rng(1).random((3, 1, 28, 28), dtype=np.float32)
    np.testing.assert_allclose(served.run(batch), run_directly(model, batch), rtol=1e-6)


def test_a_run_directory_serves_its_newest_checkpoint(tmp_path, mlp_checkpoint):
    path, _ = mlp_checkpoint
    folder = tmp_path / "run" / "checkpoints"
    folder.mkdir(parents=True)
    (folder / "step-00000002.safetensors").write_bytes(path.read_bytes())
    assert load_model(tmp_path / "run").source.endswith("step-00000002.safetensors")


def test_an_onnx_file_serves_through_onnxruntime(mlp_onnx):
    path, model = mlp_onnx
    served = load_model(path)
    assert served.kind == "onnx" and served.labels == DIGITS
    assert served.signature.shape == (784,) and served.signature.dtype == np.float32
    batch = np.random.default_rng(2).random((4, 784), dtype=np.float32)
    np.testing.assert_allclose(served.run(batch), run_directly(model, batch), rtol=1e-5, atol=1e-6)
    assert served.describe()["input"] == {"name": served.signature.name, "shape": [None, 784],
                                          "dtype": "float32"}  # fmt: skip


def test_input_shape_overrides_and_is_checked_at_start_up(mlp_checkpoint):
    path, _ = mlp_checkpoint
    assert load_model(path, input_shape=(1, 28, 28)).signature.shape == (1, 28, 28)  # MLP flattens
    with pytest.raises(ServeError) as caught:
        load_model(path, input_shape=(3, 5))
    assert "does not run on an input of shape (1, 3, 5) float32" in caught.value.message
    assert "--input-shape" in caught.value.help


def test_parse_shape():
    assert parse_shape("1, 28,28") == (1, 28, 28)
    assert parse_shape("?,16") == (None, 16)
    assert parse_shape(None) is None
    with pytest.raises(ServeError, match="not a list of sizes"):
        parse_shape("28x28")


def test_what_cannot_be_served_is_said_on_one_line(tmp_path):
    with pytest.raises(ServeError, match="does not exist"):
        load_model(tmp_path / "missing.safetensors")
    with pytest.raises(ServeError, match="directory without checkpoints"):
        load_model(tmp_path)
    bare = tmp_path / "weights.safetensors"
    save({"weight": np.zeros((2, 2), np.float32)}, bare)
    with pytest.raises(ServeError, match="holds no training config"):
        load_model(bare)
    broken = tmp_path / "broken.onnx"
    broken.write_bytes(b"not a model")
    pytest.importorskip("onnxruntime")
    with pytest.raises(ServeError, match="onnxruntime cannot load"):
        load_model(broken)


def forged(tmp_path, mlp_checkpoint, config) -> str:
    """The MLP checkpoint with its stored config replaced by ``config``."""
    from buildingai.serialization import load

    state = load(mlp_checkpoint[0])
    state["config"] = config
    path = tmp_path / "forged.safetensors"
    save(state, path)
    return path


def test_a_string_config_is_data_never_a_path_to_open(tmp_path, mlp_checkpoint):
    other = tmp_path / "other.yaml"
    other.write_text("model: {type: MLP, hidden: [8]}\n")  # a config that would load
    for text in ["/etc/passwd", str(other), str(tmp_path / "missing.yaml")]:
        with pytest.raises(ServeError) as caught:
            load_model(forged(tmp_path, mlp_checkpoint, text))
        # the same answer whether the file exists or not: nothing about it is revealed
        assert caught.value.message.startswith(
            f"the config stored in {tmp_path / 'forged.safetensors'} is str '"
        )
        assert caught.value.message.endswith(
            "not a mapping of settings; a checkpoint's config is data, never a path to read"
        )


class RecordingModels:
    """The model registry, recording each model built in this process."""

    def __init__(self, registry) -> None:
        self.registry, self.built = registry, []

    def check(self, *args, **kwargs):
        return self.registry.check(*args, **kwargs)

    def build(self, spec, *args, **kwargs):
        self.built.append(dict(spec))
        return self.registry.build(spec, *args, **kwargs)


@pytest.fixture
def recording(monkeypatch):
    from buildingai.serve import loading
    from buildingai.serve.shape_probe import can_probe

    if not can_probe():
        pytest.skip("the shape probe needs fork and RLIMIT_AS (Linux)")
    models = RecordingModels(loading.MODELS)
    monkeypatch.setattr(loading, "MODELS", models)
    return models


def test_a_config_wider_than_the_stored_tensors_is_refused_before_building(
    tmp_path, mlp_checkpoint, recording
):
    from buildingai.serialization import load

    config = load(mlp_checkpoint[0])["config"]
    config["model"] = {"type": "MLP", "hidden": [12000, 12000]}  # 2.8 GB of parameters
    with pytest.raises(ServeError) as caught:
        load_model(forged(tmp_path, mlp_checkpoint, config))
    assert "the model its config describes needs more memory than the" in caught.value.message
    assert "bytes of parameters the checkpoint stores" in caught.value.message
    assert recording.built == []  # this process never built (or allocated) the model


def test_a_config_of_other_shapes_names_the_first_mismatch(tmp_path, mlp_checkpoint, recording):
    from buildingai.serialization import load

    config = load(mlp_checkpoint[0])["config"]
    config["model"]["hidden"] = [40]  # the checkpoint stores hidden=[32]
    with pytest.raises(ServeError) as caught:
        load_model(forged(tmp_path, mlp_checkpoint, config))
    assert caught.value.message.endswith(
        "the model its config describes has layers.1.weight of shape (40, 784); the checkpoint "
        "stores (32, 784)"
    )
    assert recording.built == []
    load_model(mlp_checkpoint[0])  # a matching config is built here, once
    assert len(recording.built) == 1

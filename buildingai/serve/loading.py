"""Load what ``buildingai serve`` serves: a training checkpoint (its model rebuilt from the
config saved inside it) or an ONNX file run through onnxruntime. Both become a ``ServedModel``:
``run(batch)`` maps a NumPy batch ``(N, *sample_shape)`` to a NumPy batch of outputs."""

from __future__ import annotations

import inspect
import json
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..autograd.mode import no_grad
from ..autograd.tensor import Tensor
from ..errors import BuildingAIError
from ..export.runtime_options import op_types_of, session_options
from ..serialization import load
from ..train.callbacks import latest_checkpoint
from ..train.config import ConfigError, stored_config
from ..train.registry import DATASETS, MODELS
from .shape_probe import probe_shapes

PROBE_HEADROOM_BYTES = 256 * 1024 * 1024


class ServeError(BuildingAIError):
    """A model that cannot be served as asked, or a server setting out of range."""


@dataclass(frozen=True)
class Signature:
    """One sample's input: ``shape`` without the batch axis (None where any size goes),
    ``dtype`` a NumPy dtype, ``name`` the input's name (ONNX) or ``"input"``."""

    shape: tuple
    dtype: np.dtype
    name: str = "input"

    def to_dict(self) -> dict:
        return {"name": self.name, "shape": [None, *self.shape], "dtype": self.dtype.name}


class ServedModel:
    """A model behind the server: ``run`` takes ``(N, *signature.shape)`` and returns ``(N, ...)``.

    ``run`` is called from the batching worker thread only, one batch at a time.
    """

    kind = ""

    def __init__(self, source: str, signature: Signature, labels: list[str] | None) -> None:
        self.source, self.signature, self.labels = source, signature, labels
        self.output_shape: tuple = ()  # one sample's output shape, set by ``warm_up``

    def run(self, batch: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def warm_up(self) -> None:
        """Run one sample of zeros: a model that cannot take its signature fails here, at
        start-up, instead of on the first request."""
        shape = tuple(1 if extent is None else extent for extent in self.signature.shape)
        try:
            output = self.run(np.zeros((1, *shape), self.signature.dtype))
        except Exception as error:
            raise ServeError(
                f"{self.source} does not run on an input of shape {(1, *shape)} "
                f"{self.signature.dtype.name}: {one_line(error)}",
                help="pass the shape of one sample with --input-shape, e.g. --input-shape 1,28,28",
            ) from None
        self.output_shape = tuple(output.shape[1:])

    def describe(self) -> dict:
        return {
            "source": self.source,
            "kind": self.kind,
            "input": self.signature.to_dict(),
            "output": {"shape": [None, *self.output_shape]},
            "labels": self.labels,
        }


class CheckpointModel(ServedModel):
    """A BuildingAI Module (in eval mode) run eagerly under ``no_grad``."""

    kind = "checkpoint"

    def __init__(self, source: str, model, signature: Signature, labels) -> None:
        super().__init__(source, signature, labels)
        self.model = model.eval()

    def run(self, batch: np.ndarray) -> np.ndarray:
        with no_grad():  # dispatch state is per thread: the worker sets its own mode
            output = self.model(Tensor(batch))
        if not isinstance(output, Tensor):
            raise ServeError(
                f"the model returned {type(output).__name__}; serving needs one Tensor",
                help="serve a model whose forward returns a single (N, ...) Tensor",
            )
        return output.numpy()


class OnnxModel(ServedModel):
    """An ONNX file run by an onnxruntime CPU session (its first input and first output)."""

    kind = "onnx"

    def __init__(self, source: str, session, signature: Signature, labels) -> None:
        super().__init__(source, signature, labels)
        self.session = session

    def run(self, batch: np.ndarray) -> np.ndarray:
        return self.session.run(None, {self.signature.name: batch})[0]


def one_line(error: BaseException) -> str:
    """An exception as one line: ``what went wrong — help: fix`` for BuildingAI errors."""
    if isinstance(error, BuildingAIError):
        text = error.message + (f" (in {error.where})" if error.where else "")
        if error.help:
            text += " — help: " + error.help
    else:
        text = f"{type(error).__name__}: {error}"
    return " ".join(text.split())


def parse_shape(text: str | None) -> tuple | None:
    """``"1,28,28"`` -> ``(1, 28, 28)``; ``"?"`` or ``"None"`` for a free axis."""
    if text is None:
        return None
    try:
        return tuple(
            None if part.strip() in ("?", "None", "none") else int(part)
            for part in text.split(",")
            if part.strip()
        )
    except ValueError:
        raise ServeError(
            f"--input-shape {text!r} is not a list of sizes",
            help="give one sample's shape without the batch axis, e.g. --input-shape 1,28,28",
        ) from None


def load_model(path: str | os.PathLike, input_shape: tuple | None = None) -> ServedModel:
    """The model at ``path`` ready to serve (warmed up): an ``.onnx`` file, a checkpoint
    written by the Trainer, or a run directory (its newest checkpoint). ``input_shape`` is
    one sample's shape; without it the shape comes from the ONNX file or from the model."""
    path = Path(path)
    if path.is_dir():
        found = latest_checkpoint(path)
        if found is None:
            raise ServeError(
                f"{path} is a directory without checkpoints/step-*.safetensors",
                help="pass a checkpoint file, a run directory of `buildingai train`, or an "
                ".onnx file",
            )
        path = found
    if not path.is_file():
        raise ServeError(
            f"model file {str(path)!r} does not exist",
            help="pass a checkpoint, a run directory or an .onnx file",
        )
    if path.suffix.lower() == ".onnx":
        served = _load_onnx(path, input_shape)
    else:
        served = _load_checkpoint(path, input_shape)
    served.warm_up()
    return served


def _load_checkpoint(path: Path, input_shape: tuple | None) -> CheckpointModel:
    state = load(path, map_location="cpu")
    if not isinstance(state, dict) or state.get("config") is None or "model" not in state:
        raise ServeError(
            f"{path} holds no training config, so its model cannot be rebuilt",
            help="serve a checkpoint written by `buildingai train` (Trainer.from_config), or "
            "export the model to ONNX and serve the .onnx file",
        )
    stored = state["model"]
    if not isinstance(stored, dict) or not all(hasattr(v, "shape") for v in stored.values()):
        raise ServeError(f"{path}: its 'model' entry is not a state dict of tensors")
    try:
        config = stored_config(state["config"], str(path))
        MODELS.check(config.model, path="model")
    except ConfigError as error:
        raise ServeError(error.message, help=error.help) from None
    _check_shapes_before_building(path, config, stored)
    model = MODELS.build(config.model, path="model")
    model.load_state_dict(stored)
    shape = input_shape if input_shape is not None else _model_input_shape(model, config.model)
    return CheckpointModel(str(path), model, Signature(shape, np.dtype(np.float32)),
                           _config_labels(config))  # fmt: skip


def _check_shapes_before_building(path: Path, config, stored: dict) -> None:
    """Refuse a config whose model's parameter shapes differ from the tensors ``stored`` in the
    checkpoint, finding them in a child process capped at what those tensors justify
    (``shape_probe``), so that this process never allocates a model the file does not hold."""
    stored_bytes = sum(int(np.prod(v.shape)) * np.dtype(_dtype_of(v)).itemsize
                       for v in stored.values())  # fmt: skip
    # room for the parameters, the float64 draws that initialise them and Python's own needs
    budget = 4 * stored_bytes + PROBE_HEADROOM_BYTES

    def build_shapes() -> dict:
        model = MODELS.build(config.model, path="model")
        return {name: list(value.shape) for name, value in model.state_dict().items()}

    report = probe_shapes(build_shapes, budget)
    if report is None:
        return  # no probe on this platform: load_state_dict checks the shapes after building
    if "memory" in report:
        raise ServeError(
            f"{path}: the model its config describes needs more memory than the "
            f"{stored_bytes} bytes of parameters the checkpoint stores ({report['memory']}); "
            "the config and the weights do not match",
            help="serve a checkpoint written whole by `buildingai train`",
        )
    if "error" in report:
        raise ServeError(f"{path}: cannot build the model its config describes: "
                         f"{report['error']}")  # fmt: skip
    built = report["shapes"]
    for name, shape in built.items():
        if name not in stored:
            raise ServeError(f"{path}: the model its config describes has {name} {tuple(shape)}, "
                             "which the checkpoint does not store")  # fmt: skip
        if tuple(shape) != tuple(stored[name].shape):
            raise ServeError(
                f"{path}: the model its config describes has {name} of shape {tuple(shape)}; "
                f"the checkpoint stores {tuple(stored[name].shape)}",
                help="the config and the weights do not match; serve a checkpoint written whole "
                "by `buildingai train`",
            )
    extra = sorted(set(stored) - set(built))
    if extra:
        raise ServeError(f"{path}: the checkpoint stores {extra[0]}, which the model its config "
                         "describes does not have")  # fmt: skip


def _dtype_of(value) -> np.dtype:
    dtype = getattr(value, "dtype", np.float32)
    try:
        return np.dtype(dtype)
    except TypeError:  # a Tensor's dtype object
        return np.dtype(getattr(dtype, "name", "float32"))


def _model_input_shape(model, model_config) -> tuple:
    """One sample's shape, read from the model's first layer with weights: ``Linear`` gives
    ``(in_features,)``; a 2-D convolution gives ``(in_channels, S, S)`` with ``S`` the model's
    ``image_size`` argument."""
    for _, module in model.named_modules():
        if isinstance(getattr(module, "in_features", None), int):
            return (module.in_features,)
        if isinstance(getattr(module, "in_channels", None), int):
            size = model_config.get("image_size", _default_argument(model, "image_size"))
            if size is None:
                break
            return (int(module.in_channels), int(size), int(size))
    raise ServeError(
        f"cannot tell the input shape of model {model_config.type} from its layers",
        help="pass the shape of one sample with --input-shape, e.g. --input-shape 3,32,32",
    )


def _default_argument(model, name: str):
    parameter = inspect.signature(type(model)).parameters.get(name)
    if parameter is None or parameter.default is inspect.Parameter.empty:
        return None
    return parameter.default


def _config_labels(config) -> list[str] | None:
    """Class names of the config's dataset (its ``classes``), when the dataset has them."""
    for section in (config.data.get("eval"), config.data.get("train")):
        if section is None or section.get("type") not in DATASETS:
            continue
        classes = getattr(DATASETS.get(section.type), "classes", None)
        if isinstance(classes, (list, tuple)) and classes:
            return [str(name) for name in classes]
    return None


_ONNX_DTYPES = {
    "tensor(float)": np.float32, "tensor(double)": np.float64, "tensor(float16)": np.float16,
    "tensor(int64)": np.int64, "tensor(int32)": np.int32, "tensor(uint8)": np.uint8,
    "tensor(int8)": np.int8,
}  # fmt: skip


def _load_onnx(path: Path, input_shape: tuple | None) -> OnnxModel:
    try:
        import onnxruntime
    except ImportError:
        raise ServeError(
            "serving an ONNX file needs 'onnxruntime', which is not installed",
            help="pip install 'buildingai[serve]'",
        ) from None
    try:
        options = session_options(onnxruntime, op_types_of(str(path)))
        session = onnxruntime.InferenceSession(str(path), options,
                                               providers=["CPUExecutionProvider"])  # fmt: skip
    except Exception as error:
        raise ServeError(f"onnxruntime cannot load {path}: {one_line(error)}") from None
    first = session.get_inputs()[0]
    if len(session.get_inputs()) > 1:
        names = [spec.name for spec in session.get_inputs()]
        raise ServeError(
            f"{path} takes {len(names)} inputs {names}; the server feeds one",
            help="export a model with a single (batch, ...) input",
        )
    dtype = _ONNX_DTYPES.get(first.type)
    if dtype is None:
        raise ServeError(f"{path}: input {first.name!r} has type {first.type}, not served")
    if input_shape is None:
        input_shape = tuple(
            extent if isinstance(extent, int) else None for extent in first.shape[1:]
        )
    labels = None
    text = session.get_modelmeta().custom_metadata_map.get("labels")
    if text:
        try:
            labels = [str(name) for name in json.loads(text)]
        except (ValueError, TypeError):
            raise ServeError(f"{path}: its 'labels' metadata is not a JSON list: {text[:80]!r}",
                             help="store labels as json.dumps([...]) in the model's "
                             "metadata_props") from None  # fmt: skip
    return OnnxModel(str(path), session, Signature(input_shape, np.dtype(dtype), first.name),
                     labels)  # fmt: skip

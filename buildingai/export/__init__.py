"""Export frozen graphs: ``export_onnx`` writes ONNX through the mappings on the op records;
``check_onnx`` lists ops without one. Needs the optional ``onnx`` (and, to run exported
models, ``onnxruntime``) packages: ``pip install 'buildingai[export]'``."""

from .check import ExportError, check_onnx, float_kernels
from .emit import Emitter
from .onnx import export_onnx, run_onnxruntime

__all__ = [
    "Emitter",
    "ExportError",
    "check_onnx",
    "export_onnx",
    "float_kernels",
    "run_onnxruntime",
]

"""Serve a model over HTTP: ``buildingai serve MODEL`` or, from Python::

    from buildingai.serve import Server, create_app, load_model

    model = load_model("runs/mnist/checkpoints/step-00000469.safetensors")  # or "mnist.onnx"
    with Server(create_app(model, max_batch=64, max_latency_ms=5)) as server:
        print(server.url)   # POST /predict {"inputs": [[...], ...]} -> {"outputs": [[...], ...]}

Loading and batching need only NumPy; the endpoint needs the optional FastAPI and uvicorn
(``pip install 'buildingai[serve]'``), imported when an app is created.
"""

from .app import DEFAULT_MAX_BODY_BYTES, create_app, require_serving
from .batching import Batcher, BatchStats
from .bodies import BadRequest, decode
from .loading import ServedModel, ServeError, Signature, load_model, parse_shape
from .server import Server, serve

__all__ = [
    "BadRequest", "BatchStats", "Batcher", "DEFAULT_MAX_BODY_BYTES", "ServeError", "ServedModel",
    "Server", "Signature", "create_app", "decode", "load_model", "parse_shape",
    "require_serving", "serve",
]  # fmt: skip

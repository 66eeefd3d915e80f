"""Inference: the MLP at batch 1 and 256, the CNN at batch 1 and 64 — forward only, no
gradient recording, eval mode. A ``frozen`` column (``freeze(model, input_signature=...)``
with the graph passes on) appears when the library provides ``freeze``."""

from __future__ import annotations

import importlib

import numpy as np

import buildingai as bai

from . import cnn, mlp
from .harness import (
    CrossCheckError,
    in_default_arrangement,
    step_peak_bytes,
    thread_limit,
    time_interleaved,
    with_blas_threads,
)
from .numpy_reference import NumpyCNN, NumpyMLP

OUTPUT_TOLERANCE = 1e-4  # max |a - b| over max |b| of the logits


def find_freeze():
    """``buildingai.freeze`` (or ``buildingai.graph.freeze``) and ``TensorSpec``, or None."""
    freeze = getattr(bai, "freeze", None)
    try:
        graph = importlib.import_module("buildingai.graph")
    except Exception:  # the graph package is optional here
        graph = None
    if freeze is None and graph is not None:
        freeze = getattr(graph, "freeze", None)
    spec = getattr(bai, "TensorSpec", None) or getattr(graph, "TensorSpec", None)
    return (freeze, spec) if freeze is not None and spec is not None else None


def _cases(quick: bool) -> list[tuple]:
    """(label, module, config, builder of the NumPy model, batch sizes)."""
    mlp_config, cnn_config = mlp.sizes(quick), cnn.sizes(quick)
    return [
        ("mlp", mlp, mlp_config["widths"], NumpyMLP, (1, 256) if not quick else (1, 4)),
        ("cnn", cnn, cnn_config, NumpyCNN, (1, 64) if not quick else (1, 4)),
    ]


def _candidates(module, config, numpy_class, batch_size: int, notes: list) -> tuple[dict, dict]:
    import torch

    weights = module.initial_weights(config)
    x, target = module.batch(config, batch_size, seed=2)
    ours = module.buildingai_model(config)
    ours.load_state_dict({k: v.copy() for k, v in weights.items()})
    ours.eval()
    theirs = module.torch_model(config)
    theirs.load_state_dict({k: torch.from_numpy(v.copy()) for k, v in weights.items()})
    theirs.eval()
    reference = numpy_class(weights, x, target)
    ours_x, theirs_x = bai.tensor(x), torch.from_numpy(x.copy())

    def run_ours():
        with bai.no_grad():
            return ours(ours_x)

    def run_theirs():
        with torch.no_grad():
            return theirs(theirs_x)

    def run_numpy():
        return reference.forward(x)

    candidates = {"buildingai": run_ours, "pytorch": run_theirs, "numpy": run_numpy}
    found = find_freeze()
    if found is not None:
        freeze, tensor_spec = found
        try:
            frozen = freeze(
                ours, input_signature=[tensor_spec((None, *x.shape[1:]))], optimize=True
            )

            def run_frozen():
                return frozen(ours_x)

            run_frozen()
            candidates["buildingai frozen"] = run_frozen
        except Exception as error:  # report, and time the eager columns anyway
            notes.append(f"freeze failed: {type(error).__name__}: {error}")
    outputs = {
        name: np.asarray(out.numpy() if hasattr(out, "numpy") else out)
        for name, out in ((name, function()) for name, function in candidates.items())
    }
    return candidates, outputs


def run(quick: bool, threads: list[int | None]) -> list[dict]:
    records = []
    for label, module, config, numpy_class, batch_sizes in _cases(quick):
        for batch_size in batch_sizes:
            notes: list[str] = []
            candidates, outputs = _candidates(module, config, numpy_class, batch_size, notes)
            expected = outputs["pytorch"]
            scale = float(np.max(np.abs(expected)))
            for name, actual in outputs.items():
                error = float(np.max(np.abs(actual - expected))) / scale
                if error > OUTPUT_TOLERANCE:
                    raise CrossCheckError(
                        f"[inference {label} batch {batch_size}] {name} logits differ from "
                        f"PyTorch's by {error:.2e} of their largest value"
                    )
            peaks = {
                name: step_peak_bytes(in_default_arrangement(candidates[name]))
                for name in candidates
                if name != "pytorch"
            }
            alternatives = {k: v for k, v in candidates.items() if k == "buildingai frozen"}
            for count in threads:
                with thread_limit(count):
                    timed = with_blas_threads(candidates, alternatives, count)
                    times = time_interleaved(timed, quick, target_seconds=0.1)
                records.append(
                    {
                        "workload": "inference",
                        "case": f"{label} forward, batch {batch_size}",
                        "threads": count,
                        "unit": "ms",
                        "times": times,
                        "peak_bytes": peaks,
                        "notes": notes,
                    }
                )
    return records

"""What a run's numbers depend on besides its code: versions, threads, the BLAS kernel, the
accelerations and precision in force, the seed, the git state and the resolved config.
``buildingai info`` prints the machine's part; the Trainer appends a session to
``run_dir/run.json`` each time ``fit`` starts (a resumed run adds a session, so each session's
settings stay on record).
"""

from __future__ import annotations

import json
import os
import platform
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path

import numpy as np

from .. import accel
from ..backend import cuda_is_available, memory
from ..backend.threads import get_num_threads, one_pool, own_blas
from ..version import __version__

RUN_RECORD = "run.json"


def accelerations() -> dict[str, dict]:
    """Each switchable acceleration that changes how work is done, with whether it is active,
    what it does or why it is off, and its switch: ``{"accel": {...}, "matmul.routed": {...}}``.
    ``accel`` is the one switch of every registered kernel (``buildingai.accel``)."""
    report = {
        "accel": {
            "active": accel.is_enabled(),
            "detail": "the faster kernels registered beside the op records",
            "switch": f"buildingai.accel.enable() / disable(), or {accel.ENV_VAR}=1/0",
        }
    }
    for entry in accel.status()["kernels"]:
        reason = entry["reason"]
        detail = entry["description"] if reason == "on" else reason
        report[entry["name"]] = {
            "active": entry["active"],
            "detail": detail,
            "switch": f"buildingai.accel.set_enabled({entry['name']!r}, True/False)",
        }
    report["retain_freed_memory"] = memory.status()
    return report


def machine_report() -> dict:
    """Versions, devices, BLAS libraries and threads, CPU count: what a bug report needs."""
    report: dict = {
        "buildingai": __version__,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "numpy": np.__version__,
    }
    # Read from package metadata: nothing is imported, so this stays fast.
    optional = {
        "cupy": ("cupy-cuda12x", "cupy-cuda11x", "cupy"), "safetensors": ("safetensors",),
        "ml_dtypes": ("ml_dtypes",), "pyyaml": ("PyYAML",), "tqdm": ("tqdm",),
        "threadpoolctl": ("threadpoolctl",), "onnx": ("onnx",), "onnxruntime": ("onnxruntime",),
        "numba": ("numba",), "scipy_openblas64": ("scipy-openblas64",),
    }  # fmt: skip
    for name, distributions in optional.items():
        report[name] = None
        for distribution in distributions:
            try:
                report[name] = metadata.version(distribution)
                break
            except metadata.PackageNotFoundError:
                continue
    try:
        report["cuda_available"] = bool(cuda_is_available())
    except Exception as error:
        report["cuda_available"] = f"error: {error}"
    report["cpu_count"] = os.cpu_count()
    if hasattr(os, "sched_getaffinity"):
        report["cpus_usable"] = len(os.sched_getaffinity(0))
    try:
        from threadpoolctl import threadpool_info

        report["blas"] = [
            {key: pool.get(key) for key in ("internal_api", "version", "num_threads",
                                             "threading_layer", "architecture", "filepath")}
            for pool in threadpool_info()
        ]  # fmt: skip
    except ImportError:
        report["blas"] = "unknown (pip install threadpoolctl to see the BLAS library and threads)"
    report["thread_env"] = {
        name: os.environ[name]
        for name in (
            "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_THREAD_TIMEOUT"
        )
        if name in os.environ
    }  # fmt: skip
    from ..backend import precision

    report["intra_op_threads"] = get_num_threads()  # buildingai.set_num_threads
    report["one_pool"] = one_pool()  # set_num_threads(n, gemm=True): products on numba's threads
    report["own_blas"] = own_blas()  # ...on BuildingAI's copy of OpenBLAS (NumPy's left alone)
    report["accelerations"] = accelerations()
    report["math_precision"] = precision.describe()  # buildingai.set_math_precision
    return report


def session_record(step: int, seed: int | None = None, config: dict | None = None) -> dict:
    """The record of one ``fit`` session starting at ``step``: ``seed``, versions of Python,
    NumPy and the optional packages, the BLAS libraries (kernel, threads), the accelerations and
    math precision in force, the git state of the working directory, and the resolved
    ``config`` (a plain dict)."""
    from ..utils.git import git_info

    machine = machine_report()
    return {
        "started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "step": step,
        "seed": seed,
        "buildingai": __version__,
        "python": platform.python_version(),
        "numpy": np.__version__,
        "packages": {name: value for name, value in machine.items() if name in OPTIONAL_PACKAGES},
        "platform": machine.get("platform"),
        "blas": machine.get("blas"),
        "intra_op_threads": get_num_threads(),
        "one_pool": one_pool(),
        "own_blas": own_blas(),
        "accelerations": accelerations(),
        "math_precision": machine.get("math_precision"),
        "git": git_info(),
        "config": config,
    }


# The optional packages ``buildingai info`` reports whose versions can change a run's numbers.
OPTIONAL_PACKAGES = (
    "ml_dtypes", "safetensors", "onnx", "onnxruntime", "cupy", "threadpoolctl", "pyyaml", "tqdm",
    "numba", "scipy_openblas64",
)  # fmt: skip


def append_session(
    run_dir: str | os.PathLike, step: int, seed: int | None = None, config: dict | None = None
) -> dict:
    """Add a session starting at ``step`` to ``run_dir/run.json`` (``{"sessions": [...]}``,
    oldest first); returns the session's record."""
    path = Path(run_dir) / RUN_RECORD
    sessions = json.loads(path.read_text())["sessions"] if path.exists() else []
    record = session_record(step, seed, config)
    sessions.append(record)
    path.write_text(json.dumps({"sessions": sessions}, indent=2) + "\n")
    return record

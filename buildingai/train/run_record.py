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
from pathlib import Path

import numpy as np

from ..backend import memory, vector_blas
from ..backend.threads import get_num_threads
from ..optim import packing
from ..version import __version__

RUN_RECORD = "run.json"


def accelerations() -> dict[str, dict]:
    """Each switchable acceleration that changes how work is done, with whether it is active,
    what it does here and its switch: ``{"vector_blas": {"active": True, ...}, ...}``."""
    return {
        "vector_blas": vector_blas.status(),
        "packed_updates": packing.status(),
        "retain_freed_memory": memory.status(),
    }


def session_record(step: int, seed: int | None = None, config: dict | None = None) -> dict:
    """The record of one ``fit`` session starting at ``step``: ``seed``, versions of Python,
    NumPy and the optional packages, the BLAS libraries (kernel, threads), the accelerations and
    math precision in force, the git state of the working directory, and the resolved
    ``config`` (a plain dict)."""
    from ..cli import info  # the same report ``buildingai info`` prints
    from ..utils.git import git_info

    machine = info()
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
        "accelerations": accelerations(),
        "math_precision": _math_precision(),
        "git": git_info(),
        "config": config,
    }


# The optional packages ``buildingai info`` reports whose versions can change a run's numbers.
OPTIONAL_PACKAGES = (
    "ml_dtypes", "safetensors", "onnx", "onnxruntime", "cupy", "threadpoolctl", "pyyaml", "tqdm",
)  # fmt: skip


def _math_precision() -> str | None:
    """The matmul/conv compute precision in force, where the backend offers the setting."""
    import buildingai

    getter = getattr(buildingai, "get_math_precision", None)
    return getter() if getter is not None else None


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

"""What a run's numbers depend on besides its config: versions, threads and the accelerations
in force. ``buildingai info`` prints it; the Trainer appends it to ``run_dir/run.json`` each
time ``fit`` starts (a resumed run adds a session, so each session's settings stay on record).
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


def session_record(step: int) -> dict:
    """The record of one ``fit`` session starting at ``step``."""
    return {
        "started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "step": step,
        "buildingai": __version__,
        "python": platform.python_version(),
        "numpy": np.__version__,
        "intra_op_threads": get_num_threads(),
        "accelerations": accelerations(),
    }


def append_session(run_dir: str | os.PathLike, step: int) -> dict:
    """Add a session starting at ``step`` to ``run_dir/run.json`` (``{"sessions": [...]}``,
    oldest first); returns the session's record."""
    path = Path(run_dir) / RUN_RECORD
    sessions = json.loads(path.read_text())["sessions"] if path.exists() else []
    record = session_record(step)
    sessions.append(record)
    path.write_text(json.dumps({"sessions": sessions}, indent=2) + "\n")
    return record

"""Run a job of tests/distributed/jobs under ``buildingai launch`` in a subprocess with a timeout;
skip the calling test cleanly when mpi4py or an mpiexec is missing."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

JOBS = Path(__file__).parent / "jobs"
ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Job:
    returncode: int
    output: str  # stdout and stderr of every rank and of mpiexec
    seconds: float


def require_mpi() -> None:
    if importlib.util.find_spec("mpi4py") is None:
        pytest.skip("mpi4py is not installed (pip install 'buildingai[mpi]')")
    from buildingai.distributed import DistributedError
    from buildingai.distributed.launch import find_mpiexec

    try:
        find_mpiexec()
    except DistributedError as error:
        pytest.skip(str(error))


def run_job(job: str, processes: int, *args: str, launch_options: tuple = (),
            timeout: float = 60) -> Job:  # fmt: skip
    """``buildingai launch [launch_options] -n processes jobs/<job>.py args``."""
    require_mpi()
    environment = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")
    command = [sys.executable, "-m", "buildingai", "launch", *launch_options, "-n",
               str(processes), str(JOBS / f"{job}.py"), *args]  # fmt: skip
    started = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout,
                          env=environment, cwd=ROOT)  # fmt: skip
    return Job(done.returncode, done.stdout + done.stderr, time.monotonic() - started)

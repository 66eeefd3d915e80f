"""Data-parallel training (the issue's loop, verbatim in jobs/train.py, and the bucketed helper)
equals one process training on the combined batch, on 1, 2 and 4 processes."""

import os
import subprocess
import sys

import pytest

from .launcher import JOBS, ROOT, run_job


@pytest.mark.mpi
@pytest.mark.parametrize("processes", [2, 4])
@pytest.mark.slow
def test_data_parallel_equals_one_process_on_the_combined_batch(processes):
    job = run_job("train", processes, timeout=90)
    assert job.returncode == 0, job.output
    for rank in range(processes):
        assert f"rank {rank}/{processes}: training ok" in job.output, job.output


def test_the_same_script_runs_as_one_process_without_a_launcher():
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("PMI_", "OMPI_"))}
    done = subprocess.run([sys.executable, str(JOBS / "train.py")], capture_output=True,
                          text=True, timeout=60, cwd=ROOT,
                          env=dict(environment, PYTHONPATH=str(ROOT)))  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "rank 0/1: training ok" in done.stdout

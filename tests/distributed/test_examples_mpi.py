"""The examples in examples/distributed run under `buildingai launch -n 2` (short runs)."""

import os
import subprocess
import sys

import pytest

from .launcher import ROOT, require_mpi

EXAMPLES = ROOT / "examples" / "distributed"


@pytest.mark.mpi
@pytest.mark.slow
@pytest.mark.parametrize(
    ("example", "args", "expected"),
    [
        ("data_parallel_mnist.py", ["--synthetic", "--steps", "20"], "2 rank(s): 20 steps"),
        ("data_parallel_mnist.py", ["--synthetic", "--steps", "20", "--bucketed"], "20 steps"),
        ("tensor_parallel.py", [], "rank 1/2: largest differences from one Linear"),
        ("pipeline_parallel.py", [], "rank 1/2: stage 1 after 5 steps"),
        ("gradient_compression.py", ["--steps", "20"], "top-k: final loss"),
    ],
)
def test_example_runs_on_two_ranks(example, args, expected):
    require_mpi()
    command = [sys.executable, "-m", "buildingai", "launch", "-n", "2", str(EXAMPLES / example),
               *args]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=ROOT,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)))  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert expected in done.stdout

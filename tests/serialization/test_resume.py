"""Exact resume across processes: N+M steps in one run give bit-identical weights to N steps,
a checkpoint, a fresh process and M more steps."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np

from buildingai.serialization import load

REPO_ROOT = Path(__file__).resolve().parents[2]
SCRIPT = Path(__file__).with_name("_resume_train.py")
FIRST, SECOND = 7, 6  # the checkpoint falls in the middle of an epoch (5 batches per epoch)


def run_all(*commands: list[str]) -> None:
    """Run the training script once per argument list, in parallel; fail with its stderr."""
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT))
    processes = [
        subprocess.Popen(
            [sys.executable, str(SCRIPT), *map(str, c)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )  # fmt: skip
        for c in commands
    ]
    for process in processes:
        _, stderr = process.communicate(timeout=120)
        assert process.returncode == 0, stderr.decode()


def test_resumed_training_is_bit_identical(tmp_path):
    full, checkpoint = tmp_path / "full.bai", tmp_path / "step7.bai"
    resumed, weights_only = tmp_path / "resumed.bai", tmp_path / "weights_only.bai"
    run_all(["full", FIRST + SECOND, full], ["start", FIRST, checkpoint])
    run_all(
        ["resume", SECOND, checkpoint, resumed], ["weights_only", SECOND, checkpoint, weights_only]
    )

    expected, got = load(full), load(resumed)
    assert expected["step"] == got["step"] == FIRST + SECOND
    start = load(checkpoint)["model"]
    for name, tensor in expected["model"].items():
        assert np.array_equal(got["model"][name].numpy(), tensor.numpy()), name
        assert not np.array_equal(start[name].numpy(), tensor.numpy()), name  # it did train
    # Control: with the weights but not the random streams, the run diverges.
    control = load(weights_only)["model"]
    assert any(
        not np.array_equal(control[n].numpy(), t.numpy()) for n, t in expected["model"].items()
    )

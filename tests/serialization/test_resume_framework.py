"""Exact resume with the framework's own parts: 2 epochs, a checkpoint, a fresh process, 3 more
epochs equal 5 epochs in one go, bit for bit (weights, optimizer state, learning rate)."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import buildingai as bai

pytestmark = pytest.mark.slow

SCRIPT = Path(__file__).with_name("_resume_framework.py")


def run(*args):
    subprocess.run([sys.executable, str(SCRIPT), *map(str, args)], check=True, timeout=300)


def test_resume_through_dataloader_dropout_adam_and_schedule_is_bit_identical(tmp_path):
    straight, first, resumed = (
        tmp_path / "straight.bai",
        tmp_path / "first.bai",
        tmp_path / "resumed.bai",
    )
    run(5, straight)
    run(2, first)
    run(3, resumed, first)
    a, b = bai.load(straight), bai.load(resumed)
    for name, value in a["model"].items():
        assert np.array_equal(value.numpy(), b["model"][name].numpy()), name
    for index, state in a["optimizer"]["state"].items():
        for key, value in state.items():
            assert np.array_equal(
                np.asarray(value), np.asarray(b["optimizer"]["state"][index][key])
            )
    assert a["schedule"] == b["schedule"]

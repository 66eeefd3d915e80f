"""The per-op timing tool runs end to end at tiny sizes and leaves the op records as it found
them (no timing assertions)."""

import subprocess
import sys

import pytest

from benchmarks import op_times


def test_rows_name_the_ops_and_the_rows_add_up_to_at_most_the_step():
    result = op_times.op_times("mlp", threads=None, steps=2, quick=True)
    names = {row[0] for row in result["ops"]}
    assert {"linear", "matmul", "relu", "cross_entropy"} <= names
    assert result["step_ms"] > 0 and all(row[2] >= 0 and row[3] >= 1 for row in result["ops"])
    assert sum(row[2] for row in result["ops"]) <= result["step_ms"]


def test_the_work_of_registered_kernels_is_counted(accel_on):
    import buildingai as bai

    x, weight = bai.ones(2, 3, 16, 16), bai.ones(4, 3, 3, 3)
    with op_times.timing_ops() as totals:
        bai.nn.functional.conv2d(x, weight, padding=1)
    ((name, _), (seconds, calls)) = next(iter(totals.items()))
    assert len(totals) == 1 and name == "conv2d" and seconds > 0 and calls == 1


def test_nested_forwards_count_once():
    with op_times.timing_ops() as totals:
        import buildingai as bai

        x = bai.ones(4, 3)
        bai.nn.functional.layer_norm(x, (3,), bai.ones(3), bai.zeros(3))
    names = [name for name, _ in totals]
    assert "layer_norm" in names and "standardize" not in names


@pytest.mark.slow
def test_command_line_quick_mode():
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.op_times", "cnn", "--quick", "--steps", "1"],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    assert "ms per step" in done.stdout and "| conv2d |" in done.stdout

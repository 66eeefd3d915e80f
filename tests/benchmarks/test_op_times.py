"""The per-op timing tool runs end to end at tiny sizes and leaves the op records as it found
them (no timing assertions)."""

import subprocess
import sys

from benchmarks import op_times
from buildingai.ops.base import Op


def test_rows_name_the_ops_and_records_are_restored():
    before = {
        cls: cls.__dict__["forward"] for cls in op_times._op_classes() if "forward" in cls.__dict__
    }
    result = op_times.op_times("mlp", threads=None, steps=2, quick=True)
    names = {row[0] for row in result["ops"]}
    assert {"linear", "matmul", "relu", "cross_entropy"} <= names
    assert result["step_ms"] > 0 and all(row[2] >= 0 and row[3] >= 1 for row in result["ops"])
    assert sum(row[2] for row in result["ops"]) <= result["step_ms"]
    after = {
        cls: cls.__dict__["forward"] for cls in op_times._op_classes() if "forward" in cls.__dict__
    }
    assert after == before and issubclass(next(iter(after)), Op)


def test_nested_forwards_count_once():
    with op_times.timing_ops() as totals:
        import buildingai as bai

        x = bai.ones(4, 3)
        bai.nn.functional.layer_norm(x, (3,), bai.ones(3), bai.zeros(3))
    names = [name for name, _ in totals]
    assert "layer_norm" in names and "standardize" not in names


def test_command_line_quick_mode():
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.op_times", "cnn", "--quick", "--steps", "1"],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    assert "ms per step" in done.stdout and "| conv2d |" in done.stdout

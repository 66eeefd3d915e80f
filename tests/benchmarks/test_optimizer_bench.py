"""The optimizer benchmark runs end to end at tiny sizes (no timing assertions)."""

import subprocess
import sys

import numpy as np
import pytest

from benchmarks import optimizer as benchmark


def test_quick_run_produces_records():
    records = benchmark.run(quick=True)
    assert [r["optimizer"].split("(")[0] for r in records] == ["Adam", "SGD"]
    for record in records:
        for name in ("buildingai", "bai one by one", "bai 1 thread", "torch default"):
            assert record[name]["median"] > 0
        assert record["ratio to torch default"] > 0


@pytest.mark.slow
def test_command_line_quick_mode():
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.optimizer", "--quick"],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    assert "ours / torch default" in done.stdout


def test_model_shapes_sum_to_ten_million():
    total = sum(int(np.prod(shape)) for shape in benchmark.layer_shapes())
    assert 9_900_000 <= total <= 10_100_000

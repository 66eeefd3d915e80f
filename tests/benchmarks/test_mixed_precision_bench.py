"""The mixed-precision benchmark runs end to end at tiny sizes (no timing assertions)."""

import pytest

from benchmarks import mixed_precision as benchmark

pytestmark = pytest.mark.slow


def test_quick_mode_times_every_run_on_both_models():
    records = benchmark.run(quick=True)
    runs = [record["run"] for record in records]
    assert runs.count("autocast bfloat16") == 2 and runs.count("float32, memory tracked") == 2
    assert "numpy float32 GEMMs only" in runs
    for record in records:
        assert record["time"]["median"] > 0 and record["vs_pytorch_float32"] > 0

"""The one-tensor benchmarks (activations, softmax family) run every case at a tiny size, at 1
and 2 threads, with their cross-checks against PyTorch (no timing assertions)."""

import numpy as np
import pytest

import buildingai as bai
from benchmarks import activations, case_table, softmax_family


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("module", [activations, softmax_family], ids=lambda m: m.__name__)
def test_quick_mode_checks_and_times_every_case(module, threads):
    bai.set_num_threads(threads)
    try:
        records = [module.bench(name, (4, 8, 16), threads, quick=True) for name in module.CASES]
    finally:
        bai.set_num_threads(None)
    assert [r["case"].split()[0] for r in records] == list(module.CASES)
    for record in records:
        assert record["threads"] == threads
        for candidate in ("buildingai", "pytorch", "numpy"):
            assert record[candidate]["median"] > 0
        assert np.isfinite(record["ratio"]) and np.isfinite(record["numpy_ratio"])
        assert record["forward_vs_torch"] <= 1e-4 and record["grad_vs_torch"] <= 1e-4


def test_a_difference_beyond_round_off_stops_the_benchmark():
    runs = {"buildingai": lambda: None, "pytorch": lambda: None, "numpy": lambda: None}
    with pytest.raises(AssertionError, match="grad_vs_torch"):
        case_table.timed_record("relu", (2,), 1, True, runs, {"grad_vs_torch": 0.5})

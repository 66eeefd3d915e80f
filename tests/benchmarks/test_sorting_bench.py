"""The sorting benchmark runs every case at a tiny size with its cross-checks against PyTorch
and the NumPy bound (no timing assertions)."""

import numpy as np

from benchmarks import sorting as benchmark


def test_quick_mode_checks_and_times_every_case():
    records = [benchmark.bench(n, c, 1, quick=True) for n, c in benchmark.cases(True).items()]
    assert len(records) == 3
    for record in records:
        for candidate in ("buildingai", "pytorch", "numpy"):
            assert record[candidate]["median"] > 0
        assert np.isfinite(record["ratio"]) and np.isfinite(record["numpy_ratio"])

"""The products benchmark runs each layout at a tiny size with its float64 cross-check, on
each BLAS of BuildingAI's own that is installed (no timing assertions)."""

import numpy as np
import pytest

import buildingai as bai
from benchmarks import products as benchmark

pytest.importorskip("numba")


@pytest.mark.parametrize("blas", ["openblas", "mkl"])
def test_quick_mode_checks_and_times_each_layout(accel_on, blas):
    previous = bai.accel.kernel("blas.mkl").switched_on
    try:
        if not benchmark._use_blas(blas):
            pytest.skip(f"{blas} is not installed")
        cases = benchmark.QUICK_CASES + [("gpt", "tiny nn", (32, 48, 16), "nn")]
        records = [benchmark.bench(case, 1, blas, quick=True) for case in cases]
    finally:
        bai.accel.set_enabled("blas.mkl", previous)
        bai.accel.enable(quiet=True)
    assert {record["case"].rsplit(", ", 1)[1] for record in records} == {"linear)", "tn)", "nn)"}
    for record in records:
        for candidate in ("buildingai", "pytorch", "numpy"):
            assert record[candidate]["median"] > 0
        assert np.isfinite(record["ratio"]) and np.isfinite(record["numpy_ratio"])
    assert "| own BLAS |" in benchmark.table(records)


def test_a_wrong_product_is_refused():
    with pytest.raises(AssertionError, match="off by"):
        benchmark._check("a product", np.ones((2, 2)), np.zeros((2, 2)) + 2)

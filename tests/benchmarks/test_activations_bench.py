"""The activation benchmark runs every case at a tiny size, at 1 and 2 threads, with its
cross-check against PyTorch (no timing assertions)."""

import numpy as np
import pytest

import buildingai as bai
from benchmarks import activations as benchmark


@pytest.mark.parametrize("threads", [1, 2])
def test_quick_mode_checks_and_times_every_activation(threads):
    bai.set_num_threads(threads)
    try:
        records = [
            benchmark.bench(name, (4, 8, 16), threads, quick=True) for name in benchmark.CASES
        ]
    finally:
        bai.set_num_threads(None)
    assert [r["case"].split()[0] for r in records] == list(benchmark.CASES)
    for record in records:
        assert record["threads"] == threads
        for candidate in ("buildingai", "pytorch", "numpy"):
            assert record[candidate]["median"] > 0
        assert np.isfinite(record["ratio"]) and np.isfinite(record["numpy_ratio"])
        assert record["forward_vs_torch"] <= 1e-4 and record["grad_vs_torch"] <= 1e-4


def test_numpy_lower_bound_gelu_is_the_same_function(numpy_kernels):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(64).astype(np.float32)
    g = rng.standard_normal(64).astype(np.float32)
    out, dx = np.empty_like(x), np.empty_like(x)
    benchmark._np_gelu(x, g, out, dx)
    expected = bai.nn.functional.gelu(bai.tensor(x)).numpy()
    np.testing.assert_allclose(out, expected, rtol=0, atol=0)  # the NumPy kernel, bit for bit

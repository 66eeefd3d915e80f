"""The softmax-family benchmark runs every case at a tiny size, at 1 and 2 threads, with its
cross-check against PyTorch (no timing assertions)."""

import numpy as np
import pytest

import buildingai as bai
from benchmarks import softmax_family as benchmark


@pytest.mark.parametrize("threads", [1, 2])
def test_quick_mode_checks_and_times_every_case(threads):
    bai.set_num_threads(threads)
    try:
        records = [
            benchmark.bench(name, (4, 8, 16), threads, quick=True) for name in benchmark.CASES
        ]
    finally:
        bai.set_num_threads(None)
    assert [r["case"].split()[0] for r in records] == list(benchmark.CASES)
    for record in records:
        for candidate in ("buildingai", "pytorch", "numpy"):
            assert record[candidate]["median"] > 0
        assert np.isfinite(record["ratio"]) and np.isfinite(record["numpy_ratio"])
        assert record["grad_vs_torch"] <= 1e-4


def test_the_numpy_lower_bounds_are_the_same_functions():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((6, 9)).astype(np.float32)
    g = rng.standard_normal((6, 9)).astype(np.float32)
    out, dx = np.empty_like(x), np.empty_like(x)
    benchmark._np_log_softmax(x, g, out, dx)
    tensor = bai.tensor(x, requires_grad=True)
    result = bai.nn.functional.log_softmax(tensor, -1)
    result.backward(bai.tensor(g))
    np.testing.assert_allclose(out, result.numpy(), atol=1e-6)
    np.testing.assert_allclose(dx, tensor.grad.numpy(), atol=1e-6)
    target = rng.integers(0, 9, 6)
    loss = benchmark._np_cross_entropy(x, target, dx)
    tensor = bai.tensor(x, requires_grad=True)
    ours = bai.nn.functional.cross_entropy(tensor, bai.tensor(target))
    ours.backward()
    assert abs(loss - ours.item()) <= 1e-6
    np.testing.assert_allclose(dx, tensor.grad.numpy(), atol=1e-7)

"""The inference benchmark runs end to end at tiny sizes (no timing assertions)."""

import pytest

from benchmarks import inference as benchmark

pytest.importorskip("threadpoolctl")


def test_mlp_quick_mode_produces_records():
    records = benchmark.bench_mlp(quick=True)
    assert len(records) == 2
    for record in records:
        assert {"frozen", "frozen+passes", "eager"} <= set(record["timings"])
        assert all(t["median"] > 0 for t in record["timings"].values())
        assert record["ratios_to_frozen"]["frozen"] == 1.0


def test_parallel_quick_mode_produces_records():
    (record,) = benchmark.bench_parallel(quick=True)
    assert {"eager sequential", "frozen sequential", "frozen 2 workers"} <= set(record["timings"])


def test_cnn_quick_mode_produces_records():
    records = benchmark.bench_cnn(quick=True)
    assert len(records) == 2
    for record in records:
        assert {"frozen", "frozen+passes", "eager"} <= set(record["timings"])

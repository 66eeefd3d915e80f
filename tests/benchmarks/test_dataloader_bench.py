"""The DataLoader benchmark runs (quick mode) and reports a rate for every configuration."""

from benchmarks.dataloader import run


def test_dataloader_benchmark_quick():
    report = run(quick=True)
    rates = report["batches_per_second"]
    assert set(rates) == {"0 workers", "1 workers", "2 workers"}
    for row in rates.values():
        assert row["buildingai"] > 0
        assert row.get("torch", 1) > 0

"""The checkpointing benchmark runs end to end at tiny sizes (no timing assertions)."""

from benchmarks import checkpointing as benchmark


def test_quick_mode_measures_every_strategy_on_both_models():
    records = benchmark.run(quick=True)
    assert [record["strategy"] for record in records] == [
        "plain",
        "every block",
        "checkpoint_sequential(2)",
        "plain",
        "every block",
        "checkpoint_sequential(1)",
    ]
    for record in records:
        assert record["peak_bytes"] > 0
        assert record["time"]["median"] > 0 and record["pytorch_time_ratio"] > 0

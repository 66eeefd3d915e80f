"""The observability benchmark runs end to end in quick mode: every tool, off and on, on both
training steps, as ratios to the plain step (no timing assertions)."""

import math

import pytest

from benchmarks import observability as benchmark


@pytest.mark.slow
def test_quick_mode_measures_every_tool_on_both_workloads():
    records = benchmark.run(quick=True, threads=1)
    for workload in ("mlp", "transformer"):
        tools = [r["tool"] for r in records if r["workload"] == workload]
        assert {
            "plain step",
            "tools off (after use)",
            "TimeTracer on",
            "gradient_monitor on",
            "activation_stats on",
            "detect_anomaly on",
            "LiveDashboard.update",
            "PyTorch eager step",
        } <= set(tools)
        assert any(tool.startswith("TimeTracer estimate") for tool in tools)
    assert all(math.isfinite(r["ratio"]) and r["ratio"] > 0 for r in records)
    assert {r["ratio"] for r in records if r["tool"] == "plain step"} == {1.0}

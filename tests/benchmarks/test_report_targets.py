"""The suite page's target column (``benchmarks/suite/report.py``): per-op dispatch is held to
0.8x PyTorch for a forward and a recorded forward, 1.0x for forward+backward; batch-1 inference
to 1.0x eager and 0.8x frozen."""

from __future__ import annotations

import pytest

from benchmarks.suite import report


def _record(case: str, ours: float, theirs: float, threads: int = 2) -> dict:
    times = {"buildingai": {"median": ours}, "pytorch": {"median": theirs}}
    return {"case": case, "workload": "dispatch", "threads": threads, "times": times}


@pytest.mark.parametrize(
    "kind, ratio, expected",
    [
        ("forward", 0.85, "≤0.8× PT: missed"),
        ("record", 0.78, "≤0.8× PT: met"),
        ("forward+backward", 0.85, "≤1.0× PT: met"),
        ("forward+backward", 1.05, "≤1.0× PT: missed"),
    ],
)
def test_dispatch_targets_by_kind(kind, ratio, expected):
    assert report._target(_record(f"dispatch: add (16x16), {kind}", ratio, 1.0)) == expected


def test_targets_are_read_at_two_threads_only():
    assert report._target(_record("dispatch: add (16x16), forward", 0.5, 1.0, threads=1)) == ""


def _stats(seconds: float) -> dict:
    return {"median": seconds, "min": seconds, "max": seconds}


def _inference(case: str, eager: float, frozen: float | None, threads: int = 2) -> dict:
    times = {"buildingai": _stats(eager), "pytorch": _stats(1.0)}
    if frozen is not None:
        times["buildingai frozen"] = _stats(frozen)
    return {"case": case, "workload": "inference", "threads": threads, "times": times}


@pytest.mark.parametrize(
    "eager, frozen, expected",
    [
        (0.95, 0.78, "≤1.0× PT: met; frozen ≤0.8× PT: met"),
        (1.02, 0.85, "≤1.0× PT: missed; frozen ≤0.8× PT: missed"),
        (0.9, None, "≤1.0× PT: met"),
    ],
)
def test_batch_one_inference_targets(eager, frozen, expected):
    """Eager batch-1 inference at most 1.0x PyTorch, the frozen graph at most 0.8x."""
    assert report._target(_inference("cnn forward, batch 1", eager, frozen)) == expected


def test_inference_targets_cover_batch_one_at_two_threads():
    assert report._target(_inference("cnn forward, batch 64", 1.5, 1.5)) == ""
    assert report._target(_inference("mlp forward, batch 1", 1.5, 1.5, threads=1)) == ""


def test_frozen_ratio_has_its_own_column():
    record = _inference("mlp forward, batch 1", 0.9, 0.7)
    record.update(unit="ms", peak_bytes={})
    header, _, row = report.table([record], frozen=True).splitlines()[:3]
    cells = dict(zip(header.split(" | "), row.split(" | ")))
    assert cells["frozen / PyTorch"] == "0.70"

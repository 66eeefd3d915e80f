"""The suite page's target column (``benchmarks/suite/report.py``): per-op dispatch is held to
0.8x PyTorch for a forward and a recorded forward, 1.0x for forward+backward."""

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

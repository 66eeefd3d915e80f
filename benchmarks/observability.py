"""Overhead of the observability tools on a training step: each tool off (after it was used
and its block ended: it must be within noise of no tool) and on, for the MLP and Transformer
steps of the suite, as ratios to the plain step in one interleaved run, with PyTorch eager's
step beside them. Times are this thread's CPU time with one BLAS thread (``--threads 1``, the
default), so that other processes on a shared machine do not count.

Tools: ``TimeTracer`` (a fresh tracer around each step), ``gradient_monitor(model)``,
``activation_stats(model)`` (every leaf module), ``detect_anomaly()``, and
``LiveDashboard.update`` (plain lines to a buffer and the HTML page rewritten each step).

Run: ``env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python -m benchmarks.observability
[--quick] [--threads N] [--json FILE]``.
"""

from __future__ import annotations

import argparse
import io
import tempfile
import time
from pathlib import Path

import numpy as np

import buildingai as bai
from buildingai.debug import activation_stats, detect_anomaly, gradient_monitor
from buildingai.profile import TimeTracer
from buildingai.vis import LiveDashboard

from .common import accelerate, format_table, measure, save_run
from .suite.harness import thread_limit
from .suite.train import WORKLOADS


def candidates(name: str, quick: bool, folder: Path) -> dict:
    """One training step per callable: plain, each tool off after use, each tool on."""
    steppers = WORKLOADS[name].steppers(quick)
    ours, theirs = steppers["buildingai"], steppers["pytorch"]
    model, step = ours.model, ours.step
    step()  # optimizer state exists from here on

    # use every tool once and leave its block: "off" measures what stays behind
    with TimeTracer():
        step()
    with gradient_monitor(model):
        step()
    with activation_stats(model):
        step()
    with detect_anomaly():
        step()

    def traced():
        with TimeTracer():
            step()

    def monitored():
        with gradient_monitor(model):
            step()

    def activations():
        with activation_stats(model):
            step()

    def anomaly():
        with detect_anomaly():
            step()

    dashboard = LiveDashboard(
        metrics=["loss"], file=io.StringIO(), live=False, html_path=folder / f"{name}.html"
    )

    def dashboard_update():
        dashboard.update({"loss": step().item()})

    return {
        "plain step": step,
        "tools off (after use)": step,
        "TimeTracer on": traced,
        "gradient_monitor on": monitored,
        "activation_stats on": activations,
        "detect_anomaly on": anomaly,
        "LiveDashboard.update": dashboard_update,
        "PyTorch eager step": theirs.step,
    }


def ops_per_step(step) -> int:
    """How many ops one training step dispatches (counted by a tracer)."""
    with TimeTracer() as tracer:
        step()
    return len(tracer.events)


def measure_cpu(candidates: dict, repeats: int, number: int) -> dict:
    """``common.measure`` in this thread's CPU time: with one BLAS thread every step runs on
    this thread, and time lost to other processes on a shared machine is not counted."""
    return measure(candidates, repeats, number, settle=0.0, clock=time.thread_time)


def tracer_cost_per_op(quick: bool) -> float:
    """Microseconds of CPU a TimeTracer adds to one op: a loop of tiny additions, traced and
    not, interleaved."""
    x = bai.tensor(np.ones(4, dtype=np.float32))
    count = 500

    def plain():
        for _ in range(count):
            x + x

    def traced():
        with TimeTracer():
            for _ in range(count):
                x + x

    timings = measure_cpu({"plain": plain, "traced": traced}, 3 if quick else 7, 5)
    return (timings["traced"]["median"] - timings["plain"]["median"]) / count * 1e6


def run(quick: bool, threads: int | None) -> list[dict]:
    records = []
    with tempfile.TemporaryDirectory() as folder, thread_limit(threads):
        for name in ("mlp", "transformer"):
            steps = candidates(name, quick, Path(folder))
            # "plain step" and "tools off" are the same callable timed twice: their ratio is
            # the noise floor of this run
            timings = measure_cpu(steps, repeats=3 if quick else 7, number=2 if quick else 10)
            base = timings["plain step"]["median"]
            ops = ops_per_step(steps["plain step"])
            per_op_us = tracer_cost_per_op(quick)
            records.append(
                {
                    "workload": name,
                    "tool": f"TimeTracer estimate: {ops} ops x {per_op_us:.2f} us",
                    "ms": base * 1e3 + ops * per_op_us / 1e3,
                    "min_ms": float("nan"),
                    "max_ms": float("nan"),
                    "ratio": 1 + ops * per_op_us / 1e6 / base,
                }
            )
            for tool, timing in timings.items():
                records.append(
                    {
                        "workload": name,
                        "tool": tool,
                        "ms": timing["median"] * 1e3,
                        "min_ms": timing["min"] * 1e3,
                        "max_ms": timing["max"] * 1e3,
                        "ratio": timing["median"] / base,
                    }
                )
    return records


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny run for tests")
    parser.add_argument("--threads", type=int, default=1, help="BLAS and PyTorch threads")
    parser.add_argument("--json", help="also write the records to this JSON file")
    args = parser.parse_args()
    accelerate()  # buildingai.accel on unless BUILDINGAI_ACCEL=0
    bai.manual_seed(0)
    records = run(quick=args.quick, threads=args.threads)
    rows = [
        [
            r["workload"],
            r["tool"],
            f"{r['ms']:.2f}",
            f"{r['min_ms']:.2f}-{r['max_ms']:.2f}",
            f"{r['ratio']:.3f}",
        ]
        for r in records
    ]
    print(format_table(["workload", "tool", "ms/step", "range", "/ plain step"], rows))
    print()
    save_run(records, args.json)


if __name__ == "__main__":
    main()

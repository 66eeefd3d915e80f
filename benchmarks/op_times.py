"""Wall time per primitive op inside BuildingAI's training step: which ops, at which input
shapes, a workload's step spends its time in. Backward rules run ops too, so gradients are
counted under the ops that compute them (``matmul`` for a linear layer's weight gradient,
``conv2d_input_grad``, ...).

Every op's array work is timed while the steps run (a ``TimeTracer``: the record's forward, or
the kernel ``buildingai.accel`` registered for it). What is left of the step runs outside ops:
Python dispatch and autograd bookkeeping, and the optimizer's update.

Run: ``python -m benchmarks.op_times WORKLOAD [--threads N] [--steps S] [--top K] [--quick]``,
e.g. ``python -m benchmarks.op_times transformer --threads 2``.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import time
from collections.abc import Iterator

import numpy as np

from buildingai.profile import TimeTracer

from .common import accelerate, format_table
from .suite.harness import thread_limit
from .suite.train import WORKLOADS


@contextlib.contextmanager
def timing_ops() -> Iterator[dict]:
    """Within the block, time every op's array work (a ``TimeTracer``: dispatch times the
    record's forward or its registered kernel); yields ``{(op name, input shapes): [seconds,
    calls]}``, filled when the block ends."""
    totals: dict = collections.defaultdict(lambda: [0.0, 0])
    with TimeTracer() as tracer:
        yield totals
    for event in tracer.events:
        if event.op is None:  # a data wait
            continue
        shapes = tuple(
            tuple(spec[0])
            if isinstance(spec, tuple) and isinstance(spec[-1], np.dtype)
            else "scalar"
            for spec in event.specs
        )
        entry = totals[(event.name, shapes)]
        entry[0] += event.forward_ns / 1e9
        entry[1] += 1


def op_times(name: str, threads: int | None = 2, steps: int = 10, quick: bool = False) -> dict:
    """``{"step_ms": wall time per step, "ops": [(op, shapes, ms per step, calls per step)]}``
    over ``steps`` BuildingAI training steps of workload ``name`` after three warm-up steps,
    slowest first."""
    from buildingai.backend import retain_freed_memory

    retain_freed_memory()  # as the suite and Trainer run
    stepper = WORKLOADS[name].steppers(quick)["buildingai"]
    with thread_limit(threads):
        for _ in range(3):
            stepper.step()
        with timing_ops() as totals:
            start = time.perf_counter()
            for _ in range(steps):
                stepper.step()
            elapsed = time.perf_counter() - start
    rows = [
        (op, shapes, seconds / steps * 1e3, calls // steps)
        for (op, shapes), (seconds, calls) in totals.items()
    ]
    rows.sort(key=lambda row: -row[2])
    return {"step_ms": elapsed / steps * 1e3, "ops": rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workload", choices=sorted(WORKLOADS))
    parser.add_argument("--threads", type=int, default=2, help="BLAS threads (default 2)")
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--top", type=int, default=30, help="rows to print")
    parser.add_argument("--quick", action="store_true", help="tiny sizes, for tests")
    args = parser.parse_args()
    accelerate()  # buildingai.accel on unless BUILDINGAI_ACCEL=0
    result = op_times(args.workload, args.threads, args.steps, args.quick)
    step = result["step_ms"]
    in_ops = sum(row[2] for row in result["ops"])
    print(
        f"{args.workload}: {step:.2f} ms per step at {args.threads} threads (op timing adds a "
        f"little); {in_ops:.2f} ms in ops, {step - in_ops:.2f} ms outside them"
    )
    rows = [
        [op, " ".join(str(s) for s in shapes), f"{ms:.3f}", f"{ms / step:.1%}", str(calls)]
        for op, shapes, ms, calls in result["ops"][: args.top]
    ]
    print(format_table(["op", "input shapes", "ms per step", "of the step", "calls"], rows))


if __name__ == "__main__":
    main()

"""Where BuildingAI's step of a real training workload (``gpt``, ``resnet18``, ``lstm-lm``)
spends its time: ops by total time over a few steps, with their calls per step and their share
of the step (a ``TimeTracer``, as ``benchmarks.op_times`` does for the synthetic workloads).

Run: ``python -m benchmarks.real_op_times WORKLOAD [--threads N] [--steps S] [--top K]
[--compiled] [--quick] [--clock thread]``; ``--compiled`` profiles the ``buildingai.compile``
step (each step of its graph's plan, timed as the executor runs it); ``--clock thread`` times
the step and each op in the calling thread's CPU time, which other processes' load does not
inflate (at one thread everything runs on the calling thread).
"""

from __future__ import annotations

import argparse
import collections
import collections.abc
import contextlib
import time

from .common import accelerate, format_table
from .op_times import timing_ops
from .suite.from_source import buildingai_compiled
from .suite.harness import in_default_arrangement, thread_limit
from .suite.real_workloads import WORKLOADS


@contextlib.contextmanager
def timing_plan_steps(clock_ns) -> collections.abc.Iterator[dict]:
    """Within the block, time each step a compiled graph's executor runs (``clock_ns``);
    yields ``{(op name, None): [seconds, calls]}``, as ``timing_ops`` for eager ops."""
    from buildingai.graph import executor

    totals: dict = collections.defaultdict(lambda: [0.0, 0])
    run_step = executor._run_step

    def timed(step, *arguments):
        started = clock_ns()
        result = run_step(step, *arguments)
        entry = totals[(step.op.name, None)]
        entry[0] += (clock_ns() - started) / 1e9
        entry[1] += 1
        return result

    executor._run_step = timed
    try:
        yield totals
    finally:
        executor._run_step = run_step


@contextlib.contextmanager
def op_clock(clock: str) -> collections.abc.Iterator[None]:
    """Dispatch's timing of each op's array work on ``clock``: "wall" leaves it as it is,
    "thread" reads the calling thread's CPU clock instead."""
    from buildingai.autograd import dispatch

    if clock == "wall":
        yield
        return
    wall = dispatch.perf_counter_ns
    dispatch.perf_counter_ns = time.thread_time_ns
    try:
        yield
    finally:
        dispatch.perf_counter_ns = wall


def op_shares(
    name: str,
    threads: int | None = 2,
    steps: int = 5,
    compiled: bool = False,
    quick: bool = False,
    clock: str = "wall",
) -> dict:
    """``{"step_ms", "ops": [(op, ms per step, calls per step, share of the step)]}``, ops
    summed over their input shapes, slowest first, over ``steps`` steps after three warm-ups;
    ``clock`` "wall" or "thread" (this thread's CPU time)."""
    from buildingai.backend import retain_freed_memory

    retain_freed_memory()  # as the suite and Trainer run
    module = WORKLOADS[name]
    stepper = module.build("buildingai", module.sizes(quick))
    if compiled:
        stepper = buildingai_compiled(stepper)
    step = in_default_arrangement(stepper.step)  # BuildingAI at the limit's thread count
    clock_s = time.thread_time if clock == "thread" else time.perf_counter
    nanoseconds = time.thread_time_ns if clock == "thread" else time.perf_counter_ns
    timing = (lambda: timing_plan_steps(nanoseconds)) if compiled else timing_ops
    with thread_limit(threads), op_clock(clock):
        for _ in range(3):
            step()
        with timing() as totals:
            start = clock_s()
            for _ in range(steps):
                float(step().item())
            elapsed = clock_s() - start
    by_op: dict = collections.defaultdict(lambda: [0.0, 0])
    for (op, _shapes), (seconds, calls) in totals.items():
        by_op[op][0] += seconds
        by_op[op][1] += calls
    step_s = elapsed / steps
    rows = [(op, s / steps * 1e3, calls / steps, s / steps / step_s)
            for op, (s, calls) in by_op.items()]  # fmt: skip
    rows.sort(key=lambda row: -row[1])
    return {"step_ms": step_s * 1e3, "ops": rows}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workload", choices=sorted(WORKLOADS))
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--top", type=int, default=12)
    parser.add_argument("--compiled", action="store_true")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--clock", choices=("wall", "thread"), default="wall",
                        help="wall clock (default), or the calling thread's CPU time")  # fmt: skip
    args = parser.parse_args(argv)
    accelerate()
    found = op_shares(
        args.workload, args.threads, args.steps, args.compiled, args.quick, args.clock
    )
    inside = sum(row[3] for row in found["ops"])
    rows = [[op, f"{ms:.2f}", f"{calls:g}", f"{share:.1%}"]
            for op, ms, calls, share in found["ops"][: args.top]]  # fmt: skip
    print(f"{args.workload}: {found['step_ms']:.1f} ms per step at {args.threads} thread(s), "
          f"{args.clock} clock; "
          f"ops' own work {inside:.0%} of it, the rest dispatch, autograd and Python")  # fmt: skip
    print(format_table(["op", "ms per step", "calls per step", "share of step"], rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

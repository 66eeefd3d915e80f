"""Where BuildingAI's step of a real training workload (``gpt``, ``resnet18``, ``lstm-lm``)
spends its time: ops by total time over a few steps, with their calls per step and their share
of the step (a ``TimeTracer``, as ``benchmarks.op_times`` does for the synthetic workloads).

Run: ``python -m benchmarks.real_op_times WORKLOAD [--threads N] [--steps S] [--top K]
[--compiled] [--quick]``; ``--compiled`` profiles the ``buildingai.compile`` step.
"""

from __future__ import annotations

import argparse
import collections
import time

from .common import accelerate, format_table
from .op_times import timing_ops
from .suite.from_source import buildingai_compiled
from .suite.harness import in_default_arrangement, thread_limit
from .suite.real_workloads import WORKLOADS


def op_shares(
    name: str, threads: int | None = 2, steps: int = 5, compiled: bool = False, quick: bool = False
) -> dict:
    """``{"step_ms", "ops": [(op, ms per step, calls per step, share of the step)]}``, ops
    summed over their input shapes, slowest first, over ``steps`` steps after three warm-ups."""
    from buildingai.backend import retain_freed_memory

    retain_freed_memory()  # as the suite and Trainer run
    module = WORKLOADS[name]
    stepper = module.build("buildingai", module.sizes(quick))
    if compiled:
        stepper = buildingai_compiled(stepper)
    step = in_default_arrangement(stepper.step)  # BuildingAI at the limit's thread count
    with thread_limit(threads):
        for _ in range(3):
            step()
        with timing_ops() as totals:
            start = time.perf_counter()
            for _ in range(steps):
                float(step().item())
            elapsed = time.perf_counter() - start
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
    args = parser.parse_args(argv)
    accelerate()
    found = op_shares(args.workload, args.threads, args.steps, args.compiled, args.quick)
    inside = sum(row[3] for row in found["ops"])
    rows = [[op, f"{ms:.2f}", f"{calls:g}", f"{share:.1%}"]
            for op, ms, calls, share in found["ops"][: args.top]]  # fmt: skip
    print(f"{args.workload}: {found['step_ms']:.1f} ms per step at {args.threads} thread(s); "
          f"ops' own work {inside:.0%} of it, the rest dispatch, autograd and Python")  # fmt: skip
    print(format_table(["op", "ms per step", "calls per step", "share of step"], rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

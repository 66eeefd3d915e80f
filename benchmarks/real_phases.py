"""Where a real training workload's step goes, phase by phase, BuildingAI against PyTorch eager
in one run: backward (``loss.backward()``), gradient clipping (``clip_grad_norm_``), the update
(the optimizer's ``step`` and ``zero_grad``, the model's ``zero_grad``), and the rest of the
step, which is the forward pass with its loss and the loop's own Python.

Nothing here watches the ops (no dispatch mode, unlike ``benchmarks.real_op_times``): the
step runs exactly as it does untimed, with the backward engine's in-place sums, and only the
four calls above are wrapped, on both sides alike. Rounds are interleaved as in
``common.measure``: after a pause, one untimed step, then ``steps`` timed ones per framework.

Run: ``python -m benchmarks.real_phases WORKLOAD [--threads N] [--rounds R] [--steps S]
[--quick]``, e.g. ``python -m benchmarks.real_phases gpt --threads 2``.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import statistics
import time
from collections.abc import Iterator

from .common import SETTLE_SECONDS, accelerate, format_table
from .suite.harness import in_default_arrangement, thread_limit
from .suite.real_workloads import WORKLOADS

PHASES = ("forward and the rest", "backward", "clip", "update")
FRAMEWORKS = ("buildingai", "pytorch")


def _wrapped(totals: collections.Counter, phase: str, function):
    """``function`` adding its wall time to ``totals[phase]``."""

    def timed(*arguments, **keywords):
        started = time.perf_counter()
        try:
            return function(*arguments, **keywords)
        finally:
            totals[phase] += time.perf_counter() - started

    return timed


@contextlib.contextmanager
def timing_phases(framework: str, step) -> Iterator[collections.Counter]:
    """Within the block, the wall time of ``step``'s backward, clipping and update calls by
    phase (``framework`` 'buildingai' or 'pytorch'; ``step`` a workload's ``SourceStep``);
    the wrapped attributes are restored when it ends."""
    if framework == "buildingai":
        import buildingai as library
    else:
        import torch as library
    totals: collections.Counter = collections.Counter()
    targets = [
        (library.Tensor, "backward", "backward"),
        (library.nn.utils, "clip_grad_norm_", "clip"),
        (step.optimizer, "step", "update"),
        (step.optimizer, "zero_grad", "update"),
        (step.model, "zero_grad", "update"),
    ]
    saved = [(owner, name, owner.__dict__.get(name)) for owner, name, _ in targets]
    for owner, name, phase in targets:
        setattr(owner, name, _wrapped(totals, phase, getattr(owner, name)))
    try:
        yield totals
    finally:
        for owner, name, before in saved:
            if before is None:  # an instance's bound method: drop the wrapper, find it again
                delattr(owner, name)
            else:
                setattr(owner, name, before)


def phase_times(
    name: str, threads: int | None = 2, rounds: int = 7, steps: int = 3, quick: bool = False
) -> dict:
    """``{framework: {"step_ms", phase: ms per step}}`` for workload ``name``, both frameworks
    built from the same weights and timed in interleaved rounds; each phase a median over the
    rounds, "forward and the rest" the step's time less the other three."""
    from buildingai.backend import retain_freed_memory

    retain_freed_memory()  # as the suite and Trainer run
    module = WORKLOADS[name]
    config = module.sizes(quick)
    weights = module.initial_weights(config)
    steppers = {framework: module.build(framework, config, weights) for framework in FRAMEWORKS}
    calls = {"buildingai": in_default_arrangement(steppers["buildingai"].step),
             "pytorch": steppers["pytorch"].step}  # fmt: skip
    samples: dict = {framework: collections.defaultdict(list) for framework in FRAMEWORKS}
    with thread_limit(threads):
        for call in calls.values():
            for _ in range(2):
                call()
        for _ in range(rounds):
            for framework, call in calls.items():
                if not quick:
                    time.sleep(SETTLE_SECONDS)
                call()  # wakes the framework's own threads again
                with timing_phases(framework, steppers[framework]) as totals:
                    started = time.perf_counter()
                    for _ in range(steps):
                        call()
                    elapsed = time.perf_counter() - started
                measured = samples[framework]
                measured["step_ms"].append(elapsed / steps * 1e3)
                for phase in PHASES[1:]:
                    measured[phase].append(totals[phase] / steps * 1e3)
                rest = elapsed - sum(totals[phase] for phase in PHASES[1:])
                measured[PHASES[0]].append(rest / steps * 1e3)
    return {
        framework: {key: statistics.median(values) for key, values in measured.items()}
        for framework, measured in samples.items()
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workload", choices=sorted(WORKLOADS))
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    accelerate()
    found = phase_times(args.workload, args.threads, args.rounds, args.steps, args.quick)
    ours, theirs = found["buildingai"], found["pytorch"]
    rows = [
        [key, f"{ours[key]:.2f}", f"{theirs[key]:.2f}",
         f"{ours[key] / theirs[key]:.2f}" if theirs[key] > 0 else "—"]
        for key in ("step_ms", *PHASES)
    ]  # fmt: skip
    rows[0][0] = "whole step"
    print(f"{args.workload} at {args.threads} thread(s), ms per step (medians of "
          f"{args.rounds} rounds of {args.steps} steps)")  # fmt: skip
    print(format_table(["phase", "buildingai ms", "pytorch ms", "ours / torch"], rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

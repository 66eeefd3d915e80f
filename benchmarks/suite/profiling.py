"""cProfile of BuildingAI's training step: where the Python time goes, per workload."""

from __future__ import annotations

import cProfile
import io
import pstats

from .harness import thread_limit
from .train import WORKLOADS


def profile_step(name: str, quick: bool, steps: int = 5, top: int = 25) -> str:
    """The ``top`` functions by own time over ``steps`` BuildingAI training steps (after two
    warm-up steps), on one thread, as pstats text."""
    stepper = WORKLOADS[name].steppers(quick)["buildingai"]
    with thread_limit(1):
        for _ in range(2):
            stepper.step()
        profiler = cProfile.Profile()
        profiler.enable()
        for _ in range(steps):
            stepper.step()
        profiler.disable()
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out)
    stats.sort_stats("tottime").print_stats(top)
    text = out.getvalue()
    # keep the table, drop pstats' preamble of blank lines
    lines = [line for line in text.splitlines() if line.strip()]
    return f"{steps} steps\n" + "\n".join(lines)

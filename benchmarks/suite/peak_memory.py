"""Peak resident memory of a real training workload, one process per framework: the process
imports one library only, builds the model (the library's own initialisation), runs ``steps``
training steps on one thread and reports its peak resident set before the first step and after
the last.

The peak is the process's own high-water mark, ``VmHWM`` of ``/proc/self/status``, where Linux
has it. ``resource.getrusage(RUSAGE_SELF).ru_maxrss`` would read the suite's process instead
when that is larger: a child starts as a copy of the process that forks it, and Linux keeps that
copy's peak in ``ru_maxrss`` across ``exec``, so a child of a suite holding 3 GiB reports 3 GiB
whatever it does. ``ru_maxrss`` stays the fallback elsewhere.

Run: ``python -m benchmarks.suite.peak_memory WORKLOAD IMPLEMENTATION [--steps N] [--quick]``
(prints one JSON line); ``measure`` runs it for each implementation.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# torch.compile is left out: its process holds the compiler (Dynamo, Inductor, a C++ toolchain's
# outputs), hundreds of MiB that are not the training step's.
IMPLEMENTATIONS = ("buildingai", "buildingai compiled", "pytorch")
STEPS = 5


def _peak_mib() -> float:
    """This process's peak resident set since it started its program, in MiB."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024  # kB
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def _stepper(name: str, implementation: str, quick: bool):
    from .real_workloads import WORKLOADS

    module = WORKLOADS[name]
    config = module.sizes(quick)
    if implementation == "pytorch":
        import torch

        torch.set_num_threads(1)
        return module.build("pytorch", config)
    from threadpoolctl import threadpool_limits

    import buildingai
    from buildingai.backend import retain_freed_memory

    if os.environ.get("BUILDINGAI_ACCEL", "").strip() == "":
        buildingai.accel.enable(quiet=True)  # as the suite runs it
    retain_freed_memory()  # as the suite and Trainer run
    buildingai.set_num_threads(1)
    threadpool_limits(limits=1, user_api="blas")
    stepper = module.build("buildingai", config)
    if implementation == "buildingai compiled":
        from .from_source import buildingai_compiled

        stepper = buildingai_compiled(stepper)
    return stepper


def peak(name: str, implementation: str, steps: int = STEPS, quick: bool = False) -> dict:
    """In this process: ``{"before_mib", "peak_mib", "torch_loaded"}``."""
    stepper = _stepper(name, implementation, quick)
    before = _peak_mib()
    for _ in range(steps):
        float(stepper.step().item())
    return {
        "before_mib": before,
        "peak_mib": _peak_mib(),
        "torch_loaded": "torch" in sys.modules,
    }


def measure(name: str, quick: bool = False, steps: int = STEPS) -> dict:
    """``{implementation: peak(...)}``, each in a fresh process; an implementation whose process
    fails reports ``{"error": its last line}``. With ``quick`` the processes run side by side:
    each reads its own high-water mark, and the tiny models fit in memory together."""
    results, running = {}, {}
    for implementation in IMPLEMENTATIONS:
        base = [sys.executable, "-m", "benchmarks.suite.peak_memory", name, implementation]
        command = base + ["--steps", str(steps)] + (["--quick"] if quick else [])
        if not quick and implementation.startswith("buildingai"):
            # a first step in a process of its own fills numba's disk cache: the measured
            # process loads the kernels' machine code, where a cold cache would add LLVM's
            # compile memory (paid once per machine, not by a training step) to its peak
            subprocess.run(base + ["--steps", "1"], cwd=ROOT, capture_output=True)
        running[implementation] = subprocess.Popen(
            command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        if not quick:  # one at a time: the full-size models need the memory to themselves
            results[implementation] = _result(running.pop(implementation))
    results |= {implementation: _result(process) for implementation, process in running.items()}
    return results


def _result(process: subprocess.Popen) -> dict:
    """The finished process's ``peak(...)`` line, or ``{"error": ...}``."""
    stdout, stderr = process.communicate()
    if process.returncode != 0:
        return {"error": _error_line(stderr)}
    return json.loads(stdout.strip().splitlines()[-1])


def _error_line(stderr: str) -> str:
    """The exception's own line of a traceback (not a help line after it)."""
    lines = [line for line in stderr.strip().splitlines() if line and not line[0].isspace()]
    found = [line for line in lines if re.match(r"^[\w.]+(Error|Exception)\b", line)]
    return (found or lines or ["no output"])[-1].split(" at /")[0]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workload")
    parser.add_argument("implementation", choices=IMPLEMENTATIONS)
    parser.add_argument("--steps", type=int, default=STEPS)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    print(json.dumps(peak(args.workload, args.implementation, args.steps, args.quick)))
    return 0


if __name__ == "__main__":
    sys.exit(main())

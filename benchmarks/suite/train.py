"""The training workloads (``mlp``, ``cnn``, ``transformer``): cross-check, memory, timing."""

from __future__ import annotations

from . import cnn, mlp, transformer
from .harness import cross_check, step_peak_bytes, thread_limit, time_interleaved

WORKLOADS = {module.NAME: module for module in (mlp, cnn, transformer)}


def run(name: str, quick: bool, threads: list[int | None]) -> list[dict]:
    """Cross-check the three implementations of workload ``name`` (raises ``CrossCheckError``
    when they are not the same model), then time one training step of each, interleaved, at
    each thread count."""
    module = WORKLOADS[name]
    check = cross_check(name, module.steppers(quick), adam=module.ADAM)
    steppers = module.steppers(quick)  # fresh, from the initial weights
    candidates = {impl: stepper.step for impl, stepper in steppers.items()}
    for function in candidates.values():  # optimizer state exists from here on
        function()
    # steady-state step: optimizer state already allocated, so this is the step's own working
    # memory (activations, saved tensors, gradients, temporaries)
    peaks = {
        impl: step_peak_bytes(function)
        for impl, function in candidates.items()
        if impl != "pytorch"
    }
    records = []
    for count in threads:
        with thread_limit(count):
            times = time_interleaved(candidates, quick)
        records.append(
            {
                "workload": name,
                "case": f"{name} train step, {_describe(module, quick)}",
                "threads": count,
                "unit": "ms",
                "times": times,
                "peak_bytes": peaks,
                "cross_check": check,
                "notes": [],
            }
        )
    return records


def _describe(module, quick: bool) -> str:
    return f"batch {module.sizes(quick)['batch']}"

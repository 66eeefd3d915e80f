"""The training workloads (``mlp``, ``cnn``, ``transformer``): cross-check, memory, timing."""

from __future__ import annotations

from . import cnn, mlp, transformer, transformer_gelu
from .frameworks import CompiledBuildingAIStep
from .harness import cross_check, step_peak_bytes, thread_limit, time_interleaved

WORKLOADS = {module.NAME: module for module in (mlp, cnn, transformer, transformer_gelu)}
COMPILED = "buildingai compiled"


def with_compiled(steppers: dict) -> dict:
    """The workload's implementations plus BuildingAI's step compiled (a fresh copy of the
    BuildingAI model, optimizer and batch)."""
    eager = steppers["buildingai"]
    compiled = CompiledBuildingAIStep(eager.model, eager.optimizer, eager.inputs.numpy(),
                                      eager.target.numpy())  # fmt: skip
    return steppers | {COMPILED: compiled}


def run(name: str, quick: bool, threads: list[int | None]) -> list[dict]:
    """Cross-check the three implementations of workload ``name`` (raises ``CrossCheckError``
    when they are not the same model), then time one training step of each, interleaved, at
    each thread count."""
    module = WORKLOADS[name]
    fresh = module.steppers(quick)
    checked = fresh | {COMPILED: with_compiled(module.steppers(quick))[COMPILED]}
    check = cross_check(name, checked, adam=module.ADAM)
    steppers = module.steppers(quick)  # fresh, from the initial weights
    steppers[COMPILED] = with_compiled(module.steppers(quick))[COMPILED]
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

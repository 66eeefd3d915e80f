"""The training workloads (``mlp``, ``cnn``, ``transformer``): cross-check, memory, timing."""

from __future__ import annotations

from . import cnn, mlp, transformer, transformer_gelu
from .frameworks import CompiledBuildingAIStep
from .harness import (
    ONE_POOL,
    OnePoolStep,
    cross_check,
    outside_one_pool,
    step_peak_bytes,
    thread_limit,
    time_interleaved,
    with_one_pool,
)

WORKLOADS = {module.NAME: module for module in (mlp, cnn, transformer, transformer_gelu)}
COMPILED = "buildingai compiled"


def with_compiled(steppers: dict) -> dict:
    """The workload's implementations plus BuildingAI's step compiled (a fresh copy of the
    BuildingAI model, optimizer and batch)."""
    eager = steppers["buildingai"]
    compiled = CompiledBuildingAIStep(eager.model, eager.optimizer, eager.inputs.numpy(),
                                      eager.target.numpy())  # fmt: skip
    return steppers | {COMPILED: compiled}


def _steppers(module, quick: bool, pool_threads: int | None) -> dict:
    """Fresh steppers of every implementation, the compiled step among them, and BuildingAI's
    eager and compiled steps once more for the one-pool mode at ``pool_threads`` threads."""
    steppers = module.steppers(quick)
    steppers[COMPILED] = with_compiled(module.steppers(quick))[COMPILED]
    if pool_threads is not None:
        steppers[f"buildingai {ONE_POOL}"] = OnePoolStep(
            module.steppers(quick)["buildingai"], pool_threads
        )
        steppers[f"{COMPILED} {ONE_POOL}"] = OnePoolStep(
            with_compiled(module.steppers(quick))[COMPILED], pool_threads
        )
    return steppers


def run(name: str, quick: bool, threads: list[int | None]) -> list[dict]:
    """Cross-check the three implementations of workload ``name`` (raises ``CrossCheckError``
    when they are not the same model), then time one training step of each, interleaved, at
    each thread count."""
    module = WORKLOADS[name]
    pool_threads = max((count for count in threads if count and count > 1), default=None)
    checked = _steppers(module, quick, pool_threads)
    check = cross_check(name, checked, adam=module.ADAM)
    steppers = _steppers(module, quick, pool_threads)  # fresh, from the initial weights
    candidates = {  # a OnePoolStep switches the mode on itself
        impl: stepper.step if ONE_POOL in impl else outside_one_pool(stepper.step)
        for impl, stepper in steppers.items()
    }
    for function in candidates.values():  # optimizer state exists from here on
        function()
    # steady-state step: optimizer state already allocated, so this is the step's own working
    # memory (activations, saved tensors, gradients, temporaries)
    peaks = {
        impl: step_peak_bytes(function)
        for impl, function in candidates.items()
        if impl != "pytorch"
    }
    plain = {impl: steppers[impl].step for impl in steppers if ONE_POOL not in impl}
    pooled = {impl: steppers[f"{impl} {ONE_POOL}"].stepper.step for impl in ("buildingai", COMPILED)
              if f"{impl} {ONE_POOL}" in steppers}  # fmt: skip
    records = []
    for count in threads:
        with thread_limit(count):
            times = time_interleaved(with_one_pool(plain, pooled, count), quick)
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

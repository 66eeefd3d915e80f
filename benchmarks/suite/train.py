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


def _steppers(module, quick: bool, pooled: bool) -> dict:
    """Fresh steppers of every implementation, the compiled step among them, and with
    ``pooled`` BuildingAI's eager and compiled steps once more, for the one-pool mode."""
    steppers = module.steppers(quick)
    steppers[COMPILED] = with_compiled(module.steppers(quick))[COMPILED]
    if pooled:
        steppers[f"buildingai {ONE_POOL}"] = module.steppers(quick)["buildingai"]
        steppers[f"{COMPILED} {ONE_POOL}"] = with_compiled(module.steppers(quick))[COMPILED]
    return steppers


def _in_their_modes(steppers: dict, pool_threads: int | None) -> dict:
    """The steppers as they run: the one-pool ones in that mode at ``pool_threads`` threads."""
    return {impl: OnePoolStep(stepper, pool_threads) if impl.endswith(ONE_POOL) else stepper
            for impl, stepper in steppers.items()}  # fmt: skip


def run(name: str, quick: bool, threads: list[int | None]) -> list[dict]:
    """Cross-check the three implementations of workload ``name`` (raises ``CrossCheckError``
    when they are not the same model), then time one training step of each, interleaved, at
    each thread count."""
    module = WORKLOADS[name]
    pool_threads = max((count for count in threads if count and count > 1), default=None)
    pooled = pool_threads is not None
    checked = _in_their_modes(_steppers(module, quick, pooled), pool_threads)
    check = cross_check(name, checked, adam=module.ADAM)
    steppers = _steppers(module, quick, pooled)  # fresh, from the initial weights
    candidates = {  # a OnePoolStep switches the mode on itself
        impl: stepper.step if ONE_POOL in impl else outside_one_pool(stepper.step)
        for impl, stepper in _in_their_modes(steppers, pool_threads).items()
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
    # with_one_pool names a pooled function f"{name} {ONE_POOL}" and switches the mode per count
    plain = {impl: s.step for impl, s in steppers.items() if not impl.endswith(ONE_POOL)}
    pooled_steps = {impl.removesuffix(f" {ONE_POOL}"): s.step for impl, s in steppers.items()
                    if impl.endswith(ONE_POOL)}  # fmt: skip
    records = []
    for count in threads:
        with thread_limit(count):
            times = time_interleaved(with_one_pool(plain, pooled_steps, count), quick)
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

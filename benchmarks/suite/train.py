"""The training workloads (``mlp``, ``cnn``, ``transformer``): cross-check, memory, timing."""

from __future__ import annotations

from . import cnn, mlp, transformer, transformer_gelu
from .frameworks import CompiledBuildingAIStep
from .harness import (
    BLAS_THREADS,
    BlasThreadsStep,
    cross_check,
    in_default_arrangement,
    step_peak_bytes,
    thread_limit,
    time_interleaved,
    with_blas_threads,
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


def _steppers(module, quick: bool, alternative: bool) -> dict:
    """Fresh steppers of every implementation, the compiled step among them, and with
    ``alternative`` BuildingAI's eager and compiled steps once more, for the products on BLAS's
    threads."""
    steppers = module.steppers(quick)
    steppers[COMPILED] = with_compiled(module.steppers(quick))[COMPILED]
    if alternative:
        steppers[f"buildingai {BLAS_THREADS}"] = module.steppers(quick)["buildingai"]
        steppers[f"{COMPILED} {BLAS_THREADS}"] = with_compiled(module.steppers(quick))[COMPILED]
    return steppers


def _in_their_modes(steppers: dict) -> dict:
    """The steppers as they run: the BLAS-threads ones in that mode."""
    return {impl: BlasThreadsStep(stepper) if impl.endswith(BLAS_THREADS) else stepper
            for impl, stepper in steppers.items()}  # fmt: skip


def run(name: str, quick: bool, threads: list[int | None]) -> list[dict]:
    """Cross-check the three implementations of workload ``name`` (raises ``CrossCheckError``
    when they are not the same model), then time one training step of each, interleaved, at
    each thread count."""
    module = WORKLOADS[name]
    alternative = any(count and count > 1 for count in threads)
    checked = _in_their_modes(_steppers(module, quick, alternative))
    check = cross_check(name, checked, adam=module.ADAM)
    steppers = _steppers(module, quick, alternative)  # fresh, from the initial weights
    candidates = {  # a BlasThreadsStep switches the mode on itself
        impl: stepper.step if BLAS_THREADS in impl else in_default_arrangement(stepper.step)
        for impl, stepper in _in_their_modes(steppers).items()
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
    # with_blas_threads names an alternative f"{name} {BLAS_THREADS}" and switches per count
    plain = {impl: s.step for impl, s in steppers.items() if not impl.endswith(BLAS_THREADS)}
    alternatives = {impl.removesuffix(f" {BLAS_THREADS}"): s.step for impl, s in steppers.items()
                    if impl.endswith(BLAS_THREADS)}  # fmt: skip
    records = []
    for count in threads:
        with thread_limit(count):
            times = time_interleaved(with_blas_threads(plain, alternatives, count), quick)
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

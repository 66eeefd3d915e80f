"""The real training workloads (``gpt``, ``resnet18``, ``lstm-lm``): models written for
PyTorch, run on BuildingAI from the same source, cross-checked, then timed side by side in four
forms — BuildingAI eager and compiled (``buildingai.compile``), PyTorch eager and
``torch.compile`` (inductor) — with each compilation timed on its own, and the peak resident
memory of each library's process.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator

from . import gpt, lstm_lm, peak_memory, resnet18
from .from_source import TimedFirstCall, buildingai_compiled, torch_compiled
from .harness import (
    CrossCheckError,
    cross_check,
    in_default_arrangement,
    thread_limit,
    time_interleaved,
)

WORKLOADS = {module.NAME: module for module in (gpt, resnet18, lstm_lm)}
EAGER, COMPILED = "buildingai", "buildingai compiled"
TORCH, TORCH_COMPILED = "pytorch", "torch.compile"
REPEATS = 7  # interleaved repetitions per thread count (each about 0.25 s of steps)


def options(module, quick: bool) -> dict:
    """The workload's cross-check settings (Adam's round-off filter, float32 tolerances)."""
    found = {"adam": module.ADAM}
    if hasattr(module, "ADAM_NOISE_GRADIENT"):
        found["adam_noise_gradient"] = module.ADAM_NOISE_GRADIENT
    if hasattr(module, "cross_check_options"):
        found |= module.cross_check_options(quick)
    return found


@contextlib.contextmanager
def cold_inductor_cache() -> Iterator[None]:
    """An empty on-disk cache for Inductor, so that ``torch.compile``'s time is a first
    compilation's, not a cache hit left by an earlier run."""
    previous = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
    with tempfile.TemporaryDirectory(prefix="inductor-") as directory:
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = directory
        try:
            yield
        finally:
            if previous is None:
                os.environ.pop("TORCHINDUCTOR_CACHE_DIR", None)
            else:
                os.environ["TORCHINDUCTOR_CACHE_DIR"] = previous


def checked_implementations(
    module, quick: bool, torch_compile: bool = True, log=lambda text: None
) -> tuple[dict, dict]:
    """The four forms of one step, each one step past the shared initial weights, and the
    cross-check's report. BuildingAI eager is compared with PyTorch eager; each compiled form
    then with a fresh PyTorch eager step of its own (``torch_compile``: ``torch.compile`` too).
    Raises ``CrossCheckError`` when a form trains a different model; a compiled form that
    cannot run (a compiler's refusal, no C++ toolchain for Inductor) is left out and its error
    kept in the report under ``"left_out"``."""
    config = module.sizes(quick)
    weights = module.initial_weights(config)
    settings = options(module, quick)
    steppers = {
        EAGER: module.build("buildingai", config, weights),
        TORCH: module.build("pytorch", config, weights),
    }
    check = cross_check(module.NAME, steppers, **settings)
    check["left_out"] = {}
    compilers = {COMPILED: lambda: buildingai_compiled(module.build("buildingai", config, weights))}
    if torch_compile:
        compilers[TORCH_COMPILED] = lambda: torch_compiled(module.build("pytorch", config, weights))
    else:
        check["left_out"][TORCH_COMPILED] = "not run with --quick"
    for form, make in compilers.items():
        pair = {TORCH: module.build("pytorch", config, weights), form: make()}
        try:
            second = cross_check(module.NAME, pair, **settings)
        except CrossCheckError:
            raise
        except Exception as error:  # noqa: BLE001 - a compiler's refusal is reported, not fatal
            line = (str(error).strip().splitlines() or [""])[0].split(" at /")[0]
            check["left_out"][form] = f"{type(error).__name__}: {line}"
            log(f"{module.NAME}: {form} left out — {check['left_out'][form]}")
            continue
        steppers[form] = pair[form]
        check["losses"][form] = second["losses"][form]
        check["max_parameter_error"] |= second["max_parameter_error"]
        check["roundoff_entries_skipped"] += second["roundoff_entries_skipped"]
    return steppers, check


def run(name: str, quick: bool, threads: list[int | None], log=lambda text: None) -> list[dict]:
    """Cross-check, compile and time workload ``name`` at each thread count (compiling afresh
    at each: Inductor fixes its thread count in the code it generates; Inductor's cache starts
    empty for the workload's first thread count and keeps what that compiled for the next), and
    measure each
    library's peak memory once, in processes of its own. ``quick``: tiny sizes, two steps per
    process, and no ``torch.compile`` (its tens of seconds of compilation are no quick check)."""
    module = WORKLOADS[name]
    config = module.sizes(quick)
    memory = peak_memory.measure(name, quick, steps=2 if quick else peak_memory.STEPS)
    records = []
    with cold_inductor_cache():  # this workload's first compilation starts from nothing
        for count in threads:
            with thread_limit(count):
                steppers, check = checked_implementations(module, quick, not quick, log)
                candidates = {impl: in_default_arrangement(s.step) for impl, s in steppers.items()}
                times = time_interleaved(candidates, quick, repeats=REPEATS)
            first_call_s = {
                impl: stepper.first_call_s
                for impl, stepper in steppers.items()
                if isinstance(stepper, TimedFirstCall)
            }
            records.append(
                {
                    "workload": name,
                    "case": f"{name} train step, {module.describe(config)}",
                    "threads": count,
                    "unit": "ms",
                    "times": times,
                    "items_per_step": module.items_per_step(config),
                    "item": module.UNIT,
                    "first_call_s": first_call_s,
                    "peak_rss": memory,
                    "cross_check": check,
                    "notes": [],
                }
            )
    return records

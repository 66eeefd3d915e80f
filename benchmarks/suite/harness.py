"""How the suite runs a workload: thread limits, the cross-check that every implementation is
the same model, interleaved timing, and per-step memory.

A training workload provides, for each implementation, an object with ``step()`` (one full
training step, returning the loss) and ``state_dict()`` (parameters as NumPy arrays under
PyTorch's names and layouts). All three start from the same weights and the same batch.
"""

from __future__ import annotations

import contextlib
import time
import tracemalloc
from collections.abc import Callable, Iterator
from typing import Protocol

import numpy as np

from ..common import measure

IMPLEMENTATIONS = ("buildingai", "pytorch", "numpy")
LOSS_TOLERANCE = 1e-4  # absolute, on the first-step loss
PARAMETER_TOLERANCE = 1e-4  # max |a - b| over max |b|, per tensor, after one step
# Entries whose PyTorch gradient is below ROUNDOFF_GRADIENT of the tensor's largest, or below
# ADAM_NOISE_GRADIENT (ten times Adam's eps), are left out of the parameter comparison. Their
# gradient is zero or nearly so (a key projection's bias has true gradient zero: softmax ignores
# a shift shared by all keys), what the implementations compute there is round-off, and Adam's
# step lr * g / (|g| + eps) turns round-off of that size into a step of any size up to lr.
ROUNDOFF_GRADIENT = 1e-6
ADAM_NOISE_GRADIENT = 1e-7


class CrossCheckError(AssertionError):
    """Two implementations of a workload do not compute the same model."""


class TrainStep(Protocol):
    def step(self): ...

    def state_dict(self) -> dict: ...


@contextlib.contextmanager
def thread_limit(threads: int | None) -> Iterator[None]:
    """Run with ``threads`` BLAS threads (threadpoolctl) for NumPy and BuildingAI and the same
    number of PyTorch intra-op threads. BuildingAI's own element-wise threads stay at their
    default, 1: with OpenBLAS's idle threads spinning after every GEMM, more measured slower
    (docs/design_notes/performance.md)."""
    import torch
    from threadpoolctl import threadpool_limits

    if threads is None:
        yield
        return
    torch_threads = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        with threadpool_limits(limits=threads, user_api="blas"):
            try:
                yield
            finally:
                leave_one_pool()  # a one-pool candidate may have run last
    finally:
        torch.set_num_threads(torch_threads)


ONE_POOL = "one pool"  # a candidate name's suffix: run in BuildingAI's one-pool mode


def one_pool(function: Callable[[], object], threads: int) -> Callable[[], object]:
    """``function`` run with ``buildingai.set_num_threads(threads, gemm=True)``: BuildingAI's
    threads run the GEMMs too (BLAS held at one thread), as PyTorch's one intra-op pool does.
    The mode is switched on only when it is not on already: within a timing repetition that
    happens in measure's untimed first call."""
    import buildingai as bai
    from buildingai.backend import threads as bai_threads

    def run():
        if not bai_threads.one_pool() or bai.get_num_threads() != threads:
            bai.set_num_threads(threads, gemm=True)
        return function()

    return run


def leave_one_pool() -> None:
    """BuildingAI's threads back at their default and BLAS's own threads, if the mode is on."""
    import buildingai as bai
    from buildingai.backend import threads as bai_threads

    if bai_threads.one_pool():
        bai.set_num_threads(None)


def outside_one_pool(function: Callable[[], object]) -> Callable[[], object]:
    """``function`` run with BuildingAI's threads at their default and BLAS's own threads."""

    def run():
        leave_one_pool()
        return function()

    return run


def with_one_pool(candidates: dict, pooled: dict, threads: int | None) -> dict:
    """``candidates`` outside the one-pool mode plus, above one thread, ``pooled`` (name ->
    function) in it, under the names ``f"{name} {ONE_POOL}"``."""
    timed = {name: outside_one_pool(function) for name, function in candidates.items()}
    if threads is not None and threads > 1:
        for name, function in pooled.items():
            timed[f"{name} {ONE_POOL}"] = one_pool(function, threads)
    return timed


class OnePoolStep:
    """A training step (``TrainStep``) run in the one-pool mode at ``threads`` threads."""

    def __init__(self, stepper, threads: int):
        self.stepper = stepper
        self.step = one_pool(stepper.step, threads)

    def __getattr__(self, name):  # state_dict, gradients, ...
        return getattr(self.stepper, name)


def scalar(value) -> float:
    """A loss returned by any implementation as a Python float."""
    return float(value.item()) if hasattr(value, "item") else float(value)


def cross_check(workload: str, steppers: dict[str, TrainStep], adam: bool = False) -> dict:
    """Run one step of each implementation from identical state and compare the losses and
    the updated parameters with PyTorch's (``adam``: the optimizer divides by |g| + eps, so
    entries with gradients near eps are round-off and left out). Raises ``CrossCheckError`` naming the workload, the
    implementation, the tensor and the error when they differ."""
    losses = {name: scalar(stepper.step()) for name, stepper in steppers.items()}
    states = {name: stepper.state_dict() for name, stepper in steppers.items()}
    reference = "pytorch"
    gradients = steppers[reference].gradients()
    report = {"losses": losses, "max_parameter_error": {}, "roundoff_entries_skipped": 0}
    for name in steppers:
        if name == reference:
            continue
        if abs(losses[name] - losses[reference]) > LOSS_TOLERANCE:
            raise CrossCheckError(
                f"[{workload}] first-step loss of {name} is {losses[name]:.6f}, PyTorch's is "
                f"{losses[reference]:.6f} (tolerance {LOSS_TOLERANCE}): the implementations "
                "do not compute the same model; no timing is reported for it"
            )
        worst = 0.0
        ours, theirs = states[name], states[reference]
        if set(ours) != set(theirs):
            raise CrossCheckError(
                f"[{workload}] {name} has parameters {sorted(set(ours) ^ set(theirs))} that "
                "PyTorch's model does not share (or the reverse)"
            )
        for key, expected in theirs.items():
            actual = np.asarray(ours[key])
            if actual.shape != expected.shape:
                raise CrossCheckError(
                    f"[{workload}] {name} parameter {key!r} has shape {actual.shape}, PyTorch's "
                    f"{expected.shape}"
                )
            scale = float(np.max(np.abs(expected))) if expected.size else 0.0
            difference = np.abs(actual - expected)
            gradient = gradients.get(key)
            if gradient is not None and gradient.size:
                magnitude = np.abs(gradient)
                roundoff = magnitude <= max(
                    ROUNDOFF_GRADIENT * float(np.max(magnitude)),
                    ADAM_NOISE_GRADIENT if adam else 0.0,
                )
                difference[roundoff] = 0.0
                report["roundoff_entries_skipped"] += int(np.count_nonzero(roundoff)) // (
                    len(steppers) - 1
                )
            error = float(np.max(difference)) / scale if scale else 0.0
            worst = max(worst, error)
            if error > PARAMETER_TOLERANCE:
                raise CrossCheckError(
                    f"[{workload}] after one step, {name} parameter {key!r} differs from "
                    f"PyTorch's by {error:.2e} of its largest value (tolerance "
                    f"{PARAMETER_TOLERANCE}): the implementations do not train the same model"
                )
        report["max_parameter_error"][name] = worst
    return report


def step_peak_bytes(function: Callable[[], object]) -> int:
    """Peak bytes allocated (and seen by tracemalloc: Python objects and NumPy arrays) while
    ``function`` runs, above what was allocated before it started."""
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        before, _ = tracemalloc.get_traced_memory()
        function()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return max(0, peak - before)


def time_interleaved(
    candidates: dict[str, Callable[[], object]],
    quick: bool,
    target_seconds: float = 0.25,
    repeats: int = 11,
) -> dict:
    """Median, min and max seconds per call of each candidate, interleaved, after warm-up.

    The number of calls per repetition is chosen so the slowest candidate takes about
    ``target_seconds`` per repetition.
    """
    if quick:
        return measure(candidates, repeats=2, number=1, warmup=1, settle=0.0)
    slowest = 0.0
    for function in candidates.values():  # warm-up, and a first estimate of the step time
        function()
        start = time.perf_counter()
        function()
        slowest = max(slowest, time.perf_counter() - start)
    number = max(1, round(target_seconds / max(slowest, 1e-9)))
    return measure(candidates, repeats=repeats, number=number, warmup=1)

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
    """Run with ``threads`` BLAS threads (threadpoolctl) for NumPy, ``threads`` PyTorch intra-op
    threads, and BuildingAI in its default arrangement at ``threads`` threads
    (``buildingai.set_num_threads(threads)``: one pool where it has a BLAS of its own)."""
    import torch
    from threadpoolctl import threadpool_limits

    if threads is None:
        yield
        return
    torch_threads = torch.get_num_threads()
    torch.set_num_threads(threads)
    _arrangement.update(threads=threads, current=None)
    try:
        with threadpool_limits(limits=threads, user_api="blas"):
            try:
                yield
            finally:
                _arrangement.update(threads=None, current=None)
                _switch(None)
    finally:
        torch.set_num_threads(torch_threads)


BLAS_THREADS = "blas threads"  # a candidate name's suffix: products on NumPy's BLAS threads
DEFAULT = "default"
_arrangement = {"threads": None, "current": None}  # the count of this thread_limit, and the mode


def _switch(mode: str | None) -> None:
    """BuildingAI in ``mode``: DEFAULT (``set_num_threads(threads)``), BLAS_THREADS
    (``set_num_threads(1, gemm=False)``: one element-wise thread, the products on NumPy's BLAS
    at the threadpoolctl limit), or None (the process default), unless it is in it already."""
    import buildingai as bai

    if mode is not None and _arrangement["current"] == mode:
        return
    if mode == DEFAULT:
        bai.set_num_threads(_arrangement["threads"])
    elif mode == BLAS_THREADS:
        bai.set_num_threads(1, gemm=False)
    else:
        bai.set_num_threads(None)
    _arrangement["current"] = mode


def on_blas_threads(function: Callable[[], object]) -> Callable[[], object]:
    """``function`` run with the products on NumPy's BLAS threads and one element-wise thread
    (BuildingAI's default where it has no BLAS of its own). The switch happens only when the
    mode is not on already: within a timing repetition, in measure's untimed first call."""

    def run():
        _switch(BLAS_THREADS)
        return function()

    return run


def use_default_arrangement() -> None:
    """BuildingAI in its default arrangement at the thread limit's count, now: for work that is
    not run through ``in_default_arrangement`` (the limit alone does not set BuildingAI's
    threads)."""
    _switch(DEFAULT if _arrangement["threads"] is not None else None)


def in_default_arrangement(function: Callable[[], object]) -> Callable[[], object]:
    """``function`` run in BuildingAI's default arrangement at the thread limit's count."""

    def run():
        use_default_arrangement()
        return function()

    return run


def with_blas_threads(candidates: dict, alternatives: dict, threads: int | None) -> dict:
    """``candidates`` in the default arrangement plus, above one thread, ``alternatives`` (name
    -> function) on BLAS's threads, under the names ``f"{name} {BLAS_THREADS}"``."""
    timed = {name: in_default_arrangement(function) for name, function in candidates.items()}
    if threads is not None and threads > 1:
        for name, function in alternatives.items():
            timed[f"{name} {BLAS_THREADS}"] = on_blas_threads(function)
    return timed


class BlasThreadsStep:
    """A training step (``TrainStep``) run with the products on NumPy's BLAS threads."""

    def __init__(self, stepper):
        self.stepper = stepper
        self.step = on_blas_threads(stepper.step)

    def __getattr__(self, name):  # state_dict, gradients, ...
        return getattr(self.stepper, name)


def scalar(value) -> float:
    """A loss returned by any implementation as a Python float."""
    return float(value.item()) if hasattr(value, "item") else float(value)


def cross_check(
    workload: str,
    steppers: dict[str, TrainStep],
    adam: bool = False,
    adam_noise_gradient: float = ADAM_NOISE_GRADIENT,
    tolerances: dict[str, float] | None = None,
) -> dict:
    """Run one step of each implementation from identical state and compare the losses and
    the updated parameters with PyTorch's (``adam``: the optimizer divides by |g| + eps, so
    entries with gradients below ``adam_noise_gradient`` are round-off and left out), each
    parameter to PARAMETER_TOLERANCE of its largest value, or to ``tolerances[name]`` where that
    is larger (PyTorch's own float32 error on it, for a model that magnifies round-off). Raises
    ``CrossCheckError`` naming the workload, the implementation, the tensor and the error when
    they differ."""
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
                    adam_noise_gradient if adam else 0.0,
                )
                difference[roundoff] = 0.0
                report["roundoff_entries_skipped"] += int(np.count_nonzero(roundoff)) // (
                    len(steppers) - 1
                )
            error = float(np.max(difference)) / scale if scale else 0.0
            worst = max(worst, error)
            limit = max(PARAMETER_TOLERANCE, (tolerances or {}).get(key, 0.0))
            if error > limit:
                raise CrossCheckError(
                    f"[{workload}] after one step, {name} parameter {key!r} differs from "
                    f"PyTorch's by {error:.2e} of its largest value (tolerance "
                    f"{limit}): the implementations do not train the same model"
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

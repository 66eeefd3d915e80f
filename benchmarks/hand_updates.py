"""Updates training loops write by hand, outside the graph, against PyTorch and NumPy in the same
run: the SGD step ``p.data.add_(p.grad, alpha=-lr)``, PyTorch's single-tensor Adam step written
out as users copy it (``lerp_``, ``mul_``, ``addcmul_``, ``sqrt``, ``addcdiv_``), and
``clip_grad_norm_`` over gradients shaped like the LSTM language model's.

Candidates:
- ``buildingai``: as shipped (``vector_blas.add_scaled``, ``sum_of_squares`` and
  ``accel/updates.py`` where they take the call).
- ``bai reference``: the switches ``blas.vector`` and ``updates.fused`` off: the functions'
  own array paths.
- ``pytorch``: the same code on torch tensors.
- ``numpy``: the same math as in-place ufunc calls on the arrays, no framework: the lower bound.

Float32; each candidate updates its own copies, so every call does the same work. Run:
``python -m benchmarks.hand_updates [--quick] [--threads N] [--clock thread] [--json FILE]``;
``--clock thread`` times this thread's CPU time (meaningful at one thread).
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

import buildingai as bai

from .common import (
    accelerate,
    format_table,
    in_microseconds,
    measure,
    save_run,
    set_threads,
    settle_for,
)

LR, BETAS, EPS = 1e-3, (0.9, 0.999), 1e-8
# the LSTM language model's parameters (vocabulary 10000, width 256, 2 layers, tied decoder)
CLIP_SHAPES = (
    [(10000, 256), (1024, 256), (1024, 256), (1024, 256), (1024, 256), (1024,)]
    + [(1024,)] * 3
    + [(10000,)]
)


def adam_step(param, grad, exp_avg, exp_avg_sq, step: int) -> None:
    """torch.optim.adam's single-tensor step for one parameter, as users copy it."""
    exp_avg.lerp_(grad, 1 - BETAS[0])
    exp_avg_sq.mul_(BETAS[1]).addcmul_(grad, grad.conj(), value=1 - BETAS[1])
    step_size = LR / (1 - BETAS[0] ** step)
    denom = (exp_avg_sq.sqrt() / math.sqrt(1 - BETAS[1] ** step)).add_(EPS)
    param.addcdiv_(exp_avg, denom, value=-step_size)


def _numpy_adam_step(param, grad, exp_avg, exp_avg_sq, step: int):
    exp_avg += (1 - BETAS[0]) * (grad - exp_avg)
    exp_avg_sq *= BETAS[1]
    exp_avg_sq += (1 - BETAS[1]) * grad * grad
    denom = np.sqrt(exp_avg_sq) / math.sqrt(1 - BETAS[1] ** step) + EPS
    param -= LR / (1 - BETAS[0] ** step) * exp_avg / denom
    return param


def _numpy_clip(grads, max_norm: float) -> float:
    total = math.sqrt(sum(float(np.dot(g.reshape(-1), g.reshape(-1))) for g in grads))
    coefficient = max_norm / (total + 1e-6)
    if coefficient < 1.0:
        for g in grads:
            g *= coefficient
    return total


def _arrays(shapes, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(shape).astype(np.float32) for shape in shapes]


def _on_reference_paths(function):
    """``function`` with this benchmark's accelerations switched off (``blas.vector`` and
    ``updates.fused``): the functions' own array paths, everything else as shipped."""

    def run():
        blas = bai.accel.set_enabled("blas.vector", False)
        fused = bai.accel.set_enabled("updates.fused", False)
        try:
            return function()
        finally:
            bai.accel.set_enabled("blas.vector", blas)
            bai.accel.set_enabled("updates.fused", fused)

    return run


def _repeated(function, count: int):
    """``count`` calls of ``function`` in one: a switch is set once per repetition, not per call."""

    def run():
        for _ in range(count):
            function()

    return run


# Each candidate returns what it updated (the parameter, or the clipped gradients' norm), so
# that the candidates can be checked against each other.


def _sgd_candidates(size: int, torch) -> dict:
    param, grad = _arrays([(size,), (size,)], 0)
    steps = {}
    for name, library in (("buildingai", bai), ("bai reference", bai), ("pytorch", torch)):
        p, g = library.tensor(param.copy()), library.tensor(grad)
        steps[name] = lambda p=p, g=g: p.data.add_(g, alpha=-LR)
    p, g = param.copy(), grad
    return steps | {"numpy": lambda: np.add(p, g * np.float32(-LR), out=p)}


def _adam_candidates(size: int, torch) -> dict:
    param, grad = _arrays([(size,), (size,)], 1)
    steps = {}
    for name, library in (("buildingai", bai), ("bai reference", bai), ("pytorch", torch)):
        state = [library.tensor(param.copy()), library.tensor(grad)]
        state += [library.zeros(size), library.zeros(size)]
        steps[name] = lambda state=state, library=library: _no_grad(library, state)
    state = [param.copy(), grad, np.zeros(size, np.float32), np.zeros(size, np.float32)]
    return steps | {"numpy": lambda: _numpy_adam_step(*state, 2)}


def _no_grad(library, state):
    with library.no_grad():
        adam_step(*state, 2)
    return state[0]


def _clip_candidates(shapes, torch) -> dict:
    grads = _arrays(shapes, 2)
    steps = {}
    for name, library in (("buildingai", bai), ("bai reference", bai), ("pytorch", torch)):
        params = [library.zeros(*shape, requires_grad=True) for shape in shapes]
        for param, grad in zip(params, grads):
            param.grad = library.tensor(grad.copy())
        clip = library.nn.utils.clip_grad_norm_
        steps[name] = lambda params=params, clip=clip: clip(params, 1e9)  # the norm, no scaling
    copies = [g.copy() for g in grads]
    return steps | {"numpy": lambda: _numpy_clip(copies, 1e9)}


def run(quick: bool = False, threads: int | None = None, cpu_time: bool = False) -> list[dict]:
    import torch

    if threads:
        set_threads(threads)  # NumPy's BLAS and PyTorch
        bai.set_num_threads(threads)
    sizes = [256, 4096] if quick else [4096, 65536, 2_560_000]
    clip_shapes = [(16, 8), (8,)] if quick else CLIP_SHAPES
    cases = [(f"p.data.add_(g, alpha) on {n:,}", n, _sgd_candidates(n, torch)) for n in sizes]
    cases += [
        (f"Adam step written out on {n:,}", n, _adam_candidates(n, torch)) for n in sizes[-2:]
    ]
    values = sum(int(np.prod(shape)) for shape in clip_shapes)
    cases.append(
        (f"clip_grad_norm_ norm of {values:,}", values, _clip_candidates(clip_shapes, torch))
    )
    clock = time.thread_time if cpu_time else time.perf_counter
    records = []
    for case, values, candidates in cases:
        count = 1 if quick else min(200, max(1, 2_000_000 // values))  # about 2M values a call
        candidates = {name: _repeated(step, count) for name, step in candidates.items()}
        candidates["bai reference"] = _on_reference_paths(candidates["bai reference"])
        results = measure(
            candidates, repeats=2 if quick else 9, number=1, warmup=1,
            settle=settle_for(quick), clock=clock,
        )  # fmt: skip
        record = {"case": case, **in_microseconds(results, count)}
        for reference in ("pytorch", "numpy"):
            record[f"ratio to {reference}"] = (
                record["buildingai"]["median"] / record[reference]["median"]
            )
        records.append(record)
    return records


NAMES = ["buildingai", "bai reference", "pytorch", "numpy"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes, for tests")
    parser.add_argument("--threads", type=int, default=None, help="threads for both libraries")
    parser.add_argument("--clock", choices=("wall", "thread"), default="wall")
    parser.add_argument("--json", help="also write the records to this JSON file")
    args = parser.parse_args()
    accelerate()  # buildingai.accel on unless BUILDINGAI_ACCEL=0
    records = run(quick=args.quick, threads=args.threads, cpu_time=args.clock == "thread")
    rows = [
        [r["case"]]
        + [f"{r[name]['median']:.1f}" for name in NAMES]
        + [f"{r['ratio to pytorch']:.2f}", f"{r['ratio to numpy']:.2f}"]
        for r in records
    ]
    headers = ["case"] + [f"{name} us" for name in NAMES] + ["ours / PyTorch", "ours / NumPy"]
    print(format_table(headers, rows))
    print()
    save_run(records, args.json)


if __name__ == "__main__":
    main()

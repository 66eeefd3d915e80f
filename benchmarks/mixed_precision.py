"""Mixed precision and memory accounting on the CPU: step times side by side with PyTorch.

1. One training step (forward, backward, SGD update) of an MLP (784-1024-1024-10, batch 256)
   and of a 2-layer Transformer encoder (d_model 256, batch 16 x seq 64), in float32, under
   ``autocast(dtype="bfloat16")``, under ``autocast(dtype="float16")`` and with
   ``math_precision("bf16")``; PyTorch eager in float32 and under
   ``torch.autocast("cpu", dtype=torch.bfloat16)`` in the same run. For the MLP, the float32
   GEMMs of the step alone in NumPy are the lower bound. NumPy has no low-precision GEMM:
   BuildingAI multiplies bfloat16/float16 operands by widening them to float32, so autocast on
   the CPU adds casts and saves no arithmetic; the numbers say how much it costs.
   The peak of each step above the memory held before it comes from ``buildingai.memory``
   (the NumPy bound and PyTorch are not counted by it).
2. The cost of memory accounting (``buildingai.memory.stats``), which runs only while memory is
   tracked: the same float32 steps inside ``memory.tracking()``, interleaved with plain ones;
   and, since a difference of a few percent drowns in the noise of a shared machine, its
   calls per step times the CPU time of one call, as a share of the step's CPU time.

``--clock thread`` times on the calling thread's CPU clock with one thread everywhere: on a
loaded machine, wall-clock medians of a 2-thread step vary by a factor of several.

Run: ``env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python -m benchmarks.mixed_precision
[--quick] [--threads N | --clock thread] [--json]``.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import statistics
import time

import numpy as np

import buildingai as bai
from buildingai import memory, nn, optim
from buildingai.amp import autocast
from buildingai.autograd import dispatch
from buildingai.autograd import tensor as tensor_module
from buildingai.backend import accounting

from .common import accelerate, environment, format_table, measure, set_threads, settle_for


def _mlp(library, sizes):
    layers = []
    for index, (inputs, outputs) in enumerate(zip(sizes[:-1], sizes[1:])):
        layers.append(library.Linear(inputs, outputs))
        if index < len(sizes) - 2:
            layers.append(library.ReLU())
    return library.Sequential(*layers)


def _encoder(library, depth: int, width: int):
    layers = [
        library.TransformerEncoderLayer(width, 4, 4 * width, dropout=0.0, batch_first=True)
        for _ in range(depth)
    ]
    return library.Sequential(*layers)


def _cases(quick: bool) -> list[dict]:
    mlp = (64, 32, 32, 10) if quick else (784, 1024, 1024, 10)
    mlp_batch = 8 if quick else 256
    encoder = (1, 16, 2, 8) if quick else (2, 256, 16, 64)
    return [
        {
            "name": f"MLP {'-'.join(map(str, mlp))}, batch {mlp_batch}",
            "build": lambda library: _mlp(library, mlp),
            "shape": (mlp_batch, mlp[0]),
            "sizes": mlp,
        },
        {
            "name": f"Transformer encoder {encoder[0]} x d_model {encoder[1]}, "
            f"batch {encoder[2]} x seq {encoder[3]}",
            "build": lambda library: _encoder(library, encoder[0], encoder[1]),
            "shape": (encoder[2], encoder[3], encoder[1]),
            "sizes": None,
        },
    ]


def _step(model, optimizer, x: np.ndarray, scope):
    """One training step under ``scope()`` (a context manager factory)."""
    inputs = bai.tensor(x)

    def run():
        with scope():
            loss = (model(inputs).astype("float32") ** 2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

    return run


def _torch_step(torch, model, x: np.ndarray, low_precision: bool):
    inputs = torch.from_numpy(x)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)

    def run():
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=low_precision):
            loss = (model(inputs).float() ** 2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

    return run


def _numpy_gemms(sizes, x: np.ndarray):
    """The float32 GEMMs of an MLP step alone: forward, input and weight gradients."""
    rng = np.random.default_rng(0)
    weights = [rng.standard_normal((o, i)).astype(np.float32) for i, o in zip(sizes, sizes[1:])]

    def run():
        activations = [x]
        for weight in weights:
            activations.append(activations[-1] @ weight.T)
        grad = activations[-1]
        for weight, activation in zip(reversed(weights), reversed(activations[:-1])):
            _ = grad.T @ activation
            grad = grad @ weight

    return run


def _with_accounting(step):
    """``step`` with memory tracking on (``buildingai.memory.tracking``), as a profiler or the
    Trainer runs it."""

    def run():
        with memory.tracking():
            step()

    return run


def _step_peak(step) -> int:
    """The bytes a step adds at its peak above what is held before it (``memory.stats``)."""
    step()  # the optimizer state and gradients exist from the first step on
    gc.collect()
    with memory.tracking():
        memory.reset_peak()
        before = memory.stats()["current"]
        step()
        return memory.stats()["peak"] - before


def accounting_cost(step, calls: int = 20_000) -> dict:
    """What memory accounting adds to ``step``: its calls per step (new buffers and buffers
    already counted), the CPU time of each kind of call (a new buffer's includes its release),
    and their product as a share of the step's CPU time on this thread."""
    counts = {"new": 0, "counted": 0}
    record = accounting.record

    def counting(array, op, path):
        if array is not None:
            counts["counted" if accounting.buffer_of(array) is not None else "new"] += 1
        record(array, op, path)

    saved = dispatch._count_memory, tensor_module._count_memory, accounting.record
    dispatch._count_memory = tensor_module._count_memory = accounting.record = counting
    try:
        with memory.tracking():
            step()
    finally:
        dispatch._count_memory, tensor_module._count_memory, accounting.record = saved
    fresh = [np.empty(4, np.float32) for _ in range(calls)]
    start = time.thread_time()
    for array in fresh:
        record(array, "bench", ())
    counted_once = time.thread_time()
    for array in fresh:
        record(array, "bench", ())
    counted_twice = time.thread_time()
    del fresh  # the weakref callbacks run here (with NumPy's own deallocation)
    released = time.thread_time()
    per_new = (counted_once - start + released - counted_twice) / calls
    per_counted = (counted_twice - counted_once) / calls
    steps = [time.thread_time()]
    for _ in range(3):
        step()
        steps.append(time.thread_time())
    step_time = statistics.median(b - a for a, b in zip(steps, steps[1:]))
    added = counts["new"] * per_new + counts["counted"] * per_counted
    return {
        "new_buffers_per_step": counts["new"],
        "counted_buffers_per_step": counts["counted"],
        "seconds_per_new_buffer": per_new,
        "seconds_per_counted_buffer": per_counted,
        "step_seconds": step_time,
        "share_of_step": added / step_time,
    }


def bench_case(case: dict, quick: bool, clock: str = "wall") -> list[dict]:
    import torch

    x = np.random.default_rng(0).standard_normal(case["shape"]).astype(np.float32)
    model = case["build"](nn)
    optimizer = optim.SGD(model.parameters(), lr=1e-3)
    plain = _step(model, optimizer, x, contextlib.nullcontext)
    candidates = {
        "float32": plain,
        "autocast bfloat16": _step(model, optimizer, x, lambda: autocast(dtype="bfloat16")),
        "autocast float16": _step(model, optimizer, x, lambda: autocast(dtype="float16")),
        'math_precision("bf16")': _step(model, optimizer, x, lambda: bai.math_precision("bf16")),
        "float32, memory tracked": _with_accounting(plain),
        "pytorch float32": _torch_step(torch, case["build"](torch.nn), x, False),
        "pytorch autocast bfloat16": _torch_step(torch, case["build"](torch.nn), x, True),
    }
    if case["sizes"] is not None:
        candidates["numpy float32 GEMMs only"] = _numpy_gemms(case["sizes"], x)
    counted = [name for name in candidates if name not in ("float32, memory tracked",)]
    counted = [name for name in counted if not name.startswith(("pytorch", "numpy"))]
    peaks = {name: _step_peak(candidates[name]) for name in counted}
    if clock == "thread":
        timings = measure(
            candidates, 2 if quick else 7, 1 if quick else 3, settle=0.0, clock=time.thread_time
        )
    else:
        timings = measure(
            candidates,
            repeats=2 if quick else 7,
            number=1 if quick else 3,
            settle=settle_for(quick),
        )
    cost = accounting_cost(plain, calls=1000 if quick else 20_000)
    base = timings["float32"]["median"]
    torch_base = timings["pytorch float32"]["median"]
    return [
        {
            "case": case["name"],
            "run": name,
            "time": timing,
            "vs_float32": timing["median"] / base,
            "vs_pytorch_float32": timing["median"] / torch_base,
            "peak_bytes": peaks.get(name),
            "accounting": cost,
        }
        for name, timing in timings.items()
    ]


def run(quick: bool = False, clock: str = "wall") -> list[dict]:
    records = []
    for case in _cases(quick):
        records += bench_case(case, quick, clock)
    return records


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes: a check, not a timing")
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--json", action="store_true", help="print the records as JSON")
    parser.add_argument(
        "--clock",
        choices=("wall", "thread"),
        default="wall",
        help="thread: this thread's CPU time, with one thread everywhere (for a loaded machine)",
    )
    args = parser.parse_args()
    accelerate()  # buildingai.accel on unless BUILDINGAI_ACCEL=0
    set_threads(1 if args.clock == "thread" else args.threads)
    records = run(args.quick, args.clock)
    if args.json:
        print(json.dumps({"environment": environment(), "records": records}, indent=1))
        return
    print(json.dumps(environment(), indent=1))
    rows = [
        [
            record["case"],
            record["run"],
            f"{record['time']['median'] * 1e3:.2f} ms ({record['time']['min'] * 1e3:.2f}-"
            f"{record['time']['max'] * 1e3:.2f})",
            f"{record['vs_float32']:.2f}",
            f"{record['vs_pytorch_float32']:.2f}",
            "" if record["peak_bytes"] is None else f"{record['peak_bytes'] / 2**20:.1f} MiB",
        ]
        for record in records
    ]
    print(
        format_table(
            ["model", "run", "step (min-max)", "/ float32", "/ pytorch float32", "step peak"], rows
        )
    )
    for case in dict.fromkeys(record["case"] for record in records):
        cost = next(r["accounting"] for r in records if r["case"] == case)
        print(
            f"{case}: memory accounting per step: {cost['new_buffers_per_step']} new buffers "
            f"x {cost['seconds_per_new_buffer'] * 1e6:.2f} us + "
            f"{cost['counted_buffers_per_step']} already counted x "
            f"{cost['seconds_per_counted_buffer'] * 1e6:.2f} us = "
            f"{cost['share_of_step'] * 100:.2f}% of a {cost['step_seconds'] * 1e3:.1f} ms step"
        )


if __name__ == "__main__":
    main()

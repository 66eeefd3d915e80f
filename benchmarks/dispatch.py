"""Per-op overhead: microseconds per op for a small element-wise op and a small matmul, against
PyTorch eager and bare NumPy in the same run.

Modes:
- ``forward``: no gradient recording (inference).
- ``record``: forward while recording the graph (inputs require grad).
- ``forward+backward``: a chain of ``CHAIN`` ops, then one backward through it; time per op.

Each is measured with acceleration off (the default) and on (``buildingai.accel``: ops with
registered kernels ask them first), unless ``BUILDINGAI_ACCEL=0``.

Run: ``python -m benchmarks.dispatch [--quick] [--threads N] [--cpu-time]``. ``--cpu-time``
times each candidate in this thread's CPU time (``time.thread_time``) instead of wall-clock
time: on a machine other processes share, their load then does not count (meaningful where every
candidate runs on this one thread, as these small ops do).
"""

from __future__ import annotations

import argparse
import functools
import operator
import time

import numpy as np

import buildingai as bai

from .common import accelerate, format_table, in_microseconds, measure, save_run

CHAIN = 50


def _workloads(size: int):
    rng = np.random.default_rng(0)
    a_np = rng.standard_normal((size, size)).astype(np.float32)
    b_np = rng.standard_normal((size, size)).astype(np.float32)
    return a_np, b_np


def _candidates(kind: str, mode: str, a_np, b_np, torch):
    """Callables performing one op (or a chain of CHAIN ops for forward+backward)."""
    ours_a, ours_b = bai.tensor(a_np), bai.tensor(b_np, requires_grad=mode != "forward")
    theirs_a = torch.tensor(a_np)
    theirs_b = torch.tensor(b_np, requires_grad=mode != "forward")
    op = operator.add if kind == "add" else operator.matmul
    scale = np.float32(1.0 / np.sqrt(a_np.shape[0])) if kind == "matmul" else np.float32(1.0)

    if mode in ("forward", "record"):
        # ``partial`` of the C operator function: the timing loop calls the op itself, with no
        # Python frame of the benchmark's own around it (each would add the same ~0.05 µs to
        # every column and pull the ratios toward 1)
        return {
            "buildingai": functools.partial(op, ours_a, ours_b),
            "pytorch": functools.partial(op, theirs_a, theirs_b),
            "numpy": functools.partial(op, a_np, b_np),
        }

    ours_seed = bai.tensor(np.ones_like(a_np))
    theirs_seed = torch.ones_like(theirs_a)

    def ours_chain():
        y = ours_b
        for _ in range(CHAIN):
            y = op(y, ours_a) * scale if kind == "matmul" else op(y, ours_a)
        y.backward(ours_seed)

    def theirs_chain():
        y = theirs_b
        for _ in range(CHAIN):
            y = op(y, theirs_a) * scale if kind == "matmul" else op(y, theirs_a)
        y.backward(theirs_seed)

    def numpy_chain():  # the same math with hand-written backward: the lower bound
        y = b_np
        saved = []
        for _ in range(CHAIN):
            saved.append(y)
            y = op(y, a_np) * scale if kind == "matmul" else op(y, a_np)
        grad = np.ones_like(a_np)
        for _ in reversed(saved):
            grad = (grad * scale) @ a_np.T if kind == "matmul" else grad
        return grad

    return {"buildingai": ours_chain, "pytorch": theirs_chain, "numpy": numpy_chain}


def run(quick: bool = False, threads: int | None = None, cpu_time: bool = False) -> list[dict]:
    import torch

    if threads:
        torch.set_num_threads(threads)
    size = 16
    a_np, b_np = _workloads(size)
    records = []
    for kind in ("add", "matmul"):
        for mode in ("forward", "record", "forward+backward"):
            candidates = _candidates(kind, mode, a_np, b_np, torch)
            per_call = CHAIN if mode == "forward+backward" else 1
            # with backward, ops per call = CHAIN ops (+ the scale multiply for matmul)
            ops_per_call = per_call * (2 if (kind == "matmul" and per_call > 1) else 1)
            number = 2 if quick else (200 if per_call > 1 else 20000)
            # No pause between candidates: these tiny ops never wake BLAS threads, and a pause
            # lets the core clock down, which the next short repetition would then pay for.
            clock = time.thread_time if cpu_time else time.perf_counter
            results = measure(candidates, repeats=2 if quick else 11, number=number, settle=0.0,
                              clock=clock)  # fmt: skip
            record = {"op": f"{kind} ({size}x{size})", "mode": mode, "ops_per_call": ops_per_call}
            record.update(in_microseconds(results, ops_per_call))
            record["ratio_to_pytorch"] = (
                record["buildingai"]["median"] / record["pytorch"]["median"]
            )
            records.append(record)
    return records


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny run for tests")
    parser.add_argument("--threads", type=int, default=None, help="PyTorch intra-op threads")
    parser.add_argument("--json", help="also write the records to this JSON file")
    parser.add_argument("--cpu-time", action="store_true",
                        help="time in this thread's CPU time, not wall-clock time")  # fmt: skip
    args = parser.parse_args()
    # every op pays dispatch: measured in the default arrangement (acceleration off) and, unless
    # BUILDINGAI_ACCEL=0, with acceleration on, where ops with registered kernels ask them first
    arrangements = (False, True) if accelerate() else (False,)
    records = []
    for on in arrangements:
        with bai.accel.enabled(on):
            for record in run(quick=args.quick, threads=args.threads, cpu_time=args.cpu_time):
                record["acceleration"] = "on" if on else "off (the default)"
                records.append(record)
    rows = [
        [
            r["op"],
            r["mode"],
            f"{r['buildingai']['median']:.2f}",
            f"{r['pytorch']['median']:.2f}",
            f"{r['numpy']['median']:.2f}",
            f"{r['ratio_to_pytorch']:.2f}",
            r["acceleration"],
        ]
        for r in records
    ]
    print(
        format_table(
            [
                "op",
                "mode",
                "BuildingAI µs/op",
                "PyTorch µs/op",
                "NumPy µs/op",
                "BuildingAI / PyTorch",
                "acceleration",
            ],
            rows,
        )
    )
    print()
    save_run(records, args.json)


if __name__ == "__main__":
    main()

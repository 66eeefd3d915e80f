"""Per-call cost of the tensor methods a model calls between its heavy ops: views (``.T``,
``reshape``, ``view``, ``permute``, ``transpose``, ``unsqueeze``, ``flatten``, ``expand``),
indexing, splitting and reductions along one dimension, on a small (8, 16, 32) float32 tensor,
where the call, not the arithmetic, is the cost. Microseconds per call, BuildingAI against
PyTorch eager and NumPy's nearest call, interleaved in one run.

Modes: ``forward`` (nothing requires grad) and ``record`` (the input requires grad: the call
records its graph node). Acceleration is on, as ``benchmarks.common.accelerate`` sets it.

Run: ``python -m benchmarks.tensor_methods [--quick] [--cpu-time]``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import buildingai as bai

from .common import accelerate, format_table, in_microseconds, measure, save_run

SHAPE = (8, 16, 32)

# (label, the call on the tensors ``x`` (8, 16, 32), ``m`` = x[0] and ``s`` = x[:, :1], NumPy's
# nearest call on the same arrays or None)
CASES = [
    ("m.T", "m.T", "m.T"),
    ("x.reshape(8, 512)", "x.reshape(8, 512)", "x.reshape(8, 512)"),
    ("x.reshape(-1, 32)", "x.reshape(-1, 32)", "x.reshape(-1, 32)"),
    ("x.view(8, 512)", "x.view(8, 512)", "x.reshape(8, 512)"),
    ("x.flatten(1)", "x.flatten(1)", "x.reshape(8, -1)"),
    ("x.permute(0, 2, 1)", "x.permute(0, 2, 1)", "x.transpose(0, 2, 1)"),
    ("x.transpose(1, 2)", "x.transpose(1, 2)", "x.swapaxes(1, 2)"),
    ("x.unsqueeze(0)", "x.unsqueeze(0)", "x[None]"),
    ("x[:, :1].squeeze(1)", "s.squeeze(1)", "s.squeeze(1)"),
    ("x[:, :1].expand(8, 16, 32)", "s.expand(8, 16, 32)", "np.broadcast_to(s, (8, 16, 32))"),
    ("x[3]", "x[3]", "x[3]"),
    ("x[..., :16]", "x[..., :16]", "x[..., :16]"),
    ("x.split(8, dim=-1)", "x.split(8, dim=-1)", "np.split(x, 4, axis=-1)"),
    ("x.chunk(2, dim=-1)", "x.chunk(2, dim=-1)", "np.split(x, 2, axis=-1)"),
    ("x.max(-1)", "x.max(-1)", "(x.max(-1), x.argmax(-1))"),
    ("x.mean(-1)", "x.mean(-1)", "x.mean(-1)"),
    ("x.sum(-1)", "x.sum(-1)", "x.sum(-1)"),
    ("x.softmax(-1)", "x.softmax(-1)", None),
]


def _calls(code: str, namespace: dict):
    """The call ``code`` on the values ``namespace`` names, as a function of no arguments."""
    return eval(f"lambda: {code}", namespace)  # noqa: S307 - the fixed table above


def run(quick: bool = False, cpu_time: bool = False) -> list[dict]:
    import torch

    torch.set_num_threads(1)
    array = np.random.default_rng(0).standard_normal(SHAPE).astype(np.float32)
    numpy_names = {"x": array, "m": array[0], "s": array[:, :1], "np": np}
    clock = time.thread_time if cpu_time else time.perf_counter
    records = []
    for mode in ("forward", "record"):
        grad = mode == "record"
        ours = bai.tensor(array, requires_grad=grad)
        theirs = torch.tensor(array, requires_grad=grad)
        names = {
            "ours": {"x": ours, "m": ours[0], "s": ours[:, :1]},
            "theirs": {"x": theirs, "m": theirs[0], "s": theirs[:, :1]},
        }
        for label, code, numpy_code in CASES:
            candidates = {
                "buildingai": _calls(code, names["ours"]),
                "pytorch": _calls(code, names["theirs"]),
            }
            if numpy_code is not None:
                candidates["numpy"] = _calls(numpy_code, numpy_names)
            results = measure(candidates, repeats=2 if quick else 9,
                              number=2 if quick else 2000, settle=0.0, clock=clock)  # fmt: skip
            record = {"call": label, "mode": mode, **in_microseconds(results)}
            record["ratio_to_pytorch"] = (
                record["buildingai"]["median"] / record["pytorch"]["median"]
            )
            records.append(record)
    return records


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny run for tests")
    parser.add_argument("--json", help="also write the records to this JSON file")
    parser.add_argument("--cpu-time", action="store_true",
                        help="time in this thread's CPU time, not wall-clock time")  # fmt: skip
    args = parser.parse_args()
    accelerate()
    bai.set_num_threads(1)
    records = run(quick=args.quick, cpu_time=args.cpu_time)
    rows = [
        [
            r["call"],
            r["mode"],
            f"{r['buildingai']['median']:.2f}",
            f"{r['pytorch']['median']:.2f}",
            f"{r['numpy']['median']:.2f}" if "numpy" in r else "—",
            f"{r['ratio_to_pytorch']:.2f}",
        ]
        for r in records
    ]
    headers = ["call", "mode", "BuildingAI µs", "PyTorch µs", "NumPy µs", "BuildingAI / PyTorch"]
    print(format_table(headers, rows))
    print()
    save_run(records, args.json)


if __name__ == "__main__":
    main()

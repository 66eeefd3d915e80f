"""Gradient checkpointing: peak memory and step time of one training step, with and without.

Two models: a 24-block MLP (Linear + ReLU) and a 12-layer Transformer encoder stack (dropout on,
training mode). Each runs plainly, with every block checkpointed, and with
``checkpoint_sequential`` in about sqrt(depth) segments. Peak memory is tracemalloc's peak of one
step (forward + backward, parameters excluded), as in ``benchmarks/suite``; tracemalloc does not
see PyTorch's allocator, so PyTorch gives the time overhead of its own checkpointing
(``use_reentrant=False``) in the same run, as a yardstick. Before timing, each checkpointed run
is checked to give the plain run's gradients bit for bit.

Run: ``env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python -m benchmarks.checkpointing [--quick]``.
"""

from __future__ import annotations

import argparse
import json
import math

import numpy as np

import buildingai as bai
from buildingai import nn
from buildingai.checkpoint import checkpoint, checkpoint_sequential

from .common import accelerate, environment, format_table, measure, set_threads, settle_for
from .suite.harness import step_peak_bytes


def _mlp(library, depth: int, width: int):
    """``depth`` blocks of Linear(width, width) + ReLU, in BuildingAI's or PyTorch's nn."""
    blocks = [
        library.Sequential(library.Linear(width, width), library.ReLU()) for _ in range(depth)
    ]
    return library.Sequential(*blocks)


def _encoder(library, depth: int, width: int):
    """``depth`` Transformer encoder layers (4 heads, feed-forward 4 x width, dropout 0.1)."""
    layers = [
        library.TransformerEncoderLayer(width, 4, 4 * width, dropout=0.1, batch_first=True)
        for _ in range(depth)
    ]
    return library.Sequential(*layers)


def _cases(quick: bool) -> list[dict]:
    mlp = (4, 32, 8) if quick else (24, 256, 512)  # activations outweigh the weights
    encoder = (2, 16, 2, 8) if quick else (12, 128, 16, 64)
    return [
        {
            "name": f"MLP {mlp[0]} x (Linear({mlp[1]}) + ReLU), batch {mlp[2]}",
            "build": lambda library: _mlp(library, mlp[0], mlp[1]),
            "shape": (mlp[2], mlp[1]),
            "depth": mlp[0],
        },
        {
            "name": f"Transformer encoder {encoder[0]} x d_model {encoder[1]}, "
            f"batch {encoder[2]} x seq {encoder[3]}",
            "build": lambda library: _encoder(library, encoder[0], encoder[1]),
            "shape": (encoder[2], encoder[3], encoder[1]),
            "depth": encoder[0],
        },
    ]


def _strategies(depth: int) -> dict:
    """How each run calls the model: plainly, every block checkpointed, or in segments."""
    segments = max(1, round(math.sqrt(depth)))

    def plain(model, h):
        return model(h)

    def every_block(model, h):
        for block in model:
            h = checkpoint(block, h)
        return h

    def sequential(model, h):
        return checkpoint_sequential(model, segments, h)

    return {
        "plain": plain,
        "every block": every_block,
        f"checkpoint_sequential({segments})": sequential,
    }


def _step(model, x: np.ndarray, forward):
    """One training step's forward and backward (parameter gradients cleared first)."""

    def run():
        for parameter in model.parameters():
            parameter.grad = None
        bai.manual_seed(0)
        loss = (forward(model, bai.tensor(x)) ** 2).mean()
        loss.backward()

    return run


def _torch_step(torch, model, x, segments: int | None):
    inputs = torch.from_numpy(x)

    def run():
        model.zero_grad(set_to_none=True)
        torch.manual_seed(0)
        if segments is None:
            out = model(inputs)
        else:
            out = torch.utils.checkpoint.checkpoint_sequential(
                model, segments, inputs, use_reentrant=False
            )
        (out**2).mean().backward()

    return run


def _gradients(model) -> list[np.ndarray]:
    return [parameter.grad.numpy().copy() for parameter in model.parameters()]


def bench_case(case: dict, quick: bool) -> list[dict]:
    """Peak bytes and step time of each strategy on one model; ratios against the plain run."""
    import torch

    model = case["build"](nn)
    model.train()
    x = np.random.default_rng(0).standard_normal(case["shape"]).astype(np.float32)
    strategies = _strategies(case["depth"])
    steps = {name: _step(model, x, forward) for name, forward in strategies.items()}

    steps["plain"]()
    reference = _gradients(model)
    for name, step in steps.items():
        step()
        for want, got in zip(reference, _gradients(model)):
            if not np.array_equal(want, got):
                raise AssertionError(f"{case['name']}: '{name}' changed the gradients")

    peaks = {}
    for name, step in steps.items():
        for parameter in model.parameters():  # the step's own gradients count, not the last's
            parameter.grad = None
        peaks[name] = step_peak_bytes(step)
    segments = max(1, round(math.sqrt(case["depth"])))
    theirs = case["build"](torch.nn)
    theirs.train()
    candidates = {
        **steps,
        "pytorch plain": _torch_step(torch, theirs, x, None),
        "pytorch checkpoint_sequential": _torch_step(torch, theirs, x, segments),
    }
    timings = measure(
        candidates,
        repeats=2 if quick else 7,
        number=1 if quick else 3,
        settle=settle_for(quick),
    )
    plain_time = timings["plain"]["median"]
    records = []
    for name in steps:
        records.append(
            {
                "case": case["name"],
                "strategy": name,
                "peak_bytes": peaks[name],
                "memory_ratio": peaks[name] / peaks["plain"],
                "time": timings[name],
                "time_ratio": timings[name]["median"] / plain_time,
                "pytorch_time_ratio": timings["pytorch checkpoint_sequential"]["median"]
                / timings["pytorch plain"]["median"],
                "vs_pytorch_plain": timings[name]["median"] / timings["pytorch plain"]["median"],
            }
        )
    return records


def run(quick: bool = False) -> list[dict]:
    """Every case's records."""
    records = []
    for case in _cases(quick):
        records += bench_case(case, quick)
    return records


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes: a check, not a timing")
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--json", action="store_true", help="print the records as JSON")
    args = parser.parse_args()
    accelerate()  # buildingai.accel on unless BUILDINGAI_ACCEL=0
    set_threads(args.threads)
    records = run(args.quick)
    if args.json:
        print(json.dumps({"environment": environment(), "records": records}, indent=1))
        return
    print(json.dumps(environment(), indent=1))
    rows = [
        [
            record["case"],
            record["strategy"],
            f"{record['peak_bytes'] / 2**20:.1f} MiB",
            f"{(1 - record['memory_ratio']) * 100:+.0f}%" if record["strategy"] != "plain" else "",
            f"{record['time']['median'] * 1e3:.1f} ms ({record['time']['min'] * 1e3:.1f}-"
            f"{record['time']['max'] * 1e3:.1f})",
            f"{(record['time_ratio'] - 1) * 100:+.0f}%" if record["strategy"] != "plain" else "",
            f"{record['vs_pytorch_plain']:.2f}",
        ]
        for record in records
    ]
    print(
        format_table(
            [
                "model",
                "run",
                "peak",
                "memory saved",
                "step (min-max)",
                "time added",
                "/ pytorch plain",
            ],
            rows,
        )
    )
    for case in dict.fromkeys(record["case"] for record in records):
        ratio = next(r["pytorch_time_ratio"] for r in records if r["case"] == case)
        print(f"{case}: PyTorch checkpoint_sequential step / plain step = {ratio:.2f}")


if __name__ == "__main__":
    main()

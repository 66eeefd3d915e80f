"""How a training step's cost grows: time per step of the MLP (784-w-w-10, Adam) and of the GPT
(``suite/gpt_model.py``, AdamW, clipping) against the batch size (1 to 256) and the width (64 to
1024), BuildingAI eager and PyTorch eager on one thread, plotted on the same axes.

Run: ``python -m benchmarks.scaling [--quick] [--markdown PATH]``. A full run writes
``docs/site/figures/scaling_mlp.png`` and ``scaling_gpt.png`` and the "How cost grows" section
of ``docs/benchmarks.md`` (the rest of that page is kept). Times are the calling thread's CPU
time (``time.thread_time``): on one thread that is the step's own work, and other processes on
a shared machine do not count in it.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from pathlib import Path

from .common import accelerate, format_table, measure
from .suite import gpt, mlp, page
from .suite.frameworks import BuildingAIStep, TorchStep, load_buildingai, torch_state_as_numpy
from .suite.harness import in_default_arrangement, thread_limit

ROOT = Path(__file__).resolve().parent.parent
FIGURES = ROOT / "docs" / "site" / "figures"
START, END = page.REGIONS[1]
SWEEPS = {
    "full": {
        "mlp": {"batch": ([1, 4, 16, 64, 256], 256), "width": ([64, 128, 256, 512, 1024], 128)},
        "gpt": {"batch": ([1, 4, 16, 64, 256], 128), "width": ([64, 128, 256, 512, 1024], 16)},
    },
    "quick": {
        "mlp": {"batch": ([1, 4], 16), "width": ([8, 16], 4)},
        "gpt": {"batch": ([1, 2], 16), "width": ([8, 16], 2)},
    },
}
LABELS = {"buildingai": "BuildingAI eager", "pytorch": "PyTorch eager"}


def mlp_steppers(width: int, batch: int) -> dict:
    """The suite's MLP (784-width-width-10, ReLU, Adam lr 1e-3) at ``width`` on ``batch``."""
    import torch

    import buildingai as bai

    widths = (784, width, width, 10)
    weights = torch_state_as_numpy(mlp.torch_model(widths))
    x, target = mlp.batch(widths, batch)
    ours = load_buildingai(mlp.buildingai_model(widths), weights)
    theirs = mlp.torch_model(widths)
    theirs.load_state_dict({k: torch.from_numpy(v.copy()) for k, v in weights.items()})
    return {
        "buildingai": BuildingAIStep(ours, bai.optim.Adam(ours.parameters(), lr=mlp.LR), x, target),
        "pytorch": TorchStep(theirs, torch.optim.Adam(theirs.parameters(), lr=mlp.LR), x, target),
    }


def gpt_steppers(width: int, batch: int, quick: bool) -> dict:
    """The ``gpt`` workload's model at ``width`` (4 heads) on ``batch`` sequences."""
    config = dict(gpt.sizes(quick), n_embd=width, batch=batch)
    weights = gpt.initial_weights(config)
    return {library: gpt.build(library, config, weights) for library in LABELS}


def point(model: str, width: int, batch: int, quick: bool) -> dict:
    """Seconds of CPU time per step, ``{framework: {"median", "min", "max"}}``."""
    steppers = gpt_steppers(width, batch, quick) if model == "gpt" else mlp_steppers(width, batch)
    # BuildingAI at the thread limit's count (set_num_threads), as the suite times it
    calls = {name: in_default_arrangement(stepper.step) for name, stepper in steppers.items()}
    start = time.thread_time()
    for call in calls.values():
        call()
    first = (time.thread_time() - start) / len(calls)
    number = 1 if quick else max(1, min(50, round(0.2 / max(first, 1e-6))))
    repeats = 2 if quick else 3
    return measure(calls, repeats=repeats, number=number, warmup=0, settle=0.0,
                   clock=time.thread_time)  # fmt: skip


def sweep(quick: bool, log=print) -> list[dict]:
    """Every point of every sweep, on one thread."""
    rows = []
    plan = SWEEPS["quick" if quick else "full"]
    with thread_limit(1):
        for model, sweeps in plan.items():
            for axis, (values, fixed) in sweeps.items():
                for value in values:
                    width, batch = (fixed, value) if axis == "batch" else (value, fixed)
                    times = point(model, width, batch, quick)
                    rows.append(dict(model=model, axis=axis, width=width, batch=batch, times=times))
                    log(f"{model} {axis}={value}: " + ", ".join(
                        f"{k} {v['median'] * 1e3:.3g} ms" for k, v in times.items()))  # fmt: skip
    return rows


def _curve(rows: list[dict], model: str, axis: str, framework: str) -> tuple[list, list]:
    chosen = [r for r in rows if r["model"] == model and r["axis"] == axis]
    xs = [r[axis] for r in chosen]
    return xs, [r["times"][framework]["median"] * 1e3 for r in chosen]


def slopes(xs: list, ys: list) -> list[float]:
    """Log-log slope of each segment: 0 is a flat cost, 1 grows in proportion, 2 as a square."""
    return [math.log(y1 / y0) / math.log(x1 / x0)
            for x0, x1, y0, y1 in zip(xs, xs[1:], ys, ys[1:])]  # fmt: skip


def bend(xs: list, ys: list) -> str:
    """Where a curve turns from flat to growing, in words, from its log-log slopes."""
    found = slopes(xs, ys)
    if not found:
        return "one point only"
    last = found[-1]
    if last < 0.3:
        return f"stays nearly flat up to {xs[-1]} (slope {last:.2f} at the end)"
    knee = next(i for i, s in enumerate(found) if s >= 0.5 * last)
    if knee == 0:
        return f"grows from the start (slopes {', '.join(f'{s:.2f}' for s in found)})"
    early = ", ".join(f"{s:.2f}" for s in found[:knee])
    start = "is nearly flat" if max(found[:knee]) < 0.3 else "grows slowly"
    return (
        f"{start} up to {xs[knee]} (slopes {early}), then grows with slope {last:.2f} by {xs[-1]}"
    )


def plot(rows: list[dict], model: str, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(1, 2, figsize=(10, 4), constrained_layout=True)
    for ax, axis in zip(axes, ("batch", "width")):
        chosen = [r for r in rows if r["model"] == model and r["axis"] == axis]
        fixed = chosen[0]["width" if axis == "batch" else "batch"]
        for framework, style in (("buildingai", "o-"), ("pytorch", "s--")):
            xs, ys = _curve(rows, model, axis, framework)
            ax.plot(xs, ys, style, label=LABELS[framework])
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel(f"{axis} ({'width' if axis == 'batch' else 'batch'} {fixed})")
        ax.set_ylabel("ms per training step (1 thread, CPU time)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
    title = "MLP 784-w-w-10, Adam" if model == "mlp" else "GPT (4 layers, context 64), AdamW"
    figure.suptitle(f"{title}: time per step")
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=110)
    plt.close(figure)


WHY = {
    "batch": "below the bend a step costs what its ops cost at any batch (Python dispatch, "
    "autograd bookkeeping, the optimizer's pass over every parameter); above it the products' "
    "arithmetic, which grows in proportion to the batch, takes over",
    "width": "the products and the optimizer grow as the square of the width (the weights "
    "do), the per-op costs not at all, so the slope climbs towards 2 once the arithmetic "
    "dominates",
}


def section(rows: list[dict], command: str, load=None) -> str:
    """The "How cost grows" region; ``load``: the load average to report (now, by default)."""
    if load is None:
        load = [round(v, 2) for v in os.getloadavg()] if hasattr(os, "getloadavg") else "unknown"
    lines = [
        START,
        "## How cost grows",
        "",
        f"- Command: `{command}` (load average at the end: {load}; the machine was shared, "
        "which CPU time per thread discounts but cannot make quiet: caches and memory "
        "bandwidth are shared too)",
        "- One thread for both libraries; each point is the median of 3 repetitions of the "
        "calling thread's CPU time per step (`time.thread_time`), after one untimed step. "
        "BuildingAI eager and PyTorch eager from the same weights and batch.",
        "- MLP: the suite's `mlp` workload (784-w-w-10, Adam), width 256 in the batch sweep, "
        "batch 128 in the width sweep. GPT: the `gpt` workload (4 layers, 4 heads, context 64,"
        " AdamW, clipping), width 128 in the batch sweep, batch 16 in the width sweep.",
        "",
        "![MLP: time per step against batch and width](figures/scaling_mlp.png)",
        "",
        "![GPT: time per step against batch and width](figures/scaling_gpt.png)",
        "",
    ]
    for model in ("mlp", "gpt"):
        for axis in ("batch", "width"):
            parts = []
            for framework in LABELS:
                xs, ys = _curve(rows, model, axis, framework)
                parts.append(f"{LABELS[framework]} {bend(xs, ys)}")
            lines.append(f"- {model.upper()} against {axis}: " + "; ".join(parts) + ".")
    lines += ["", f"Why: against the batch, {WHY['batch']}; against the width, {WHY['width']}.", ""]
    table = []
    for r in rows:
        ours, theirs = (r["times"][k]["median"] * 1e3 for k in LABELS)
        table.append([r["model"], r["axis"], r["width"], r["batch"], f"{ours:.3g}",
                      f"{theirs:.3g}", f"{ours / theirs:.2f}"])  # fmt: skip
    headers = ["model", "sweep", "width", "batch", "BuildingAI ms", "PyTorch ms", "ratio"]
    lines += [format_table(headers, table), "", END]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="two tiny points per sweep")
    parser.add_argument("--markdown", default=None, help="page to write the section into "
                        "(default: docs/benchmarks.md for a full run, none for --quick)")  # fmt: skip
    parser.add_argument("--figures", default=None, help="directory for the PNGs (default: "
                        "docs/site/figures for a full run, none for --quick)")  # fmt: skip
    parser.add_argument("--results", default=str(ROOT / "benchmarks" / "results"))
    args = parser.parse_args(argv)
    accelerate()
    from buildingai.backend import retain_freed_memory

    retain_freed_memory()  # as the suite and Trainer run
    log = lambda text: print(text, file=sys.stderr, flush=True)  # noqa: E731
    rows = sweep(args.quick, log)
    command = "python -m benchmarks.scaling " + " ".join(argv if argv is not None else sys.argv[1:])
    results = Path(args.results)
    results.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    record = {"command": command, "rows": rows, "load_average_at_end": list(os.getloadavg())}
    (results / f"scaling-{stamp}.json").write_text(json.dumps(record))
    figures = args.figures or (None if args.quick else str(FIGURES))
    if figures:
        for model in ("mlp", "gpt"):
            plot(rows, model, Path(figures) / f"scaling_{model}.png")
    text = section(rows, command)
    print(text)
    markdown = args.markdown or (None if args.quick else str(ROOT / "docs" / "benchmarks.md"))
    if markdown:
        target = Path(markdown)
        existing = target.read_text() if target.exists() else ""
        target.write_text(page.compose(None, {START: text}, existing))
        log(f"wrote {markdown}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

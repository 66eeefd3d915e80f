"""Training steps on a CUDA GPU: BuildingAI (CuPy, eager and compiled) against PyTorch CUDA
eager, same workloads as the CPU suite (``benchmarks/suite``), ratios in one run; then the row
ops (softmax, log_softmax, cross-entropy, layer norm, forward + backward on (4096, 1024)) with
the CUDA twins on and off, to show whether the fused kernels pay.

Run: ``python -m benchmarks.gpu [--out DIR] [--tests FILE]`` on a machine with CuPy (and a CUDA
build of PyTorch for the reference column); it saves a ``gpu-*.json`` record. Without a GPU it
says so and exits 0. ``python -m benchmarks.gpu --publish RECORD`` writes a record into
``docs/benchmarks.md`` (section "On a GPU") on any machine.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import traceback
from pathlib import Path

import numpy as np

import buildingai as bai
from buildingai.accel.kernels import compiled

from . import gpu_report
from .common import accelerate
from .suite import cnn, mlp, transformer
from .suite.frameworks import cross_entropy

WORKLOADS = {"mlp": mlp, "cnn": cnn, "transformer": transformer}
MARKDOWN = Path(__file__).resolve().parents[1] / "docs" / "benchmarks.md"


def _synchronize() -> None:
    from buildingai.backend.device import cupy_module

    cupy_module().cuda.Device().synchronize()


def _ours(module, compiled: bool):
    config = module.sizes(False)
    widths_or_config = config.get("widths", config)
    model = module.buildingai_model(widths_or_config)
    model.load_state_dict(module.initial_weights(widths_or_config))
    model.to("cuda")
    optimizer = bai.optim.AdamW(model.parameters(), lr=1e-3)
    inputs, target = module.batch(widths_or_config, config["batch"])
    x, y = bai.tensor(inputs).to("cuda"), bai.tensor(target).to("cuda")

    def step(a, b):
        optimizer.zero_grad()
        loss = cross_entropy(model(a), b)
        loss.backward()
        optimizer.step()
        return loss

    if compiled:
        specs = [bai.TensorSpec((None, *x.shape[1:]), x.dtype), bai.TensorSpec((None,), y.dtype)]
        step = bai.compile(step, specs)
    return lambda: step(x, y)


def _theirs(module):
    import torch

    config = module.sizes(False)
    widths_or_config = config.get("widths", config)
    model = module.torch_model(widths_or_config).cuda()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    inputs, target = module.batch(widths_or_config, config["batch"])
    x, y = torch.from_numpy(inputs).cuda(), torch.from_numpy(target).cuda()

    def step():
        optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        return loss

    return step, torch.cuda.synchronize


def _median_ms(function, synchronize, repeats: int = 20) -> float:
    for _ in range(3):
        function()
    synchronize()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        synchronize()
        times.append(time.perf_counter() - start)
    return float(np.median(times) * 1e3)


def _row_ops():
    """name -> forward + backward of one row op on a (4096, 1024) float32 device tensor."""
    functional = bai.nn.functional
    rng = np.random.default_rng(0)
    x = bai.tensor(rng.standard_normal((4096, 1024)).astype(np.float32)).to("cuda")
    target = bai.tensor(rng.integers(0, 1024, 4096)).to("cuda")
    weight = bai.nn.Parameter(bai.tensor(np.ones(1024, np.float32)).to("cuda"))
    bias = bai.nn.Parameter(bai.tensor(np.zeros(1024, np.float32)).to("cuda"))
    x.requires_grad_()
    losses = {
        "softmax": lambda: functional.softmax(x, dim=-1).max(),
        "log_softmax": lambda: functional.log_softmax(x, dim=-1).max(),
        "cross_entropy": lambda: functional.cross_entropy(x, target),
        "layer_norm": lambda: functional.layer_norm(x, (1024,), weight, bias).max(),
    }

    def step(loss):
        return lambda: loss().backward()

    return {name: step(loss) for name, loss in losses.items()}


def _row_twins() -> list[dict]:
    """Each row op with the CUDA twins on and off (the CuPy array operations)."""
    rows = []
    for name, run in _row_ops().items():
        row = {"row_op": name}
        try:
            for enabled, key in ((True, "twins_ms"), (False, "array_ops_ms")):
                previous = compiled.set_enabled(enabled)
                try:
                    row[key] = _median_ms(run, _synchronize)
                finally:
                    compiled.set_enabled(previous)
            row["speedup"] = row["array_ops_ms"] / row["twins_ms"]
        except Exception as error:  # noqa: BLE001 - as in _workload_row
            row["error"] = _described(error)
        rows.append(row)
        print(json.dumps(row), flush=True)
    return rows


def _described(error: Exception) -> str:
    """The error and the innermost line of BuildingAI it came from."""
    frames = [f for f in traceback.extract_tb(error.__traceback__) if "buildingai" in f.filename]
    place = f" (at {frames[-1].filename}:{frames[-1].lineno})" if frames else ""
    return f"{type(error).__name__}: {error}{place}"


def _workload_row(name: str, module) -> dict:
    """One training step's times; a step that fails is reported in its row, not fatal to the
    rest of the run (the GPU check reads every row)."""
    row = {"workload": name}
    try:
        row["buildingai_ms"] = _median_ms(_ours(module, False), _synchronize)
        row["compiled_ms"] = _median_ms(_ours(module, True), _synchronize)
    except Exception as error:  # noqa: BLE001 - reported, and the run's status says it failed
        row["error"] = _described(error)
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None and torch.cuda.is_available():
        step, synchronize = _theirs(module)
        row["pytorch_ms"] = _median_ms(step, synchronize)
        if "error" not in row:
            row["ratio"] = row["buildingai_ms"] / row["pytorch_ms"]
            row["compiled_ratio"] = row["compiled_ms"] / row["pytorch_ms"]
    print(json.dumps(row), flush=True)
    return row


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="benchmarks/results", help="where gpu-*.json goes")
    parser.add_argument("--tests", help="the saved output of the tests/gpu run, for the record")
    parser.add_argument(
        "--publish",
        metavar="FILE",
        help="write the gpu-*.json record FILE into docs/benchmarks.md and exit (no GPU needed)",
    )
    args = parser.parse_args(argv)
    if args.publish:
        gpu_report.publish(json.loads(Path(args.publish).read_text()), MARKDOWN)
        print(f"wrote {MARKDOWN}")
        return 0
    accelerate()  # buildingai.accel on unless BUILDINGAI_ACCEL=0
    if not bai.cuda_is_available():
        print("no CUDA GPU with CuPy here: nothing to measure")
        return 0
    rows = [_workload_row(name, module) for name, module in WORKLOADS.items()]
    rows.extend(_row_twins())
    record = {
        "environment": gpu_report.environment(),
        "tests": gpu_report.tests_summary(args.tests),
        "rows": rows,
    }
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    (out / f"gpu-{stamp}.json").write_text(json.dumps(record, indent=1))
    return 1 if any("error" in row for row in rows) else 0


if __name__ == "__main__":
    sys.exit(main())

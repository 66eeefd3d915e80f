"""The GPU check's record and its section of ``docs/benchmarks.md``: ``environment()`` reads the
machine where ``benchmarks.gpu`` runs; ``section(record)`` turns a saved record into the page's
``<!-- gpu -->`` region, which ``python -m benchmarks.gpu --publish FILE`` writes (on any
machine: the GPU runs the check, the figures travel back as the JSON file)."""

from __future__ import annotations

import platform
import time
from pathlib import Path

import numpy as np

from .suite import page

START, END = page.REGIONS[2]


def environment() -> dict:
    """What ran the check: the GPU, its driver, and the libraries on both sides."""
    from buildingai.backend.device import cupy_module

    cupy = cupy_module()
    properties = cupy.cuda.runtime.getDeviceProperties(0)
    found = {
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "gpu": properties["name"].decode(),
        "gpu_memory_gib": round(properties["totalGlobalMem"] / 2**30, 1),
        "cuda_driver": cupy.cuda.runtime.driverGetVersion(),
        "cupy": cupy.__version__,
        "numpy": np.__version__,
        "python": platform.python_version(),
    }
    try:
        import torch

        found["torch"] = torch.__version__
    except ImportError:
        found["torch"] = None
    return found


def tests_summary(path: str | None) -> str | None:
    """The last line of a pytest run's output saved at ``path`` ('576 passed in 42.66s')."""
    if not path or not Path(path).exists():
        return None
    lines = [line.strip() for line in Path(path).read_text().splitlines() if line.strip()]
    return lines[-1].strip("= ") if lines else None


def _ms(value) -> str:
    return "-" if value is None else f"{value:.2f}"


def _ratio(value) -> str:
    return "-" if value is None else f"{value:.2f}"


def section(record: dict) -> str:
    """The Markdown of the ``gpu`` region for one saved check."""
    env = record["environment"]
    lines = [
        START,
        "## On a GPU",
        "",
        f"- Date: {env['date']}; command: `bash benchmarks/gpu_check.sh` (`tests/gpu`, then "
        "`python -m benchmarks.gpu`), published with `python -m benchmarks.gpu --publish FILE`",
        f"- Machine: {env['gpu']} ({env['gpu_memory_gib']} GiB), CUDA driver "
        f"{env['cuda_driver']}; Python {env['python']}, NumPy {env['numpy']}, CuPy "
        f"{env['cupy']}, PyTorch {env['torch']}",
    ]
    if record.get("tests"):
        lines.append(f"- `tests/gpu` (every op record forward and backward on CuPy against the "
                     f"CPU, training, compiled and frozen parity, the CUDA twins): {record['tests']}")  # fmt: skip
    lines += [
        "- Each cell: the median of 20 timed calls after 3 untimed ones, the GPU synchronized "
        "after each call; acceleration on. The suite's `mlp`, `cnn` and `transformer` steps "
        "(AdamW), the same sizes as on the CPU; PyTorch runs its CUDA eager step.",
        "",
        "| workload | BuildingAI ms | compiled ms | PyTorch ms | BuildingAI / PyTorch "
        "| compiled / PyTorch |",
        "|---|---|---|---|---|---|",
    ]
    rows = record["rows"]
    for row in rows:
        if "workload" in row:
            lines.append(
                f"| {row['workload']} | {_ms(row.get('buildingai_ms'))} | "
                f"{_ms(row.get('compiled_ms'))} | {_ms(row.get('pytorch_ms'))} | "
                f"{_ratio(row.get('ratio'))} | {_ratio(row.get('compiled_ratio'))} |"
            )
    lines += [
        "",
        "Row ops, forward and backward on (4096, 1024) float32, with the CUDA twins "
        "(`accel/kernels/compiled/cuda_rows.py`) on and off:",
        "",
        "| row op | twins ms | CuPy array operations ms | speedup |",
        "|---|---|---|---|",
    ]
    for row in rows:
        if "row_op" in row:
            lines.append(
                f"| {row['row_op']} | {_ms(row.get('twins_ms'))} | "
                f"{_ms(row.get('array_ops_ms'))} | {_ratio(row.get('speedup'))} |"
            )
    errors = [row for row in rows if "error" in row]
    for row in errors:
        name = row.get("workload", row.get("row_op"))
        lines.append(f"\n- {name} failed: {row['error']}")
    lines += [
        "",
        "Why the steps trail PyTorch on the GPU, and what the twins change there: "
        '`docs/design_notes/performance.md`, section "On a GPU".',
        END,
    ]
    return "\n".join(lines)


def publish(record: dict, markdown: Path) -> None:
    """Write ``record``'s region into the page at ``markdown``, keeping the rest of it."""
    existing = markdown.read_text() if markdown.exists() else ""
    markdown.write_text(page.compose(None, {START: section(record)}, existing))

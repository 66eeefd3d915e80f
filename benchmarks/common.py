"""Shared pieces of the benchmarks: interleaved timing, and a record of the machine and BLAS.

Timings of the implementations under comparison are interleaved (A, B, C, A, B, C, ...) so that
noise from a shared machine hits all of them alike; results are medians with min and max.
"""

from __future__ import annotations

import os
import platform
import statistics
import time
from collections.abc import Callable

# Idle BLAS and OpenMP threads keep spinning on their cores after a call: OpenBLAS for 2^28
# cycles (~0.1 s here), libgomp (PyTorch) for a shorter while. Interleaved timing would charge
# that spin to whichever candidate runs next (measured: PyTorch's transformer step at 2 threads,
# 109 ms right after BuildingAI's GEMMs, 74 ms on its own), so each repetition starts after a
# pause that lets the previous candidate's threads go to sleep. Within a repetition a candidate
# keeps its own threads hot, as a training loop would.
SETTLE_SECONDS = 0.15


def settle_for(quick: bool) -> float:
    """The pause before each repetition: none in quick mode (a correctness check, not timing)."""
    return 0.0 if quick else SETTLE_SECONDS


def measure(
    candidates: dict[str, Callable[[], None]],
    repeats: int = 7,
    number: int = 100,
    warmup: int = 1,
    settle: float = SETTLE_SECONDS,
    clock: Callable[[], float] = time.perf_counter,
) -> dict[str, dict[str, float]]:
    """Time each callable ``number`` times per repetition, interleaving the candidates, with an
    untimed pause of ``settle`` seconds before each repetition (see ``SETTLE_SECONDS``).

    ``clock``: ``time.thread_time`` counts only this thread's CPU time (with one thread
    everywhere, other processes' load on a shared machine then does not count).
    Returns ``{name: {"median": s, "min": s, "max": s}}`` in seconds per call.
    """
    for _ in range(warmup):
        for function in candidates.values():
            for _ in range(max(1, number // 10)):
                function()
    samples: dict[str, list[float]] = {name: [] for name in candidates}
    for _ in range(repeats):
        for name, function in candidates.items():
            if settle:
                time.sleep(settle)
                function()  # one untimed call wakes the candidate's own threads again
            start = clock()
            for _ in range(number):
                function()
            samples[name].append((clock() - start) / number)
    return {
        name: {"median": statistics.median(values), "min": min(values), "max": max(values)}
        for name, values in samples.items()
    }


def in_microseconds(results: dict, calls: int = 1) -> dict:
    """``measure``'s results in microseconds per call, where each timed call makes ``calls``
    of them: ``{name: {"median": us, "min": us, "max": us}}``."""
    return {
        name: {key: value * 1e6 / calls for key, value in stats.items()}
        for name, stats in results.items()
    }


def accelerate() -> bool:
    """Turn ``buildingai.accel`` on for a benchmark run, as a user who wants speed does, unless
    ``BUILDINGAI_ACCEL=0`` asks to time the op records' reference code; returns the setting.
    Each benchmark's ``main`` calls it: importing the suite changes nothing."""
    import buildingai

    try:  # PyTorch's OpenMP pool starts before numba's: started after it, PyTorch's runs slower
        import torch

        (torch.ones(256, 256) @ torch.ones(256, 256)).relu_().sum()
    except ImportError:
        pass
    if os.environ.get("BUILDINGAI_ACCEL", "").strip() == "":
        buildingai.accel.enable(quiet=True)
    return buildingai.accel.is_enabled()


def set_threads(threads: int | None) -> int | None:
    """Give BuildingAI/NumPy (BLAS, via threadpoolctl) and PyTorch the same thread count, so a
    comparison is like for like. None leaves both libraries at their defaults."""
    if threads is None:
        return None
    try:
        from threadpoolctl import threadpool_limits

        threadpool_limits(threads)
    except ImportError:
        pass
    try:
        import torch

        torch.set_num_threads(threads)
    except ImportError:
        pass
    return threads


def environment() -> dict:
    """The machine, library versions, and which BLAS library and kernel are in use."""
    import numpy as np

    import buildingai

    info = {
        "buildingai_accel": buildingai.accel.is_enabled(),  # registered kernels on, or not
        "python": platform.python_version(),
        "machine": platform.machine(),
        "processor": _cpu_name(),
        "cores": os.cpu_count(),
        "numpy": np.__version__,
        "OPENBLAS_CORETYPE": os.environ.get("OPENBLAS_CORETYPE", "(unset)"),
    }
    try:
        import torch

        info["torch"] = torch.__version__
        info["torch_threads"] = torch.get_num_threads()
    except ImportError:
        info["torch"] = "(not installed)"
    try:
        from threadpoolctl import threadpool_info

        info["blas"] = [
            f"{p.get('internal_api')} {p.get('version')} kernel={p.get('architecture')} "
            f"threads={p.get('num_threads')}"
            for p in threadpool_info()
            if p.get("user_api") == "blas"
        ]
    except ImportError:
        info["blas"] = ["(threadpoolctl not installed)"]
    from buildingai.accel import vector_blas

    info["optimizer_blas"] = vector_blas.available()  # axpby for the scaled sums, or ufuncs
    from buildingai.accel.kernels import compiled

    info["compiled_kernels"] = compiled.status()["detail"]  # numba twins, or why not
    return info


def report(records: list[dict], json_path: str | None = None) -> None:
    """Print the ratio table of ``records``, then what ``save_run`` prints and writes."""
    print(ratio_table(records))
    save_run(records, json_path)


def save_run(records: list[dict], json_path: str | None = None) -> None:
    """Print the environment as JSON; also write it with ``records`` to ``json_path`` if given."""
    import json

    env = environment()
    print(json.dumps(env, indent=1))
    if json_path:
        with open(json_path, "w") as handle:
            json.dump({"environment": env, "records": records}, handle, indent=1)


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def format_table(headers: list[str], rows: list[list]) -> str:
    """A Markdown table."""
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


RATIO_HEADERS = [
    "case",
    "threads",
    "BuildingAI ms",
    "PyTorch ms",
    "NumPy ms",
    "ratio",
    "NumPy ratio",
]


def ratio_table(records: list[dict]) -> str:
    """The table of records ``{"case", "threads", "buildingai", "pytorch"[, "numpy"], "ratio"[,
    "numpy_ratio"]}`` (timings as ``measure`` gives them): medians in ms and the ratios to
    PyTorch; an empty cell where a record has no NumPy bound."""

    def ms(record, name):
        return f"{record[name]['median'] * 1e3:.3f}" if name in record else ""

    rows = [
        [
            r["case"], r["threads"], ms(r, "buildingai"), ms(r, "pytorch"), ms(r, "numpy"),
            f"{r['ratio']:.2f}", f"{r['numpy_ratio']:.2f}" if "numpy_ratio" in r else "",
        ]
        for r in records
    ]  # fmt: skip
    return format_table(RATIO_HEADERS, rows)

"""The suite's outputs: a JSON record of a run and the Markdown page ``docs/benchmarks.md``."""

from __future__ import annotations

import datetime
import json
import os
from pathlib import Path

from ..common import environment, format_table

# Targets at 2 threads, medians: (at most x PyTorch, at most x the NumPy bound). Per-op dispatch:
# a forward and a recorded forward at most 0.8x PyTorch's, forward+backward at most 1.0x.
TARGETS = {
    "mlp": (0.8, 1.3), "cnn": (1.1, 1.2), "transformer": (1.1, 1.2),
    "transformer-gelu": (1.1, None), "dispatch": (0.8, None),
    "dispatch forward+backward": (1.0, None),
}  # fmt: skip
# Inference at batch 1 (eval mode, no gradient recording): (eager at most x PyTorch, the frozen
# graph in the default arrangement at most x PyTorch).
INFERENCE_TARGETS = {"batch 1": (1.0, 0.8)}
FROZEN = "buildingai frozen"
# The compiled step (buildingai.compile), at most x PyTorch eager.
COMPILED_TARGETS = {"mlp": 0.7, "cnn": 1.0, "transformer": 1.0, "transformer-gelu": 1.0}
COMPILED = "buildingai compiled"
# set_num_threads(1, gemm=False): the products on NumPy's BLAS threads (harness.on_blas_threads)
ON_BLAS_THREADS = "buildingai blas threads"
COMPILED_ON_BLAS_THREADS = f"{COMPILED} blas threads"
FROZEN_ON_BLAS_THREADS = "buildingai frozen blas threads"
TRAINING = ("mlp", "cnn", "transformer", "transformer-gelu")
KERNEL_VARIABLES = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
THREAD_VARIABLES = ("OPENBLAS_THREAD_TIMEOUT", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS")


def full_environment() -> dict:
    """``common.environment()`` plus what forces OpenBLAS's kernel, and PyTorch's back ends."""
    info = environment()
    for variable in KERNEL_VARIABLES + THREAD_VARIABLES:
        info[variable] = os.environ.get(variable, "(unset)")
    if hasattr(os, "getloadavg"):  # other work on the machine skews multi-threaded rows most
        info["load_average_at_start"] = [round(value, 2) for value in os.getloadavg()]
    try:
        import torch

        info["torch_parallel"] = torch.__config__.parallel_info().splitlines()[:6]
        info["torch_mkldnn"] = bool(torch.backends.mkldnn.is_available())
    except ImportError:
        pass
    from buildingai.backend import allocator_settings

    info["malloc"] = allocator_settings() or "glibc defaults"
    return info


def write_json(records: list[dict], info: dict, arguments: dict, directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    path = directory / f"suite-{stamp}.json"
    with open(path, "w") as handle:
        json.dump(
            {"environment": info, "arguments": arguments, "records": records},
            handle,
            indent=1,
            default=str,
        )
    return path


def _scaled(record: dict) -> float:
    return 1e6 if record["unit"] == "µs/op" else 1e3


def _cell(record: dict, name: str) -> str:
    stats = record["times"].get(name)
    if stats is None:
        return "—"
    k = _scaled(record)
    return f"{stats['median'] * k:.3g} ({stats['min'] * k:.3g}–{stats['max'] * k:.3g})"


def _ratio(record: dict, name: str, reference: str) -> float | None:
    times = record["times"]
    if name not in times or reference not in times:
        return None
    return times[name]["median"] / times[reference]["median"]


def _ratio_cell(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}"


def _mib(record: dict, name: str) -> str:
    value = record.get("peak_bytes", {}).get(name)
    return "—" if value is None else f"{value / 2**20:.1f}"


def _target_key(case: str, workload: str) -> str:
    """The ``TARGETS`` entry of a row: its workload's, or for per-op dispatch its kind's."""
    if not case.startswith("dispatch"):
        return workload
    return "dispatch forward+backward" if case.endswith("forward+backward") else "dispatch"


def _inference_target(record: dict) -> str:
    """Batch-1 inference: eager at most 1.0x PyTorch, the frozen graph at most 0.8x."""
    batch = record["case"].rsplit(", ", 1)[-1]
    if batch not in INFERENCE_TARGETS or record["threads"] != 2:
        return ""
    eager_limit, frozen_limit = INFERENCE_TARGETS[batch]
    parts = []
    for label, name, limit in (("", "buildingai", eager_limit), ("frozen ", FROZEN, frozen_limit)):
        ratio = _ratio(record, name, "pytorch")
        if ratio is not None:
            parts.append(f"{label}≤{limit}× PT: {'met' if ratio <= limit else 'missed'}")
    return "; ".join(parts)


def _target(record: dict) -> str:
    if record["workload"] == "inference":
        return _inference_target(record)
    key = _target_key(record["case"], record["workload"])
    if key not in TARGETS or record["threads"] != 2:
        return ""
    torch_limit, numpy_limit = TARGETS[key]
    parts = []
    to_torch = _ratio(record, "buildingai", "pytorch")
    parts.append(f"≤{torch_limit}× PT: {'met' if to_torch <= torch_limit else 'missed'}")
    to_numpy = _ratio(record, "buildingai", "numpy")
    if numpy_limit is not None and to_numpy is not None:
        parts.append(f"≤{numpy_limit}× NP: {'met' if to_numpy <= numpy_limit else 'missed'}")
    compiled = _ratio(record, COMPILED, "pytorch")
    if compiled is not None and key in COMPILED_TARGETS:
        limit = COMPILED_TARGETS[key]
        parts.append(f"compiled ≤{limit}× PT: {'met' if compiled <= limit else 'missed'}")
    return "; ".join(parts)


def table(records: list[dict], frozen: bool = False, memory: bool = True,
          compiled: bool = False) -> str:  # fmt: skip
    headers = ["case", "threads", "unit", "BuildingAI", "PyTorch", "NumPy"]
    if frozen:
        headers.append("BuildingAI frozen")
    if compiled:
        headers.append("BuildingAI compiled")
    # BLAS-threads columns: those of the chosen names that some record timed
    pooled = [name for name in (ON_BLAS_THREADS, COMPILED_ON_BLAS_THREADS, FROZEN_ON_BLAS_THREADS)
              if any(name in record["times"] for record in records)]  # fmt: skip
    headers += [f"{name.replace('buildingai', 'BuildingAI')}" for name in pooled]
    headers += ["BuildingAI / PyTorch", "BuildingAI / NumPy"]
    if frozen:
        headers.append("frozen / PyTorch")
    if compiled:
        headers.append("compiled / PyTorch")
    headers += [f"{name.replace('buildingai ', '')} / PyTorch" for name in pooled]
    if memory:
        headers += ["BuildingAI MiB", "NumPy MiB"]
    headers.append("target (2 threads)")
    rows = []
    for record in records:
        row = [
            record["case"],
            record["threads"] or "default",
            record["unit"],
            _cell(record, "buildingai"),
            _cell(record, "pytorch"),
            _cell(record, "numpy"),
        ]
        if frozen:
            row.append(_cell(record, FROZEN))
        if compiled:
            row.append(_cell(record, COMPILED))
        row += [_cell(record, name) for name in pooled]
        row += [
            _ratio_cell(_ratio(record, "buildingai", "pytorch")),
            _ratio_cell(_ratio(record, "buildingai", "numpy")),
        ]
        if frozen:
            row.append(_ratio_cell(_ratio(record, FROZEN, "pytorch")))
        if compiled:
            row.append(_ratio_cell(_ratio(record, COMPILED, "pytorch")))
        row += [_ratio_cell(_ratio(record, name, "pytorch")) for name in pooled]
        if memory:
            row += [_mib(record, "buildingai"), _mib(record, "numpy")]
        row.append(_target(record))
        rows.append(row)
    return format_table(headers, rows)


def markdown(records: list[dict], info: dict, arguments: dict, profiles: dict | None) -> str:
    date = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")
    forced = [v for v in KERNEL_VARIABLES if info.get(v, "(unset)") != "(unset)"]
    lines = [
        "# Benchmarks",
        "",
        "BuildingAI, PyTorch eager (CPU) and a hand-written NumPy implementation (manual "
        "backward, no framework: the lower bound) of the same models, measured in the same "
        "run. Generated by `python -m benchmarks` (`benchmarks/suite/`); do not edit by hand.",
        "",
        f"- Date: {date}",
        f"- Command: `{arguments.get('command', 'python -m benchmarks')}`",
        f"- Machine: {info.get('processor')} ({info.get('machine')}), {info.get('cores')} "
        "logical cores; shared with other work, so expect noise of several percent (load "
        f"average at the start: {info.get('load_average_at_start', 'unknown')})",
        f"- Python {info.get('python')}, NumPy {info.get('numpy')}, PyTorch {info.get('torch')}",
        "- BLAS (threadpoolctl): "
        + "; ".join(info.get("blas", []))
        + "; optimizer scaled sums through its axpby: "
        + ("yes" if info.get("optimizer_blas") else "no (array operations)"),
        f"- Compiled kernels: {info.get('compiled_kernels', 'not recorded')}",
        f"- OPENBLAS_CORETYPE: {info.get('OPENBLAS_CORETYPE')}, OPENBLAS_L2_SIZE: "
        f"{info.get('OPENBLAS_L2_SIZE')}"
        + (
            " — **these force an older OpenBLAS kernel: these numbers are not the published "
            "ones; rerun with `env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python -m "
            "benchmarks`**"
            if forced
            else " (both unset, as the published numbers require; the kernel above is the one "
            "OpenBLAS chose for this CPU)"
        ),
        "",
        "## Method",
        "",
        "- Float32 throughout; fixed seeds; the three implementations start from the same "
        "weights (PyTorch's default initialisation, copied) and see the same batch every step.",
        "- Before timing, one step of each from the same state is compared: the first-step "
        "losses agree to 1e-4 and every parameter after the step to 1e-4 of the tensor's "
        "largest value (entries whose gradient is round-off — below 1e-6 of the tensor's "
        "largest, or below 1e-7 with Adam, whose step g / (|g| + eps) magnifies round-off — "
        "are left out and counted). A workload that fails this is not timed.",
        "- Host memory: "
        + (
            "the process keeps freed memory for reuse (`buildingai.backend.retain_freed_memory`"
            f", glibc mallopt {info.get('malloc')}), as `Trainer` does; the setting is "
            "process-wide, so it serves all three implementations alike. "
            "`--return-freed-memory` measures with malloc's defaults."
            if isinstance(info.get("malloc"), dict)
            else "malloc's defaults (freed memory returns to the OS)."
        ),
        "- Timing: the implementations run interleaved (A, B, C, A, B, C, ...) after warm-up; "
        "each cell is the median seconds per call of 11 repetitions for training steps and "
        "per-op dispatch, 7 for inference and 5-7 for the single layers (min–max in brackets); "
        "one repetition runs enough calls to last about 0.25 s (0.1 s for inference). Each "
        "repetition starts after a 0.15 s pause and one untimed call: idle OpenBLAS threads "
        "spin for about 0.1 s after a call (libgomp's, PyTorch's, for less), and without the "
        "pause that spin would take a core from the next implementation.",
        "- Threads: `threads` BLAS threads for NumPy (threadpoolctl), "
        "`torch.set_num_threads(threads)` for PyTorch, and BuildingAI in its default "
        "arrangement at `threads` threads (`buildingai.set_num_threads(threads)`): one pool, "
        "PyTorch's arrangement, where BuildingAI has a BLAS of its own (numba and "
        "scipy-openblas64 installed, as here). Its threads run the element-wise twins, the "
        "direct convolutions and the matrix products, each large product cut into blocks of "
        "rows, columns or stack entries, one single-threaded call per block to BuildingAI's "
        "own BLAS (MKL on its sequential layer where the `mkl` extra is installed, as here, "
        "else a copy of OpenBLAS held at one thread), all in one parallel loop on numba's "
        "OpenMP threads; no BLAS thread spins while the twins run.",
        "- BLAS threads: the `blas threads` columns run BuildingAI with "
        "`buildingai.set_num_threads(1, gemm=False)`, its default where it has no BLAS of its "
        "own: the products on NumPy's OpenBLAS at `threads` threads, and the element-wise work "
        "on one thread, since OpenBLAS's idle threads spin on the other cores for about 0.1 s "
        "after each product. The arrangement is switched outside the timed calls; it is "
        "measured above one thread only.",
        "- Memory: the peak of what one steady-state step allocates above what existed before "
        "it (parameters and optimizer state excluded), from `tracemalloc`, which sees NumPy "
        "arrays and Python objects. PyTorch allocates through its own C++ allocator, which "
        "tracemalloc does not see, so it has no memory column.",
        "",
    ]
    sections = [
        (
            "Training steps (forward, backward, optimizer step)",
            [r for r in records if r["workload"] in TRAINING],
            False,
            True,
        ),
        (
            "Inference (forward only, no gradient recording)",
            [r for r in records if r["workload"] == "inference"],
            True,
            True,
        ),
        ("Per-op costs", [r for r in records if r["workload"] == "micro"], False, False),
    ]
    for title, chosen, frozen_column, memory in sections:
        if not chosen:
            continue
        frozen_column = frozen_column and any(FROZEN in r["times"] for r in chosen)
        compiled_column = any(COMPILED in r["times"] for r in chosen)
        lines += [f"## {title}", "", table(chosen, frozen_column, memory, compiled_column), ""]
        notes = sorted({note for r in chosen for note in r.get("notes", [])})
        lines += [f"- {note}" for note in notes]
        if notes:
            lines.append("")
    checks = [r for r in records if "cross_check" in r and r["threads"] == records[0]["threads"]]
    if checks:
        lines += ["## Cross-check (one step from the same weights)", ""]
        rows = []
        for record in checks:
            check = record["cross_check"]
            losses = check["losses"]
            rows.append(
                [
                    record["workload"],
                    " / ".join(
                        f"{losses[k]:.6f}" if k in losses else "—"
                        for k in ("buildingai", COMPILED, "pytorch", "numpy")
                    ),
                    " / ".join(
                        f"{check['max_parameter_error'][k]:.1e}"
                        if k in check["max_parameter_error"]
                        else "—"
                        for k in ("buildingai", COMPILED, "numpy")
                    ),
                    check["roundoff_entries_skipped"],
                ]
            )
        lines += [
            format_table(
                [
                    "workload",
                    "first loss BuildingAI / compiled / PyTorch / NumPy",
                    "max parameter error BuildingAI / compiled / NumPy",
                    "round-off entries left out",
                ],
                rows,
            ),
            "",
        ]
    if profiles:
        lines += ["## Where BuildingAI's step time goes (cProfile, 1 thread)", ""]
        for name, text in profiles.items():
            lines += [f"### {name}", "", "```", text.rstrip(), "```", ""]
    return "\n".join(lines)

"""The real training workloads' section of ``docs/benchmarks.md``: step times and throughput of
the four forms, compile times, peak memory per process and the cross-check."""

from __future__ import annotations

import json
from pathlib import Path

from ..common import format_table
from .real_workloads import COMPILED, EAGER, TORCH, TORCH_COMPILED

FORMS = (EAGER, COMPILED, TORCH, TORCH_COMPILED)
EAGER_TARGET = 0.9  # BuildingAI eager, at most x PyTorch eager's step time
COMPILED_TARGET = 1.0  # buildingai.compile, at most x torch.compile's
MEMORY_TARGET = 1.2  # BuildingAI's peak resident memory, at most x PyTorch's
START, END = "<!-- real-workloads -->", "<!-- /real-workloads -->"


def _median(record: dict, form: str) -> float | None:
    stats = record["times"].get(form)
    return None if stats is None else stats["median"]


def _ms(record: dict, form: str) -> str:
    stats = record["times"].get(form)
    if stats is None:
        return "—"
    return f"{stats['median'] * 1e3:.3g} ({stats['min'] * 1e3:.3g}–{stats['max'] * 1e3:.3g})"


def _rate(record: dict, form: str) -> str:
    seconds = _median(record, form)
    return "—" if seconds is None else f"{record['items_per_step'] / seconds:,.0f}"


def ratio(record: dict, form: str, reference: str) -> float | None:
    ours, theirs = _median(record, form), _median(record, reference)
    return None if ours is None or theirs is None else ours / theirs


def _verdict(value: float | None, limit: float) -> str:
    if value is None:
        return "—"
    return f"{value:.2f} ({'met' if value <= limit else 'missed'})"


def _times_table(records: list[dict]) -> str:
    headers = ["case", "threads", "item"]
    headers += [f"{form} ms" for form in FORMS] + [f"{form} items/s" for form in FORMS]
    headers += [
        f"eager / PyTorch eager (≤{EAGER_TARGET})",
        f"compiled / torch.compile (≤{COMPILED_TARGET})",
        "compiled / PyTorch eager",
    ]
    rows = []
    for r in records:
        row = [r["case"], r["threads"] or "default", r["item"]]
        row += [_ms(r, form) for form in FORMS] + [_rate(r, form) for form in FORMS]
        compiled_to_eager = ratio(r, COMPILED, TORCH)
        row += [
            _verdict(ratio(r, EAGER, TORCH), EAGER_TARGET),
            _verdict(ratio(r, COMPILED, TORCH_COMPILED), COMPILED_TARGET),
            "—" if compiled_to_eager is None else f"{compiled_to_eager:.2f}",
        ]
        rows.append(row)
    return format_table(headers, rows)


def _compile_table(records: list[dict]) -> str:
    rows = []
    for r in records:
        first = r.get("first_call_s", {})
        cells = [
            f"{first[form]:.2f}" if form in first else "—" for form in (COMPILED, TORCH_COMPILED)
        ]
        rows.append([r["workload"], r["threads"] or "default", *cells])
    headers = ["workload", "threads", "buildingai.compile s", "torch.compile s"]
    return format_table(headers, rows)


def _mib(entry: dict, key: str) -> str:
    return "—" if key not in entry else f"{entry[key]:.0f}"


def _memory_table(records: list[dict]) -> str:
    rows, seen = [], set()
    for r in records:
        if r["workload"] in seen:
            continue
        seen.add(r["workload"])
        rss = r.get("peak_rss", {})
        theirs = rss.get(TORCH, {})
        row = [r["workload"]]
        for form in (EAGER, COMPILED, TORCH):
            entry = rss.get(form, {})
            row.append(
                entry.get("error") or f"{_mib(entry, 'peak_mib')} ({_mib(entry, 'before_mib')})"
            )
        for form in (EAGER, COMPILED):
            entry = rss.get(form, {})
            if "peak_mib" in entry and "peak_mib" in theirs:
                row.append(_verdict(entry["peak_mib"] / theirs["peak_mib"], MEMORY_TARGET))
            else:
                row.append("—")
        rows.append(row)
    headers = [
        "workload",
        "BuildingAI MiB (before the steps)",
        "compiled MiB (before)",
        "PyTorch MiB (before)",
        f"BuildingAI / PyTorch (≤{MEMORY_TARGET})",
        "compiled / PyTorch",
    ]
    return format_table(headers, rows)


def _check_table(records: list[dict]) -> str:
    rows, seen = [], set()
    for r in records:
        if r["workload"] in seen:
            continue
        seen.add(r["workload"])
        check = r["cross_check"]
        losses = check["losses"]
        errors = check["max_parameter_error"]
        rows.append(
            [
                r["workload"],
                " / ".join(f"{losses[f]:.6f}" if f in losses else "—" for f in FORMS),
                " / ".join(f"{errors[f]:.1e}" if f in errors else "—" for f in FORMS if f != TORCH),
                check["roundoff_entries_skipped"],
                "; ".join(f"{f}: {why}" for f, why in check.get("left_out", {}).items()),
            ]
        )
    headers = [
        "workload",
        "first loss: BuildingAI / compiled / PyTorch / torch.compile",
        "max parameter error: BuildingAI / compiled / torch.compile",
        "round-off entries left out",
        "forms left out",
    ]
    return format_table(headers, rows)


def records_path(markdown: Path) -> Path:
    """Where the records behind a page's section are kept: beside the page, so that a run of
    some workloads (``--only``) keeps the rows of the others."""
    return markdown.with_name(markdown.stem + "_real_workloads.json")


def merged(new: list[dict], run: dict, markdown: Path | None, failed=()) -> list[dict]:
    """``new`` (each marked with ``run``: its command and load) after the kept records of the
    workloads this run did not measure, nor saw fail (``failed``, names), in their order."""
    marked = [dict(record, run=run) for record in new]
    path = None if markdown is None else records_path(markdown)
    if path is None or not path.exists():
        return marked
    replaced = {record["workload"] for record in new} | set(failed)
    kept = [r for r in json.loads(path.read_text()) if r["workload"] not in replaced]
    return kept + marked


def save(records: list[dict], markdown: Path) -> None:
    records_path(markdown).write_text(json.dumps(records, indent=1, default=str) + "\n")


def _runs(records: list[dict]) -> list[str]:
    """One line per run the records come from: its command, load and workloads."""
    runs: dict[tuple, list[str]] = {}
    for r in records:
        run = r.get("run", {})
        key = (run.get("command", "unknown"), run.get("loaded", "load unknown"))
        if r["workload"] not in runs.setdefault(key, []):
            runs[key].append(r["workload"])
    return [
        f"- Command: `{command}` ({', '.join(workloads)}). {loaded}."
        for (command, loaded), workloads in runs.items()
    ]


def section(records: list[dict], failures: list[str] = ()) -> str:
    """The Markdown section, between the ``START`` and ``END`` markers, of records marked with
    the run that made them (``merged``); ``failures``: the workloads that did not pass their
    cross-check and were not timed."""
    lines = [
        START,
        "## Real training workloads",
        "",
        "Models written for PyTorch the way its users write them (`benchmarks/suite/gpt_model.py`"
        ", `resnet18_model.py`, `lstm_lm_model.py`) and run on BuildingAI from the same source "
        "text, with only the three import lines changed. Each step is forward, loss, backward, "
        "clipping where the workload clips, and the optimizer's update.",
        "",
        *_runs(records),
        "- Four forms of each step, timed interleaved after warm-up, medians of "
        "7 repetitions (min–max in brackets): BuildingAI eager, BuildingAI compiled "
        "(`buildingai.compile` of the whole step), PyTorch eager, and `torch.compile` "
        "(Inductor) of the model as nanoGPT compiles it (`model = torch.compile(model)`: "
        "forward and backward compiled, the clipping and the optimizer step eager).",
        "- Compilation is timed separately: the seconds from nothing compiled to the first "
        "step's loss (tracing, optimisation, code generation and that step). Each thread count "
        "compiles afresh, since Inductor writes the thread count into the code it generates; "
        "Inductor's on-disk cache is empty for a workload's first thread count (its C++ "
        "header and kernels are built then) and keeps that for the next.",
        "- Memory: the peak resident set of a process that imports one library only, builds "
        "the model and runs 5 steps on one thread (its own high-water mark, `VmHWM`; see "
        "`benchmarks/suite/peak_memory.py` for why not `ru_maxrss`); in brackets, the same "
        "before the first step (library, model and batch). A one-step process of BuildingAI "
        "runs first and fills numba's disk cache, so that LLVM's compile memory (paid once "
        "per machine) does not count.",
        "- Before timing, a step of each form from the same weights is compared with PyTorch "
        "eager's (losses to 1e-4; parameters as in the method above; `resnet18` to four times "
        "PyTorch's own float32 error against a float64 step, each form's own allowed three times "
        "it, see `benchmarks/suite/resnet18.py`"
        "; `gpt` leaves out Adam steps of gradients below 1e-6, see `benchmarks/suite/gpt.py`).",
        "- Where BuildingAI's step spends its time, op by op: `python -m "
        "benchmarks.real_op_times WORKLOAD [--threads N] [--compiled]`; phase by phase "
        "(forward, backward, clipping, update) beside PyTorch's: `python -m "
        "benchmarks.real_phases WORKLOAD [--threads N]`.",
        "",
        "### Step time and throughput",
        "",
        _times_table(records),
        "",
        "### Compile time (first call, compilation included)",
        "",
        _compile_table(records),
        "",
        "### Peak resident memory",
        "",
        _memory_table(records),
        "",
        "### Cross-check (one step from the same weights)",
        "",
        _check_table(records),
        "",
    ]
    if failures:
        lines += ["### Aborted (not timed)", "", *[f"- {f}" for f in failures], ""]
    lines.append(END)
    return "\n".join(lines)

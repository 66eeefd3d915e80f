"""``plot_metrics``: the curves of a Trainer run, read from the ``metrics.jsonl`` its
``MetricsLogger`` writes in the run directory (optional extra ``vis``)."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

from ..utils.extras import require

METRICS_FILE = "metrics.jsonl"


def read_metrics(run_dir: str | os.PathLike) -> dict[str, list[tuple[int, float]]]:
    """``{metric: [(step, value), ...]}`` from ``run_dir/metrics.jsonl``, in file order."""
    path = Path(run_dir) / METRICS_FILE
    if not path.is_file():
        raise FileNotFoundError(
            f"[plot_metrics] no {METRICS_FILE} in {run_dir}: not a Trainer run directory, or "
            "the run logged nothing yet (the Trainer's MetricsLogger writes it on each log)"
        )
    curves: dict[str, list[tuple[int, float]]] = {}
    for line in path.read_text().splitlines():
        if not line.strip():
            continue
        record = json.loads(line)
        step = record.get("step", len(curves))
        for key, value in record.items():
            if key in ("step", "epoch") or not isinstance(value, (int, float)):
                continue
            curves.setdefault(key, []).append((step, float(value)))
    return curves


def plot_metrics(
    run_dir: str | os.PathLike,
    path: str | os.PathLike | None = None,
    *,
    metrics: list[str] | None = None,
    columns: int = 2,
):
    """Draw each metric of a Trainer run against the step, one panel per metric (``metrics``
    picks and orders them; default all). Saves to ``path`` when given (PNG, SVG, PDF by
    suffix). Returns the matplotlib ``Figure``."""
    figure_module = require("matplotlib.figure", "vis", "plot_metrics")
    curves = read_metrics(run_dir)
    names = list(curves) if metrics is None else list(metrics)
    missing = [name for name in names if name not in curves]
    if missing or not names:
        raise KeyError(
            f"[plot_metrics] the run in {run_dir} has no metric {missing[0]!r}; it logged: "
            f"{', '.join(curves) or 'nothing'}"
            if missing
            else f"[plot_metrics] the run in {run_dir} logged no numbers yet"
        )
    columns = max(1, min(columns, len(names)))
    rows = math.ceil(len(names) / columns)
    figure = figure_module.Figure(figsize=(5 * columns, 3 * rows), layout="constrained")
    for index, name in enumerate(names):
        axes = figure.add_subplot(rows, columns, index + 1)
        steps = [step for step, _ in curves[name]]
        values = [value for _, value in curves[name]]
        axes.plot(steps, values, marker="o" if len(values) < 30 else None, markersize=3)
        axes.set_title(name, fontsize=10)
        axes.set_xlabel("step")
        axes.grid(alpha=0.3)
    if path is not None:
        figure.savefig(Path(path))
    return figure

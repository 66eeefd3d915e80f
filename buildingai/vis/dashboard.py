"""``LiveDashboard``: training curves while the run goes.

    dashboard = LiveDashboard(metrics=["loss", "accuracy"], html_path="curves.html")
    for epoch in range(epochs):
        ...
        dashboard.update({"loss": loss, "accuracy": accuracy})
    dashboard.save("curves.png")

On a terminal it keeps a live table (rich: last, best, a sparkline per metric); elsewhere (logs,
CI) it prints one plain line per update. With ``html_path`` it rewrites a self-contained page
of the curves (inline SVG, no network) as updates come (at most every ``write_every_s``); the
page reloads itself every ``refresh_s`` seconds until ``close()``. ``save`` draws a PNG with matplotlib (extra ``vis``).
"""

from __future__ import annotations

import html
import math
import os
import sys
import time
from pathlib import Path
from typing import IO

from ..utils.extras import require

_SPARKS = "▁▂▃▄▅▆▇█"


class LiveDashboard:
    """Curves of the named metrics, updated by ``update``.

    Args:
        metrics: the metric names to follow, in display order (keys of ``update``'s dict;
            others are ignored). None follows every key seen.
        html_path: where to keep the HTML page of the curves (None: no page).
        file: the stream for the terminal view or the plain lines (default ``sys.stdout``).
        live: force the rich live view on (True) or off (False); None: on when ``file`` is a
            terminal and rich is installed.
        refresh_s: how often the open HTML page reloads itself while the run goes.
        write_every_s: the least time between two writes of the page (updates in between
            only add points; ``close()`` always writes), so per-step updates stay cheap.
        title: shown above the view and the page.
    """

    def __init__(
        self,
        metrics: list[str] | None = None,
        *,
        html_path: str | os.PathLike | None = None,
        file: IO[str] | None = None,
        live: bool | None = None,
        refresh_s: float = 2.0,
        write_every_s: float = 1.0,
        title: str = "training",
    ) -> None:
        self.names = list(metrics) if metrics is not None else []
        self._follow_all = metrics is None
        self.history: dict[str, list[tuple[int, float]]] = {name: [] for name in self.names}
        self.html_path = None if html_path is None else Path(html_path)
        self.file = file if file is not None else sys.stdout
        self.refresh_s = refresh_s
        self.write_every_s = write_every_s
        self._written_at = -math.inf
        self.title = title
        self.updates = 0
        self._live_wanted = live
        self._live = None
        self.closed = False

    # ----- feeding it ---------------------------------------------------------------------
    def update(self, metrics: dict, step: int | None = None) -> None:
        """Add one point per metric (numbers or one-element tensors) at ``step`` (default: the
        number of updates so far), then refresh the terminal view and the page."""
        step = self.updates if step is None else int(step)
        self.updates += 1
        for name, value in metrics.items():
            if name not in self.history:
                if not self._follow_all:
                    continue
                self.names.append(name)
                self.history[name] = []
            self.history[name].append((step, _number(name, value)))
        self._show(step)
        now = time.monotonic()
        if self.html_path is not None and now - self._written_at >= self.write_every_s:
            self._written_at = now
            self._write_html()

    def close(self) -> None:
        """Stop the live view and write the page one last time, without the reload."""
        self.closed = True
        if self._live is not None:
            self._live.stop()
            self._live = None
        if self.html_path is not None:
            self._write_html()

    def __enter__(self) -> LiveDashboard:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    # ----- terminal -----------------------------------------------------------------------
    def _use_live(self) -> bool:
        if self._live_wanted is not None:
            return self._live_wanted
        isatty = getattr(self.file, "isatty", None)
        if not (isatty and isatty()):
            return False
        try:
            import rich  # noqa: F401 - only whether it is there
        except ImportError:
            return False
        return True

    def _show(self, step: int) -> None:
        if not self._use_live():
            values = "  ".join(
                f"{name}={points[-1][1]:.4g}"
                for name, points in self.history.items()
                if points and points[-1][0] == step
            )
            print(f"{self.title} step {step}  {values}", file=self.file, flush=True)
            return
        if self._live is None:
            live = require("rich.live", "vis", "LiveDashboard's terminal view")
            console = require("rich.console", "vis", "LiveDashboard's terminal view")
            self._live = live.Live(
                self._rich_table(), console=console.Console(file=self.file), auto_refresh=False
            )
            self._live.start()
        self._live.update(self._rich_table(), refresh=True)

    def _rich_table(self):
        table_module = require("rich.table", "vis", "LiveDashboard's terminal view")
        table = table_module.Table(title=f"{self.title} — {self.updates} updates")
        for column in ("metric", "step", "last", "min", "max", "curve"):
            table.add_column(column, justify="left" if column in ("metric", "curve") else "right")
        for name, points in self.history.items():
            if not points:
                table.add_row(name, "-", "-", "-", "-", "")
                continue
            values = [value for _, value in points]
            table.add_row(
                name,
                str(points[-1][0]),
                f"{values[-1]:.4g}",
                f"{min(values):.4g}",
                f"{max(values):.4g}",
                sparkline(values),
            )
        return table

    # ----- the page -----------------------------------------------------------------------
    def html(self) -> str:
        """The page: one SVG chart per metric, reloading itself while the run is open."""
        refresh = "" if self.closed else f'<meta http-equiv="refresh" content="{self.refresh_s:g}">'
        charts = "\n".join(
            f'<section class="metric"><h2>{html.escape(name)}</h2>{_summary(points)}'
            f"{svg_chart(points)}</section>"
            for name, points in self.history.items()
        )
        state = "finished" if self.closed else "running"
        return _PAGE.format(
            title=html.escape(self.title),
            refresh=refresh,
            state=state,
            updates=self.updates,
            charts=charts,
        )

    def _write_html(self) -> None:
        # write then rename, so a reloading browser never reads half a page
        partial = self.html_path.with_name(self.html_path.name + ".partial")
        partial.write_text(self.html(), encoding="utf-8")
        os.replace(partial, self.html_path)

    # ----- picture ------------------------------------------------------------------------
    def save(self, path: str | os.PathLike):
        """Draw the curves with matplotlib (one panel per metric) and save them to ``path``
        (PNG, or SVG/PDF by suffix). Returns the ``Figure``."""
        figure_module = require("matplotlib.figure", "vis", "LiveDashboard.save")
        names = [name for name in self.names if self.history.get(name)]
        if not names:
            raise ValueError(
                "[LiveDashboard.save] no values yet; call dashboard.update({...}) first"
            )
        figure = figure_module.Figure(figsize=(5 * len(names), 3.2), layout="constrained")
        for index, name in enumerate(names):
            axes = figure.add_subplot(1, len(names), index + 1)
            steps = [step for step, _ in self.history[name]]
            values = [value for _, value in self.history[name]]
            axes.plot(steps, values, marker="o" if len(values) < 30 else None, markersize=3)
            axes.set_title(name)
            axes.set_xlabel("step")
            axes.grid(alpha=0.3)
        figure.savefig(Path(path))
        return figure


def sparkline(values: list[float], width: int = 30) -> str:
    """The last ``width`` values as block characters, lowest to highest."""
    values = [v for v in values[-width:] if math.isfinite(v)]
    if not values:
        return ""
    low, high = min(values), max(values)
    span = (high - low) or 1.0
    return "".join(_SPARKS[int((v - low) / span * (len(_SPARKS) - 1))] for v in values)


def svg_chart(points: list[tuple[int, float]], width: int = 420, height: int = 180) -> str:
    """An inline SVG line chart of ``(step, value)`` points, with its axis ranges labelled and
    each point's value in a hover title."""
    finite = [(s, v) for s, v in points if math.isfinite(v)]
    if not finite:
        return f'<svg class="chart" width="{width}" height="{height}"></svg>'
    pad = 36
    steps = [s for s, _ in finite]
    values = [v for _, v in finite]
    s0, s1 = min(steps), max(steps)
    v0, v1 = min(values), max(values)
    s_span, v_span = (s1 - s0) or 1, (v1 - v0) or 1.0

    def x(step):
        return pad + (step - s0) / s_span * (width - 2 * pad)

    def y(value):
        return height - pad + -(value - v0) / v_span * (height - 2 * pad)

    line = " ".join(f"{x(s):.1f},{y(v):.1f}" for s, v in finite)
    dots = "".join(
        f'<circle cx="{x(s):.1f}" cy="{y(v):.1f}" r="2.5"><title>step {s}: {v:.6g}</title></circle>'
        for s, v in finite[-200:]
    )
    return (
        f'<svg class="chart" width="{width}" height="{height}" viewBox="0 0 {width} {height}">'
        f'<rect x="{pad}" y="{pad}" width="{width - 2 * pad}" height="{height - 2 * pad}" '
        'fill="none" stroke="#ddd"/>'
        f'<polyline fill="none" stroke="#4c72b0" stroke-width="1.8" points="{line}"/>{dots}'
        f'<text x="{pad}" y="{height - 10}" font-size="11">{s0}</text>'
        f'<text x="{width - pad}" y="{height - 10}" font-size="11" text-anchor="end">{s1}</text>'
        f'<text x="4" y="{pad}" font-size="11">{v1:.4g}</text>'
        f'<text x="4" y="{height - pad}" font-size="11">{v0:.4g}</text></svg>'
    )


def _summary(points: list[tuple[int, float]]) -> str:
    if not points:
        return "<p>no values yet</p>"
    values = [value for _, value in points]
    return (
        f"<p>last {values[-1]:.6g} at step {points[-1][0]} · min {min(values):.6g} · "
        f"max {max(values):.6g}</p>"
    )


def _number(name: str, value) -> float:
    if hasattr(value, "item"):
        value = value.item()
    try:
        return float(value)
    except (TypeError, ValueError):
        raise TypeError(
            f"[LiveDashboard] metric {name!r} must be a number or a one-element tensor, got "
            f"{type(value).__name__}"
        ) from None


_PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
{refresh}
<title>{title}</title>
<style>
body {{ font: 14px/1.4 system-ui, sans-serif; margin: 16px; color: #222; }}
.metric {{ display: inline-block; margin: 0 16px 16px 0; vertical-align: top; }}
h2 {{ font-size: 15px; margin: 0; }}
p {{ margin: 2px 0 4px; font-size: 12px; color: #555; }}
circle {{ fill: #4c72b0; }}
</style>
</head>
<body>
<h1>{title}</h1>
<p id="state">{state} · {updates} updates</p>
{charts}
</body>
</html>
"""

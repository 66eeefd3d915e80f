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
            f"{svg_chart(points, y_title=name)}</section>"
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

    def _repr_html_(self) -> str:
        """What Jupyter shows for the dashboard: its charts as they stand (display it again, or
        end a cell with it, to see newer points)."""
        charts = "".join(
            f'<div style="display: inline-block; margin: 0 16px 8px 0; vertical-align: top;">'
            f"<b>{html.escape(name)}</b>{_summary(points)}{svg_chart(points, y_title=name)}</div>"
            for name, points in self.history.items()
        )
        return f'<div class="buildingai-dashboard">{charts or "<p>no values yet</p>"}</div>'

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
            axes.set_ylabel(name)
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


def svg_chart(
    points: list[tuple[int, float]],
    width: int = 420,
    height: int = 200,
    *,
    x_title: str = "step",
    y_title: str = "value",
) -> str:
    """An inline SVG line chart of ``(step, value)`` points: a frame with round-number ticks and
    grid lines on both axes, the tick labels outside the frame, the axes titled ``x_title`` and
    ``y_title``, and each point's value in a hover title."""
    finite = [(s, v) for s, v in points if math.isfinite(v)]
    if not finite:
        return f'<svg class="chart" width="{width}" height="{height}"></svg>'
    steps = [s for s, _ in finite]
    values = [v for _, v in finite]
    s0, s1 = min(steps), max(steps)
    v0, v1 = min(values), max(values)
    if s0 == s1:
        s0, s1 = s0 - 1, s1 + 1
    if v0 == v1:
        v0, v1 = v0 - (abs(v0) or 1.0) * 0.1, v1 + (abs(v1) or 1.0) * 0.1
    x_ticks = [t for t in nice_ticks(s0, s1) if t == int(t)]
    y_ticks = nice_ticks(v0, v1)
    y_labels = [_tick_label(t, y_ticks) for t in y_ticks]
    # the frame starts right of the widest value label and the rotated title: nothing overlaps
    left = _TITLE_BAND + _TICK_GAP + _CHAR_PX * max(len(label) for label in y_labels)
    right, top, bottom = width - 14, 10, height - _TICK_GAP - _FONT_PX - _TITLE_BAND
    s_span, v_span = s1 - s0, v1 - v0

    def x(step):
        return left + (step - s0) / s_span * (right - left)

    def y(value):
        return bottom - (value - v0) / v_span * (bottom - top)

    parts = [
        f'<svg class="chart" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
        f'font-size="{_FONT_PX}" fill="#444">',
        f'<rect x="{left:.1f}" y="{top}" width="{right - left:.1f}" height="{bottom - top}" '
        'fill="none" stroke="#bbb"/>',
    ]
    for tick, label in zip(y_ticks, y_labels):
        parts.append(
            f'<line class="grid" x1="{left:.1f}" x2="{right}" y1="{y(tick):.1f}" '
            f'y2="{y(tick):.1f}" stroke="#eee"/><text class="y-tick" x="{left - _TICK_GAP:.1f}" '
            f'y="{y(tick) + _FONT_PX / 3:.1f}" text-anchor="end">{label}</text>'
        )
    for tick in x_ticks:
        parts.append(
            f'<line class="grid" x1="{x(tick):.1f}" x2="{x(tick):.1f}" y1="{top}" y2="{bottom}" '
            f'stroke="#eee"/><text class="x-tick" x="{x(tick):.1f}" '
            f'y="{bottom + _TICK_GAP + _FONT_PX:.1f}" text-anchor="middle">{int(tick)}</text>'
        )
    parts.append(
        f'<text class="x-title" x="{(left + right) / 2:.1f}" y="{height - 4}" '
        f'text-anchor="middle">{html.escape(x_title)}</text>'
        f'<text class="y-title" transform="translate({_FONT_PX}, {(top + bottom) / 2:.1f}) '
        f'rotate(-90)" text-anchor="middle">{html.escape(y_title)}</text>'
    )
    line = " ".join(f"{x(s):.1f},{y(v):.1f}" for s, v in finite)
    parts.append(f'<polyline fill="none" stroke="#4c72b0" stroke-width="1.8" points="{line}"/>')
    parts.extend(
        f'<circle cx="{x(s):.1f}" cy="{y(v):.1f}" r="2.5"><title>step {s}: {v:.6g}</title></circle>'
        for s, v in finite[-200:]
    )
    parts.append("</svg>")
    return "".join(parts)


# the chart's text metrics, in pixels: a digit of an 11 px system font is at most ~6.5 px wide
_FONT_PX = 11
_CHAR_PX = 7
_TICK_GAP = 6
_TITLE_BAND = 18


def nice_ticks(low: float, high: float, count: int = 5) -> list[float]:
    """About ``count`` round numbers (1, 2 or 5 times a power of ten apart) within
    ``[low, high]``, lowest first."""
    raw = (high - low) / max(count - 1, 1)
    power = 10 ** math.floor(math.log10(raw))
    ratio = raw / power
    step = power * (1 if ratio < 1.5 else 2 if ratio < 3 else 5 if ratio < 7 else 10)
    while True:
        first, last = math.ceil(low / step - 1e-9), math.floor(high / step + 1e-9)
        if last > first or step < raw / 100:  # two ticks at least, so the scale can be read
            break
        step /= 2
    return [round(k * step, 12) for k in range(first, last + 1)]


def _tick_label(value: float, ticks: list[float]) -> str:
    """``value`` with as many decimals as the tick spacing needs (0.25, not 0.250000001)."""
    spacing = ticks[1] - ticks[0] if len(ticks) > 1 else abs(value) or 1.0
    magnitude = max(abs(ticks[0]), abs(ticks[-1]))
    if magnitude >= 1e5 or magnitude < 1e-3 and magnitude != 0:
        return f"{value:.2g}"
    decimals = max(0, -math.floor(math.log10(spacing) + 1e-9))
    return f"{value:.{decimals}f}"


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
<meta name="viewport" content="width=device-width, initial-scale=1">
{refresh}
<title>{title}</title>
<style>
body {{ font: 14px/1.4 system-ui, sans-serif; margin: 16px; color: #222; }}
.metric {{ display: inline-block; margin: 0 16px 16px 0; vertical-align: top; }}
h2 {{ font-size: 15px; margin: 0; }}
p {{ margin: 2px 0 4px; font-size: 12px; color: #555; }}
circle {{ fill: #4c72b0; }}
.metric {{ max-width: 100%; }}
svg.chart {{ max-width: 100%; height: auto; }}  /* a phone scales the chart down */
</style>
</head>
<body>
<h1>{title}</h1>
<p id="state">{state} · {updates} updates</p>
{charts}
</body>
</html>
"""

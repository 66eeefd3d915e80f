"""The dashboard's HTML page in headless Chromium: no console errors, the metric names and
values in its DOM."""

from __future__ import annotations

import io

import pytest

from buildingai.vis import LiveDashboard
from tests.browser import open_page

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def test_dashboard_page_loads_with_metric_names(tmp_path):
    page_path = tmp_path / "curves.html"
    dashboard = LiveDashboard(
        metrics=["loss", "accuracy"],
        html_path=page_path,
        file=io.StringIO(),
        refresh_s=60,
        write_every_s=0,
    )
    for step in range(6):
        dashboard.update({"loss": 1.0 / (step + 1), "accuracy": step / 6})
    page = open_page(page_path)
    assert page.errors == []
    assert "loss" in page.text and "accuracy" in page.text and "6 updates" in page.text
    assert page.html.count("<polyline") == 2
    dashboard.close()
    assert open_page(page_path).errors == []


# Each label's box, as Chromium lays it out, against the chart's frame: a tick label lies wholly
# outside the frame (left of it for values, below it for steps), titles overlap no tick label.
LABEL_BOXES = """() => [...document.querySelectorAll("svg.chart")].map((svg) => {
  const origin = svg.getBoundingClientRect();
  const box = (el) => {  // in the chart's pixels, after any rotation
    const r = el.getBoundingClientRect();
    return {x: r.x - origin.x, y: r.y - origin.y, width: r.width, height: r.height};
  };
  const frame = box(svg.querySelector("rect"));
  const boxes = (selector) => [...svg.querySelectorAll(selector)].map(box);
  const inside = (b) => !(b.x + b.width <= frame.x || b.x >= frame.x + frame.width ||
                          b.y + b.height <= frame.y || b.y >= frame.y + frame.height);
  const meet = (a, b) => !(a.x + a.width <= b.x || b.x + b.width <= a.x ||
                           a.y + a.height <= b.y || b.y + b.height <= a.y);
  const ticks = boxes(".x-tick, .y-tick"), titles = boxes(".x-title, .y-title");
  return {
    ticks: ticks.length,
    titles: titles.length,
    overlapping: ticks.filter(inside).length + titles.filter(inside).length,
    crowded: titles.filter((t) => ticks.some((b) => meet(t, b))).length,
    outside: [...ticks, ...titles].filter((b) => b.x < 0 || b.y < 0 ||
      b.x + b.width > svg.viewBox.baseVal.width || b.y + b.height > svg.viewBox.baseVal.height).length,
  };
})"""


def test_axis_labels_stay_outside_the_frame_and_the_axes_are_titled(tmp_path):
    from tests.browser import browser_page

    page_path = tmp_path / "curves.html"
    dashboard = LiveDashboard(
        metrics=["loss", "accuracy"], html_path=page_path, file=io.StringIO(), refresh_s=60
    )
    for step in range(0, 2000, 50):  # long labels on both axes: 1950 and 0.98395
        dashboard.update({"loss": 2.3 / (1 + step), "accuracy": 0.9 + step * 4.2e-5}, step)
    dashboard.close()
    for width in (1280, 390):  # a laptop, a phone: the charts scale down, nothing moves apart
        with browser_page(width=width) as page:
            page.goto(page_path.as_uri())
            charts = page.evaluate(LABEL_BOXES)
            page.screenshot(path=str(tmp_path / f"curves-{width}.png"), full_page=True)
            sideways = page.evaluate("document.scrollingElement.scrollWidth - innerWidth")
            assert page.console_errors == [] and sideways <= 0
        assert len(charts) == 2
        for chart in charts:
            assert chart["ticks"] >= 6 and chart["titles"] == 2
            assert chart["overlapping"] == 0 and chart["crowded"] == 0 and chart["outside"] == 0

"""The dashboard's HTML page in headless Chromium: no console errors, the metric names and
values in its DOM."""

from __future__ import annotations

import io

import pytest

from buildingai.vis import LiveDashboard
from tests.browser import open_page

pytestmark = pytest.mark.browser


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

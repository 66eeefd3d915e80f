"""LiveDashboard: plain lines off a terminal, a rich table on one, the HTML page of curves
rewritten as the run goes, and the PNG from matplotlib."""

from __future__ import annotations

import io
import re

import pytest

import buildingai as bai
from buildingai.vis import LiveDashboard
from buildingai.vis.dashboard import nice_ticks, sparkline, svg_chart


def test_plain_lines_when_not_on_a_terminal(tmp_path):
    out = io.StringIO()
    dashboard = LiveDashboard(metrics=["loss", "accuracy"], file=out)
    for epoch in range(3):
        dashboard.update(
            {"loss": 1.0 / (epoch + 1), "accuracy": bai.tensor(0.5 + 0.1 * epoch), "lr": 0.1}
        )
    lines = out.getvalue().splitlines()
    assert lines == [
        "training step 0  loss=1  accuracy=0.5",
        "training step 1  loss=0.5  accuracy=0.6",
        "training step 2  loss=0.3333  accuracy=0.7",
    ]
    assert list(dashboard.history) == ["loss", "accuracy"]  # "lr" was not asked for


def test_rich_view_on_a_terminal():
    pytest.importorskip("rich")
    out = io.StringIO()
    with LiveDashboard(metrics=["loss"], file=out, live=True) as dashboard:
        for step in range(4):
            dashboard.update({"loss": 4 - step}, step=10 * step)
    text = out.getvalue()
    assert "loss" in text and "30" in text and sparkline([4, 3, 2, 1]) in text
    assert "training step" not in text  # the table, not plain lines


def test_html_page_is_rewritten_as_the_run_goes(tmp_path):
    page = tmp_path / "curves.html"
    dashboard = LiveDashboard(
        metrics=["loss", "accuracy"], html_path=page, file=io.StringIO(), write_every_s=0
    )
    dashboard.update({"loss": 2.0, "accuracy": 0.1})
    first = page.read_text()
    assert 'http-equiv="refresh"' in first and "<h2>loss</h2>" in first and "1 updates" in first
    dashboard.update({"loss": 1.0, "accuracy": 0.4})
    second = page.read_text()
    assert "2 updates" in second and second.count("<polyline") == 2
    dashboard.close()
    final = page.read_text()
    assert 'http-equiv="refresh"' not in final and "finished" in final
    assert "http://" not in final and "<script src" not in final  # self-contained


def test_save_writes_a_png(tmp_path):
    pytest.importorskip("matplotlib")
    dashboard = LiveDashboard(metrics=["loss"], file=io.StringIO())
    with pytest.raises(ValueError, match="no values yet"):
        dashboard.save(tmp_path / "empty.png")
    for step in range(5):
        dashboard.update({"loss": 1.0 / (step + 1)})
    figure = dashboard.save(tmp_path / "curves.png")
    assert (tmp_path / "curves.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert figure.axes[0].get_title() == "loss"


def test_user_code_as_the_issue_writes_it(capsys):
    from buildingai.vis import LiveDashboard

    dashboard = LiveDashboard(metrics=["loss", "accuracy"])
    for epoch in range(2):
        metrics = {"loss": 0.5 / (epoch + 1), "accuracy": 0.8}
        dashboard.update(metrics)
    assert "loss=0.25" in capsys.readouterr().out


def test_non_numbers_are_refused_naming_the_metric():
    dashboard = LiveDashboard(metrics=["loss"], file=io.StringIO())
    with pytest.raises(TypeError, match="metric 'loss' must be a number"):
        dashboard.update({"loss": "high"})


def frame_of(svg: str) -> tuple[float, float, float, float]:
    """(left, top, right, bottom) of the chart's frame."""
    rect = re.search(r'<rect x="([\d.]+)" y="([\d.]+)" width="([\d.]+)" height="([\d.]+)"', svg)
    left, top, width, height = map(float, rect.groups())
    return left, top, left + width, top + height


def test_svg_chart_scales_points_into_the_frame():
    svg = svg_chart([(0, 1.0), (10, 3.0)], width=200, height=100)
    left, top, right, bottom = frame_of(svg)
    first, last = re.search(r'points="([^"]+)"', svg).group(1).split()
    assert first == f"{left:.1f},{bottom:.1f}" and last == f"{right:.1f},{top:.1f}"


def test_svg_chart_has_round_ticks_and_axis_titles():
    svg = svg_chart([(step, 0.9812 + step * 1e-4) for step in range(28)], y_title="accuracy")
    assert re.findall(r'class="y-tick"[^>]*>([^<]+)<', svg) == [
        "0.9815", "0.9820", "0.9825", "0.9830", "0.9835"
    ]  # fmt: skip
    assert re.findall(r'class="x-tick"[^>]*>([^<]+)<', svg) == ["0", "5", "10", "15", "20", "25"]
    assert '<text class="x-title"' in svg and ">step</text>" in svg
    assert 'rotate(-90)" text-anchor="middle">accuracy</text>' in svg
    # the value labels end left of the frame, with room for their longest label
    left = frame_of(svg)[0]
    for x in re.findall(r'class="y-tick" x="([\d.]+)"', svg):
        assert float(x) < left and float(x) - 7 * len("0.9815") > 0


def test_nice_ticks_are_round_and_inside_the_range():
    assert nice_ticks(0, 10) == [0, 2, 4, 6, 8, 10]
    assert nice_ticks(0.1, 0.98) == [0.2, 0.4, 0.6, 0.8]
    assert nice_ticks(-1, 1) == [-1.0, -0.5, 0.0, 0.5, 1.0]
    assert len(nice_ticks(2.3101, 2.3102)) >= 2


def test_a_constant_metric_still_gets_a_scale():
    svg = svg_chart([(0, 0.5), (1, 0.5), (2, 0.5)])
    assert len(re.findall(r'class="y-tick"', svg)) >= 2 and "nan" not in svg
    assert svg_chart([(3, 1.0)]).count("<circle") == 1


def test_page_writes_are_spaced_and_close_always_writes(tmp_path):
    page = tmp_path / "curves.html"
    dashboard = LiveDashboard(
        metrics=["loss"], html_path=page, file=io.StringIO(), write_every_s=60
    )
    dashboard.update({"loss": 2.0})
    dashboard.update({"loss": 1.0})  # within a minute of the first write: points only
    assert "1 updates" in page.read_text()
    dashboard.close()
    assert "2 updates" in page.read_text()

"""The flame graph page in headless Chromium: it loads with no console errors, shows the op and
module names, and zooms and searches without errors."""

from __future__ import annotations

import numpy as np
import pytest

import buildingai as bai
from buildingai import nn
from buildingai.profile import TimeTracer
from tests.browser import browser_page, open_page

pytestmark = pytest.mark.browser


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.encoder = nn.Linear(12, 24)
        self.act = nn.ReLU()
        self.head = nn.Linear(24, 3)

    def forward(self, x):
        return self.head(self.act(self.encoder(x)))


@pytest.fixture(scope="module")
def page_path(tmp_path_factory):
    model = Net()
    x = bai.tensor(np.random.default_rng(0).standard_normal((16, 12)).astype(np.float32))
    with TimeTracer() as tracer:
        for _ in range(2):
            model(x).square().mean().backward()
            tracer.step()
    return tracer.generate_flamegraph(tmp_path_factory.mktemp("flame") / "profile.html")


def test_page_loads_with_names_in_the_dom(page_path):
    page = open_page(page_path)
    assert page.errors == []
    for name in ("linear", "relu", "Net.encoder", "Net.head"):
        assert name in page.text
    assert 'data-name="encoder"' in page.html  # the chart's frames are drawn
    assert 'data-name="grad of linear"' in page.html


def test_zoom_and_search_run_without_errors(page_path):
    with browser_page() as page:
        page.set_default_timeout(10_000)
        page.goto(page_path.resolve().as_uri())
        page.click('.frame[data-name="backward"]')
        widths = page.eval_on_selector('.frame[data-name="backward"]', "e => e.style.width")
        chart = page.eval_on_selector("#chart", "e => e.clientWidth + 'px'")
        assert widths == chart  # the clicked frame now spans the chart
        page.fill("#search", "matmul")
        assert page.locator(".frame.match").count() > 0
        assert "matched" in page.inner_text("#matched")
        page.hover('.frame[data-name="backward"]')
        assert "ms" in page.inner_text("#tooltip")
        page.click("#reset")
        assert page.console_errors == []

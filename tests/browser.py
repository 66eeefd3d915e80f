"""Open a page in headless Chromium for the browser tests (flame graph, dashboard, serving page,
docs site). Every helper here skips the calling test cleanly when Playwright or a Chromium
binary is missing.

    page = open_page(tmp_path / "profile.html")     # a file path or an http:// URL
    assert page.errors == []                        # console errors and uncaught exceptions
    assert "matmul" in page.text                    # the DOM's visible text

    with serve_directory(site) as url, browser_page(width=390) as page:
        page.goto(url + "/index.html")              # a built site over HTTP, a phone's width
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import os
import shutil
import threading
from dataclasses import dataclass, field
from pathlib import Path

import pytest

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "chrome")


def chromium_path() -> str | None:
    """The first Chromium-family binary on PATH (or in BUILDINGAI_CHROMIUM), else None."""
    explicit = os.environ.get("BUILDINGAI_CHROMIUM")
    if explicit and Path(explicit).exists():
        return explicit
    for name in CHROMIUM_NAMES:
        found = shutil.which(name)
        if found:
            return found
    return None


@dataclass
class LoadedPage:
    """What a test checks of a page once it has loaded and settled."""

    html: str
    text: str
    title: str
    errors: list[str] = field(default_factory=list)


@contextlib.contextmanager
def browser_page(width: int = 1280, height: int = 720):
    """A live Playwright page on headless Chromium, ``width`` x ``height`` CSS pixels, for tests
    that click or type; its ``console_errors`` attribute collects console errors and uncaught
    exceptions."""
    playwright = pytest.importorskip("playwright.sync_api", reason="pip install playwright")
    binary = chromium_path()
    if binary is None:
        pytest.skip("no Chromium binary installed (apt-get install -y chromium)")
    with playwright.sync_playwright() as driver:
        browser = driver.chromium.launch(
            executable_path=binary, headless=True, args=["--no-sandbox", "--disable-gpu"]
        )
        try:
            page = browser.new_page(viewport={"width": width, "height": height})
            errors: list[str] = []
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            page.console_errors = errors
            yield page
        finally:
            browser.close()


def open_page(location: str | os.PathLike, settle_ms: int = 300) -> LoadedPage:
    """Load a file path or URL, wait for the network to go idle and ``settle_ms`` more, and
    return its HTML, visible text, title and console errors."""
    url = str(location)
    if "://" not in url:
        url = Path(url).resolve().as_uri()
    with browser_page() as page:
        page.goto(url, wait_until="networkidle")
        page.wait_for_timeout(settle_ms)
        return LoadedPage(
            html=page.content(),
            text=page.inner_text("body"),
            title=page.title(),
            errors=list(page.console_errors),
        )


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 - the base class's signature
        pass


@contextlib.contextmanager
def serve_directory(directory: str | os.PathLike):
    """``directory`` over HTTP on 127.0.0.1 (a site's search fetches its index, which file://
    forbids); yields the base URL, with no trailing slash."""
    handler = functools.partial(_QuietHandler, directory=str(directory))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1})
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)

"""The documentation site builds with ``mkdocs build --strict`` (warnings are errors: a broken
link, a missing page, a reference to a name that does not exist), every internal link of the
built site resolves, and in headless Chromium the pages load without console errors and the
search box finds a page."""

from __future__ import annotations

import pytest

from tests.browser import browser_page, serve_directory

from .site_build import ROOT
from .site_links import broken_links


def test_every_design_note_has_a_page_that_includes_it():
    for note in sorted((ROOT / "docs" / "design_notes").glob("*.md")):
        stub = ROOT / "docs" / "site" / "design_notes" / note.name
        assert stub.exists(), f"add docs/site/design_notes/{note.name} and a nav entry"
        assert f'--8<-- "docs/design_notes/{note.name}"' in stub.read_text()
        assert f"design_notes/{note.name}" in (ROOT / "mkdocs.yml").read_text()


@pytest.mark.slow
def test_site_builds_strict_with_every_page(site):
    pages = sorted(p.relative_to(site).as_posix() for p in site.rglob("*.html"))
    for expected in (
        "index.html",
        "getting_started.html",
        "learning_path/cnn_fashion_mnist.html",
        "engine/dispatch.html",
        "reference/nn.html",
        "design_notes/performance.html",
        "benchmarks.html",
        "coming_from_pytorch.html",
        "guides/index.html",
    ):
        assert expected in pages
    # the design notes are included, not linked: their text is on the page
    assert "--8<--" not in (site / "design_notes" / "dispatch.html").read_text()
    # the engine pages show the source they talk about, with its file
    assert "buildingai/autograd/dispatch.py" in (site / "engine" / "dispatch.html").read_text()


@pytest.mark.slow
def test_every_internal_link_resolves(site):
    assert broken_links(site) == []


@pytest.fixture
def served(site):
    """The built site over HTTP on 127.0.0.1 (search fetches its index, which file:// forbids)."""
    with serve_directory(site) as url:
        yield url


@pytest.mark.browser
@pytest.mark.slow
def test_pages_load_without_console_errors_and_search_finds_im2col(served):
    with browser_page() as page:
        page.set_default_timeout(20_000)
        for path in (
            "index.html",
            "getting_started.html",
            "engine/dispatch.html",
            "learning_path/cnn_fashion_mnist.html",
            "reference/nn.html",
        ):
            page.goto(f"{served}/{path}", wait_until="networkidle")
            assert page.title(), path
        assert page.console_errors == []
        # the engine pages show the quoted source opened
        page.goto(f"{served}/engine/dispatch.html", wait_until="networkidle")
        assert page.locator("article .doc details[open]").count() >= 3

        page.goto(f"{served}/index.html", wait_until="networkidle")
        search = page.locator("input.md-search__input")
        search.click()
        search.press_sequentially("im2col")  # typed key by key, as a reader does
        results = page.locator(".md-search-result__item")
        results.first.wait_for(state="visible")
        assert results.count() > 0
        # the list first shows the results of the letters typed so far ("i"): wait for the page
        # that the whole word finds (the default timeout fails the test when it never comes)
        found = ".md-search-result__list a[href*='learning_path/cnn_fashion_mnist.html']"
        page.locator(found).first.wait_for(state="attached")
        assert (
            "learning_path/cnn_fashion_mnist.html"
            in page.locator(".md-search-result__list").inner_html()
        )
        assert page.console_errors == []

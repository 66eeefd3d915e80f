"""The documentation site's layout, measured in headless Chromium at a laptop's width (1280 px)
and a phone's (390 px): code written to 100 columns shows whole, code blocks and tables never
widen the page (they scroll inside their own box), names in tables never break mid-word, class
pages show their constructor's signature, the navigation is grouped, and a search for a class
name puts the guide before the API reference."""

from __future__ import annotations

import json

import pytest

from tests.browser import browser_page, serve_directory

from .site_build import ROOT

LAPTOP, PHONE = 1280, 390

# what a reader meets first, the widest tables and code, and a page of each kind
PAGES = (
    "index.html",
    "getting_started.html",
    "coming_from_pytorch.html",
    "cheat_sheet.html",
    "learning_path/mlp_mnist.html",
    "learning_path/cnn_fashion_mnist.html",
    "engine/dispatch.html",
    "guides/index.html",
    "guides/profiling_and_debugging.html",
    "guides/quantisation_and_serving.html",
    "reference/optim.html",
    "design_notes/performance.html",
    "benchmarks.html",
)

# Measured in the page. A code block or a table must lie inside the window and the page must
# not scroll sideways. "cut" lists code blocks, and tables of up to four columns (prose tables),
# whose content is wider than their box: the reader would have to scroll them sideways (a record
# of a dozen measured columns may scroll inside its own box). "broken" lists code inside table
# cells that goes onto a new line inside a word (`DataLoade|r`); at a space it may.
MEASURE = """() => {
  // True when the code's text goes onto a new line between two characters of one word (a line may
  // break at a space, or after a hyphen or a slash, as the browser allows there).
  const splitsAWord = (el) => {
    const range = document.createRange();
    let lastTop = null, previous = "";
    for (const node of el.childNodes) {
      if (node.nodeType !== Node.TEXT_NODE) continue;
      const text = node.textContent;
      for (let i = 0; i < text.length; i++) {
        range.setStart(node, i);
        range.setEnd(node, i + 1);
        const rect = range.getClientRects()[0];
        if (rect && rect.width > 0) {
          if (lastTop !== null && rect.top > lastTop + 2 && !/[\\s\\-/]/.test(previous + text[i])) {
            return true;
          }
          lastTop = rect.top;
        }
        previous = text[i];
      }
    }
    return false;
  };
  const width = window.innerWidth, out = {page: 0, outside: [], cut: [], broken: []};
  out.page = document.scrollingElement.scrollWidth - width;
  const name = (el) => el.textContent.trim().split("\\n")[0].slice(0, 60);
  for (const el of document.querySelectorAll("article pre > code, article table")) {
    if (!el.checkVisibility()) continue;
    const box = el.closest(".md-typeset__scrollwrap, .highlight, pre") || el;
    const rect = box.getBoundingClientRect();
    if (rect.left < -1 || rect.right > width + 1) out.outside.push(name(el));
    const table = el.tagName === "TABLE";
    if (table && (el.classList.contains("highlighttable") || el.rows[0].cells.length > 4)) continue;
    const scroller = table ? el.closest(".md-typeset__scrollwrap") || el : el;
    if (scroller.scrollWidth > scroller.clientWidth + 1) out.cut.push(name(el));
  }
  const cells = "article table:not(.highlighttable) :is(td, th) > code";
  for (const el of document.querySelectorAll(cells)) {
    if (el.checkVisibility() && el.getClientRects().length > 1 && splitsAWord(el)) {
      out.broken.push(el.textContent);
    }
  }
  return out;
}"""


def test_navigation_is_grouped_and_lists_each_page_once():
    yaml = pytest.importorskip("yaml")
    nav = yaml.safe_load((ROOT / "mkdocs.yml").read_text())["nav"]
    pages: list[str] = []

    def walk(entries, depth):
        flat = [e for e in entries if isinstance(e, str) or isinstance(next(iter(e.values())), str)]
        assert len(flat) <= 12, f"{len(flat)} pages side by side at depth {depth}: group them"
        for entry in entries:
            value = entry if isinstance(entry, str) else next(iter(entry.values()))
            if isinstance(value, list):
                walk(value, depth + 1)
            else:
                pages.append(value)

    walk(nav, 0)
    assert len(nav) <= 8, "the top level is a handful of sections, one tab each"
    duplicates = sorted({page for page in pages if pages.count(page) > 1})
    assert duplicates == []
    titles = [str(e) for e in _titles(nav)]
    assert titles.count("Memory and precision") == 1


def _titles(entries):
    for entry in entries:
        if isinstance(entry, dict):
            ((title, value),) = entry.items()
            yield title
            if isinstance(value, list):
                yield from _titles(value)


@pytest.mark.slow
def test_class_pages_show_the_constructor_signature(site):
    html = (site / "reference" / "optim.html").read_text()
    adam = html[html.index('id="buildingai.optim.Adam"') :]
    signature = adam[adam.index("doc-signature") : adam.index("</code></pre>")]
    for argument in ("lr", "betas", "eps", "weight_decay"):
        assert f">{argument}</span>" in signature, argument
    linear = (site / "reference" / "nn.html").read_text()
    linear = linear[linear.index('id="buildingai.nn.Linear"') :]
    assert "in_features" in linear[linear.index("doc-signature") : linear.index("</code></pre>")]


@pytest.mark.slow
def test_source_listings_stay_out_of_the_search_index(site):
    html = (site / "reference" / "profile.html").read_text()
    assert '<details class="mkdocstrings-source" data-search-exclude' in html
    index = (site / "search" / "search_index.json").read_text()
    assert "def _record" not in index and "class TimeTracer" not in index


@pytest.mark.slow
@pytest.mark.browser
@pytest.mark.parametrize("width", [LAPTOP, PHONE])
def test_code_and_tables_fit_the_window(site, width):
    problems = {}
    with serve_directory(site) as url, browser_page(width=width) as page:
        page.set_default_timeout(20_000)
        for path in PAGES:
            page.goto(f"{url}/{path}", wait_until="load")
            found = page.evaluate(MEASURE)
            if width == PHONE:
                found["cut"] = []  # a phone scrolls a 100-column block inside its own box
            if found["page"] > 0 or found["outside"] or found["cut"] or found["broken"]:
                problems[path] = found
        assert page.console_errors == []
    assert problems == {}


@pytest.mark.slow
@pytest.mark.browser
def test_searching_a_class_name_finds_the_guide_first(site):
    with serve_directory(site) as url, browser_page() as page:
        page.set_default_timeout(20_000)
        page.goto(f"{url}/index.html", wait_until="networkidle")
        search = page.locator("input.md-search__input")
        search.click()
        search.press_sequentially("TimeTracer")
        results = page.locator(".md-search-result__item > a")
        results.first.wait_for(state="visible")
        page.wait_for_timeout(300)  # the list settles after the last key
        first = results.first.get_attribute("href")
        assert "guides/profiling_and_debugging.html" in first, [
            results.nth(k).get_attribute("href") for k in range(min(results.count(), 5))
        ]


@pytest.mark.slow
def test_learning_path_pages_offer_their_notebook(site):
    page = (site / "learning_path" / "mlp_mnist.html").read_text()
    assert 'href="mlp_mnist.ipynb"' in page and "Open this page as a Jupyter notebook" in page
    notebook = json.loads((site / "learning_path" / "mlp_mnist.ipynb").read_text())
    assert notebook["nbformat"] == 4 and notebook["cells"][0]["cell_type"] == "markdown"
    assert (site / "engine" / "dispatch.ipynb").exists()
    assert not (site / "guides" / "compile.ipynb").exists()  # the learning path only

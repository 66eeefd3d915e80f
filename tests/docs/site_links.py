"""Check the internal links of a built static site: every ``href``/``src`` that points inside the
site names a file that exists and, with ``#anchor``, an element with that id.

    broken = broken_links(Path("site"))   # ["page.html -> missing.html", ...]
"""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit


class _Collector(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []
        self.ids: set[str] = set()

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if value is None:
                continue
            if name in ("href", "src"):
                self.links.append(value)
            elif name in ("id", "name"):
                self.ids.add(value)


def _parse(path: Path) -> _Collector:
    collector = _Collector()
    collector.feed(path.read_text(encoding="utf-8", errors="replace"))
    return collector


def broken_links(site: Path) -> list[str]:
    """``"page -> link"`` for each internal link of ``site``'s pages that leads nowhere."""
    parsed = {path: _parse(path) for path in site.rglob("*.html")}
    broken = []
    for page, collector in parsed.items():
        if page.name == "404.html":  # written for the server's root, whatever the request path
            continue
        for link in collector.links:
            parts = urlsplit(link)
            if parts.scheme or parts.netloc or link.startswith(("mailto:", "javascript:")):
                continue
            target = page if not parts.path else (page.parent / unquote(parts.path)).resolve()
            if target.is_dir():
                target = target / "index.html"
            if not target.exists():
                broken.append(f"{page.relative_to(site)} -> {link}")
                continue
            anchor = unquote(parts.fragment)
            if anchor and target.suffix == ".html":
                ids = parsed[target].ids if target in parsed else _parse(target).ids
                if anchor not in ids:
                    broken.append(f"{page.relative_to(site)} -> {link} (no such anchor)")
    return broken

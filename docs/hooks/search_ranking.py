"""MkDocs hook: what the site's search ranks first.

- The source listings that the API reference and the engine pages show stay out of the search
  index: a search for a name finds the prose that explains it, not every line of code that
  mentions it.
- A guide is tagged with the names it imports from ``buildingai``'s modules (``from
  buildingai.profile import TimeTracer``), and Material's search ranks a tag above any title: a
  search for ``TimeTracer`` opens on the guide that teaches it, then on its API reference.
"""

from __future__ import annotations

import ast
import importlib.util
import re

# mkdocstrings opens each listing with this tag; Material's search skips an element that
# carries data-search-exclude, and everything inside it
SOURCE_LISTING = re.compile(r'<details class="mkdocstrings-source"(?=[\s>])')
PYTHON_BLOCK = re.compile(r"^```python[^\n]*\n(.*?)^```", re.MULTILINE | re.DOTALL)
TAGGED_FOLDERS = ("guides/",)


def imported_names(markdown: str) -> list[str]:
    """The names that the page's Python blocks import from a submodule of ``buildingai``, in
    order of appearance; modules (``from buildingai.nn import functional``) are left out."""
    names: list[str] = []
    for block in PYTHON_BLOCK.findall(markdown):
        try:
            tree = ast.parse(block)
        except SyntaxError:  # a fragment shown for reading, not run
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("buildingai."):
                for alias in node.names:
                    if alias.name not in names and not _is_module(f"{node.module}.{alias.name}"):
                        names.append(alias.name)
    return names


def _is_module(dotted: str) -> bool:
    try:
        return importlib.util.find_spec(dotted) is not None
    except (ImportError, ValueError):  # a parent that is not a package
        return False


def on_page_markdown(markdown: str, page, **_: object) -> str:
    if page.file.src_uri.startswith(TAGGED_FOLDERS) and "tags" not in page.meta:
        page.meta["tags"] = imported_names(markdown)
    return markdown


def on_page_content(html: str, **_: object) -> str:
    return SOURCE_LISTING.sub('<details class="mkdocstrings-source" data-search-exclude', html)

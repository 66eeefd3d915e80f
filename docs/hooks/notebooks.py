"""MkDocs hook: each page of the learning path is also offered as a Jupyter notebook, made from
the page itself at build time (``tools/notebooks.py``), and the page links to it under its
title."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from mkdocs.structure.files import File

_TOOL = Path(__file__).resolve().parents[2] / "tools" / "notebooks.py"
_spec = importlib.util.spec_from_file_location("buildingai_docs_notebooks", _TOOL)
notebooks = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(notebooks)

_PAGES = {page.relative_to(notebooks.SITE).as_posix(): page for page in notebooks.pages()}


def on_files(files, config, **_: object):
    for src_uri, page in _PAGES.items():
        uri = src_uri.removesuffix(".md") + ".ipynb"
        files.append(File.generated(config, uri, content=notebooks.notebook_json(page)))
    return files


def on_page_markdown(markdown: str, page, **_: object) -> str:
    if page.file.src_uri not in _PAGES:
        return markdown
    name = Path(page.file.src_uri).with_suffix(".ipynb").name
    link = (
        f"*[Open this page as a Jupyter notebook]({name}): the same text and code, cell by cell.*"
    )
    lines = markdown.split("\n")
    for index, line in enumerate(lines):
        if line.startswith("# "):
            lines[index + 1 : index + 1] = ["", link]
            return "\n".join(lines)
    return link + "\n\n" + markdown

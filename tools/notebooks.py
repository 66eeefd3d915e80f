"""The learning path as Jupyter notebooks, made from the site's own pages so the two cannot
drift: prose becomes Markdown cells, each ```python block a code cell, in page order.

    python tools/notebooks.py                 # writes notebooks/learning_path/*.ipynb, ...
    python tools/notebooks.py --out /tmp/nb   # somewhere else

A block marked ``<!-- skip: reason -->`` stays as shown code in the Markdown (it is not meant to
run); a ``::: buildingai.x.name`` directive, which the site renders as the quoted source,
becomes a code cell that prints that source. The notebooks are plain nbformat 4 JSON, written
without any Jupyter package; the documentation site offers them for download beside each page,
and the test suite runs them with nbclient (``tests/docs/test_notebooks.py``).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SITE = ROOT / "docs" / "site"
# the learning path of the site's navigation: the three models, then the engine
FOLDERS = ("learning_path", "engine")

_FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*(\S*)")
_SKIP = re.compile(r"^<!--\s*skip:\s*(.+?)\s*-->$")
_MARKER = re.compile(r"^<!--\s*(slow|skip:.*?)\s*-->\s*$")
_DIRECTIVE = re.compile(r"^:::\s+(\S+)\s*$")


def pages() -> list[Path]:
    """The learning path's pages, folder by folder, in name order within a folder."""
    return [page for folder in FOLDERS for page in sorted((SITE / folder).glob("*.md"))]


def notebook(page: Path) -> dict:
    """The nbformat 4 notebook of one page of the site."""
    lines = page.read_text(encoding="utf-8").splitlines()
    cells: list[dict] = []
    prose: list[str] = []
    note = (
        f"*Made from the documentation page `{page.relative_to(ROOT).as_posix()}`: run the cells"
        " in order.*"
    )

    def flush_prose() -> None:
        text = "\n".join(prose).strip("\n")
        if text:
            cells.append(_cell("markdown", text))
        prose.clear()

    index = 0
    while index < len(lines):
        line = lines[index]
        directive = _DIRECTIVE.match(line)
        if directive:
            index += 1
            while index < len(lines) and lines[index].startswith("    "):  # its options
                index += 1
            flush_prose()
            name = directive.group(1)
            cells.append(_cell("code", _SOURCE_CELL.format(name=name)))
            continue
        opening = _FENCE.match(line)
        if opening is None:
            if not _MARKER.match(line.strip()):
                prose.append(line)
            if note and line.startswith("# "):  # under the page's title
                prose.extend(["", note])
                note = ""
            index += 1
            continue
        indent, fence, language = opening.groups()
        end = index + 1
        while end < len(lines) and not lines[end].strip().startswith(fence):
            end += 1
        block = lines[index : end + 1]
        if language == "python" and not _SKIP.match(_marker_above(lines, index)):
            flush_prose()
            code = "\n".join(row[len(indent) :] for row in block[1:-1])
            cells.append(_cell("code", code))
        else:
            prose.extend(block)
        index = end + 1
    flush_prose()
    if note:
        cells.insert(0, _cell("markdown", note))
    for number, cell in enumerate(cells):
        cell["id"] = f"cell-{number}"  # stable: the same page gives the same file
    return {
        "cells": cells,
        "metadata": {
            "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
            "language_info": {"name": "python"},
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }


_SOURCE_CELL = """# the source the documentation page quotes here
import inspect
import pydoc

print(inspect.getsource(pydoc.locate("{name}")))"""


def _cell(kind: str, text: str) -> dict:
    cell = {
        "cell_type": kind,
        "metadata": {},
        "source": text.splitlines(keepends=True),
    }
    if kind == "code":
        cell.update(execution_count=None, outputs=[])
    return cell


def _marker_above(lines: list[str], index: int) -> str:
    for above in range(index - 1, -1, -1):
        if lines[above].strip():
            return lines[above].strip()
    return ""


def notebook_json(page: Path) -> str:
    """The notebook of ``page`` as the text of an ``.ipynb`` file."""
    return json.dumps(notebook(page), indent=1, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="notebooks", help="folder to write into")
    args = parser.parse_args(argv)
    out = Path(args.out)
    for page in pages():
        target = out / page.relative_to(SITE).with_suffix(".ipynb")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(notebook_json(page), encoding="utf-8")
        print(target)
    return 0


if __name__ == "__main__":
    sys.exit(main())

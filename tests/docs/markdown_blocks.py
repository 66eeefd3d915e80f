"""Extract the ```python blocks of a Markdown page, with the markers that say how to run them.

    blocks = python_blocks(Path("docs/site/getting_started.md"))
    blocks[0].line, blocks[0].skip, blocks[0].slow, blocks[0].code

A block whose nearest non-blank line above is ``<!-- skip: reason -->`` is not run (the reason is
shown); ``<!-- slow -->`` marks a long block: CI runs it with ``BUILDINGAI_DOCS_QUICK=1`` set, which
the block reads to shorten its loops, and the nightly mode runs it as written.
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass
from pathlib import Path

_FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*(\S*)")
_SKIP = re.compile(r"^<!--\s*skip:\s*(.+?)\s*-->$")
_SLOW = re.compile(r"^<!--\s*slow\s*-->$")


@dataclass(frozen=True)
class Block:
    """One fenced Python block: ``line`` is the 1-based line of its opening fence."""

    line: int
    code: str
    skip: str | None
    slow: bool


def python_blocks(path: Path) -> list[Block]:
    """The ```python blocks of ``path`` in page order (indented fences in lists included)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks: list[Block] = []
    index = 0
    while index < len(lines):
        opening = _FENCE.match(lines[index])
        if opening is None:
            index += 1
            continue
        indent, fence, language = opening.groups()
        end = index + 1
        while end < len(lines) and not lines[end].strip().startswith(fence):
            end += 1
        if language == "python":
            code = textwrap.dedent("\n".join(lines[index + 1 : end]))
            marker = _marker_above(lines, index)
            skip = _SKIP.match(marker)
            blocks.append(
                Block(
                    line=index + 1,
                    code=code + "\n",
                    skip=skip.group(1) if skip else None,
                    slow=bool(_SLOW.match(marker)),
                )
            )
        index = end + 1
    return blocks


def _marker_above(lines: list[str], index: int) -> str:
    """The nearest non-blank line above line ``index``, stripped ('' at the top)."""
    for above in range(index - 1, -1, -1):
        if lines[above].strip():
            return lines[above].strip()
    return ""

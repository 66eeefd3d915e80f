"""Every ```python block of the documentation site (docs/site/**/*.md) and of README.md runs as a
test case named ``page:line``. The blocks of one page run in order in one namespace, in a
temporary working directory, so a page reads as one script.

``<!-- skip: reason -->`` above a block skips it; ``<!-- slow -->`` blocks run here with
``BUILDINGAI_DOCS_QUICK=1`` (their first steps) and, in the nightly mode
(``BUILDINGAI_DOCS_NIGHTLY=1``), once more as written.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from .markdown_blocks import python_blocks

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted((ROOT / "docs" / "site").rglob("*.md")) + [ROOT / "README.md"]
NIGHTLY = os.environ.get("BUILDINGAI_DOCS_NIGHTLY") == "1"


def _cases():
    cases = []
    for page in PAGES:
        name = page.relative_to(ROOT).as_posix()
        for block in python_blocks(page):
            cases.append(pytest.param(page, block, True, id=f"{name}:{block.line}"))
            if block.slow:
                cases.append(
                    pytest.param(
                        page, block, False, id=f"{name}:{block.line}:full", marks=pytest.mark.slow
                    )
                )
    return cases


class _PageRun:
    """The namespace of one page in one mode, and the blocks already run in it."""

    def __init__(self, directory: Path) -> None:
        self.namespace: dict = {"__name__": "__docs__"}
        self.directory = directory
        self.done: set[int] = set()
        self.failed: str | None = None


_RUNS: dict[tuple[Path, bool], _PageRun] = {}


def _run_block(run: _PageRun, page: Path, block, quick: bool) -> None:
    previous = os.getcwd()
    os.chdir(run.directory)
    saved = os.environ.get("BUILDINGAI_DOCS_QUICK")
    os.environ["BUILDINGAI_DOCS_QUICK"] = "1" if quick else "0"
    try:
        # padded so that a traceback names the page's own line numbers
        code = "\n" * block.line + block.code
        exec(compile(code, str(page), "exec"), run.namespace)
    finally:
        os.chdir(previous)
        if saved is None:
            del os.environ["BUILDINGAI_DOCS_QUICK"]
        else:
            os.environ["BUILDINGAI_DOCS_QUICK"] = saved


@pytest.mark.parametrize(("page", "block", "quick"), _cases())
def test_docs_block_runs(page, block, quick, tmp_path_factory):
    if block.skip:
        pytest.skip(block.skip)
    if not quick and not NIGHTLY:
        pytest.skip("runs as written in the nightly mode: BUILDINGAI_DOCS_NIGHTLY=1")
    key = (page, quick)
    if key not in _RUNS:
        _RUNS[key] = _PageRun(tmp_path_factory.mktemp(page.stem))
    run = _RUNS[key]
    # the blocks above this one build the state it reads: run those not run yet (-k selections)
    for earlier in python_blocks(page):
        if earlier.line >= block.line:
            break
        if earlier.skip or earlier.line in run.done:
            continue
        if run.failed:
            pytest.skip(f"an earlier block of this page failed: {run.failed}")
        _run_block(run, page, earlier, quick)
        run.done.add(earlier.line)
    if run.failed:
        pytest.skip(f"an earlier block of this page failed: {run.failed}")
    try:
        _run_block(run, page, block, quick)
    except BaseException:
        run.failed = f"line {block.line}"
        raise
    run.done.add(block.line)

"""Building the documentation site for the tests that read it: ``mkdocs build --strict``
(warnings are errors) into a folder, skipped where the docs extras are not installed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BUILD_TIMEOUT_S = 300


def build_site(out: Path) -> Path:
    """The site built into ``out``; returns ``out``. Fails with mkdocs' output on a warning."""
    for module in ("mkdocs", "material", "mkdocstrings"):
        pytest.importorskip(module, reason="pip install -e '.[docs]'")
    # run from the repository root: the snippet includes and mkdocstrings paths are relative to it
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", "mkdocs.yml", "-d", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=BUILD_TIMEOUT_S,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-8000:]
    return out

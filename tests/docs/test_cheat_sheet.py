"""The cheat sheet's twenty rows run: its BuildingAI column top to bottom as one script, and its
PyTorch column the same way with PyTorch, so neither spelling on the page is wrong."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

PAGE = Path(__file__).resolve().parents[2] / "docs" / "site" / "cheat_sheet.md"
ROW = re.compile(r"^\| (\d+)\. ([^|]+) \| ([^|]+) \| ([^|]+) \|$")
CODE = re.compile(r"`([^`]+)`")


def rows() -> list[tuple[int, str, str, str]]:
    found = []
    for line in PAGE.read_text(encoding="utf-8").splitlines():
        match = ROW.match(line)
        if match:
            number, what, ours, theirs = match.groups()
            found.append((int(number), what.strip(), ours.strip(), theirs.strip()))
    return found


def cell_code(cell: str) -> str:
    spans = CODE.findall(cell)
    assert spans, f"a cell without code: {cell}"
    return "\n".join(spans)


def run_column(setup: str, column: int, directory: Path) -> dict:
    namespace: dict = {"__name__": "__cheat_sheet__"}
    exec(compile(setup, f"{PAGE.name}:setup", "exec"), namespace)
    for row in rows():
        code = cell_code(row[column])
        try:
            exec(compile(code, f"{PAGE.name}:row {row[0]}", "exec"), namespace)
        except Exception as error:
            raise AssertionError(f"row {row[0]} ({row[1]}): {code!r} raised {error!r}") from error
    return namespace


def test_the_sheet_has_twenty_numbered_rows():
    assert [row[0] for row in rows()] == list(range(1, 21))


def test_every_buildingai_line_runs_in_order(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    setup = re.search(r"```python\n(.*?)```", PAGE.read_text(), re.S).group(1)
    namespace = run_column(setup, 2, tmp_path)
    assert (tmp_path / "model.safetensors").is_file()
    assert namespace["w"].grad.shape == (2, 3)
    assert sum(p.numel() for p in namespace["model"].parameters()) == 99


def test_every_pytorch_line_runs_in_order(tmp_path, monkeypatch):
    pytest.importorskip("torch")
    monkeypatch.chdir(tmp_path)
    text = PAGE.read_text()
    imports = text[text.index("PyTorch: `") : text.index("## Tensors")]
    namespace = run_column(cell_code(imports), 3, tmp_path)
    assert (tmp_path / "model.pt").is_file()
    assert tuple(namespace["w"].grad.shape) == (2, 3)

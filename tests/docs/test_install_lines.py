"""One install line brings everything the tutorials and guides use, and each guide opens with
the extra it needs: every extra named there exists and is part of ``all``."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib")  # Python 3.11+

ROOT = Path(__file__).resolve().parents[2]
GUIDES = sorted(p for p in (ROOT / "docs" / "site" / "guides").glob("*.md") if p.stem != "index")
EXTRA = re.compile(r'pip install -e "\.\[([a-z0-9_,]+)\]"')


def extras() -> dict[str, list[str]]:
    with open(ROOT / "pyproject.toml", "rb") as handle:
        return tomllib.load(handle)["project"]["optional-dependencies"]


def all_extra() -> set[str]:
    (line,) = extras()["all"]
    return set(re.fullmatch(r"buildingai\[([a-z0-9_,]+)\]", line).group(1).split(","))


def test_all_is_made_of_existing_extras():
    assert all_extra() <= set(extras()) - {"all", "test", "docs", "browser", "bench", "gpu"}
    assert {"fast", "train", "export", "serve", "vis", "mpi"} <= all_extra()


def test_the_readme_puts_the_all_line_beside_the_fast_one():
    block = re.search(r"```bash\n(.*?)```", (ROOT / "README.md").read_text(), re.S).group(1)
    lines = block.splitlines()
    assert lines[0].startswith('pip install -e ".[fast,train]"')
    assert lines[1].startswith('pip install -e ".[all]"')


@pytest.mark.parametrize("guide", GUIDES, ids=lambda path: path.stem)
def test_each_guide_opens_with_the_extra_it_needs(guide):
    opening = guide.read_text(encoding="utf-8").split("\n\n")[1]
    assert opening.startswith("**Install:**"), f"{guide.name} does not open with its install line"
    named = set()
    for match in EXTRA.finditer(opening.replace("\n", " ")):
        named |= set(match.group(1).split(","))
    assert named <= all_extra(), f"{guide.name} names extras outside all: {named - all_extra()}"
    assert "[all]" in opening


def test_getting_started_names_the_extra_the_onnx_error_names():
    page = (ROOT / "docs" / "site" / "getting_started.md").read_text(encoding="utf-8")
    onnx = page[page.index("## ONNX export") :]
    assert "`export` extra" in onnx.split("```")[0]
    from buildingai.export import check

    assert "buildingai[export]" in Path(check.__file__).read_text()


def test_every_extra_the_docs_name_exists():
    pages = [ROOT / "README.md", *(ROOT / "docs" / "site").rglob("*.md")]
    named = set()
    for page in pages:
        for match in re.finditer(r"(?:buildingai|\.)\[([a-z0-9_,]+)\]", page.read_text()):
            named |= set(match.group(1).split(","))
    assert named and named <= set(extras()), f"no such extra: {named - set(extras())}"

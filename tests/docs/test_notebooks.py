"""The learning path as notebooks (``tools/notebooks.py``): each page of the path becomes a
notebook whose code cells are the page's Python blocks in order, valid nbformat 4, and every
notebook runs top to bottom in a Jupyter kernel (nbclient) with the documentation tests' quick
setting, so the notebooks cannot drift from the pages or the code."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from .markdown_blocks import python_blocks

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("notebooks_tool", ROOT / "tools" / "notebooks.py")
notebooks = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(notebooks)

PAGES = notebooks.pages()
QUOTED_SOURCE = "# the source the documentation page quotes here"


def test_the_learning_path_pages_are_all_there():
    names = [page.relative_to(ROOT / "docs" / "site").as_posix() for page in PAGES]
    assert names[:3] == [
        "learning_path/cnn_fashion_mnist.md",
        "learning_path/mlp_mnist.md",
        "learning_path/transformer_rotten_tomatoes.md",
    ]
    assert "engine/dispatch.md" in names and len(names) == 9


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.stem)
def test_a_notebook_holds_its_pages_code_in_order(page):
    notebook = notebooks.notebook(page)
    code = [
        "".join(cell["source"])
        for cell in notebook["cells"]
        if cell["cell_type"] == "code" and not "".join(cell["source"]).startswith(QUOTED_SOURCE)
    ]
    expected = [block.code.strip("\n") for block in python_blocks(page) if block.skip is None]
    assert code == expected
    prose = "".join("".join(c["source"]) for c in notebook["cells"] if c["cell_type"] == "markdown")
    title = page.read_text().splitlines()[0]
    assert prose.startswith(title + "\n\n*Made from the documentation page")
    assert "<!-- slow -->" not in prose and "\n::: " not in prose
    assert [cell["id"] for cell in notebook["cells"]] == [
        f"cell-{n}" for n in range(len(notebook["cells"]))
    ]
    assert notebooks.notebook_json(page) == notebooks.notebook_json(page)  # the same file twice


def test_a_quoted_source_becomes_a_cell_that_prints_it():
    page = ROOT / "docs" / "site" / "learning_path" / "cnn_fashion_mnist.md"
    cells = ["".join(c["source"]) for c in notebooks.notebook(page)["cells"]]
    quoted = [cell for cell in cells if cell.startswith(QUOTED_SOURCE)]
    assert len(quoted) == 2 and 'pydoc.locate("buildingai.ops.conv.im2col")' in quoted[0]
    namespace: dict = {}
    exec(quoted[0].replace("print(", "shown = ("), namespace)
    assert namespace["shown"].startswith("def im2col(")


def test_notebooks_are_valid_nbformat(tmp_path):
    nbformat = pytest.importorskip("nbformat", reason="pip install -e '.[notebooks]'")
    assert notebooks.main(["--out", str(tmp_path)]) == 0
    written = sorted(tmp_path.rglob("*.ipynb"))
    assert len(written) == len(PAGES)
    for path in written:
        nbformat.validate(nbformat.reads(path.read_text(), as_version=4))
        json.loads(path.read_text())


@pytest.mark.slow
@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.stem)
def test_the_notebook_runs_in_a_kernel(page, tmp_path, monkeypatch):
    nbformat = pytest.importorskip("nbformat", reason="pip install -e '.[notebooks]'")
    nbclient = pytest.importorskip("nbclient", reason="pip install -e '.[notebooks]'")
    pytest.importorskip("ipykernel", reason="pip install -e '.[notebooks]'")
    kernelspec = pytest.importorskip("jupyter_client.kernelspec")
    if "python3" not in kernelspec.KernelSpecManager().find_kernel_specs():
        pytest.skip("no python3 Jupyter kernel installed (pip install ipykernel)")
    notebook = nbformat.reads(notebooks.notebook_json(page), as_version=4)
    monkeypatch.setenv("BUILDINGAI_DOCS_QUICK", "1")  # the kernel inherits it: short loops
    client = nbclient.NotebookClient(
        notebook, timeout=600, kernel_name="python3", resources={"metadata": {"path": tmp_path}}
    )
    client.execute()
    errors = [o for c in notebook.cells for o in c.get("outputs", []) if o.output_type == "error"]
    assert errors == []

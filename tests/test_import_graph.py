"""No import circles in the package: its modules import each other along a DAG.

Every import is read with ``ast``: the ones inside functions and under ``if TYPE_CHECKING:``
count too, since an import moved out of the module's top only hides the circle. ``cycles``
works on any folder of ``buildingai``; the test runs it on the whole package.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE_ROOT = Path(__file__).resolve().parents[1] / "buildingai"

FOLDERS_WITHOUT_CYCLES = ["."]  # the whole package


def _module_name(path: Path) -> str:
    """``buildingai/train/trainer.py`` -> ``buildingai.train.trainer`` (packages by their
    ``__init__``), counting up to the outermost folder with an ``__init__.py``."""
    top = path.parent
    while (top.parent / "__init__.py").is_file():
        top = top.parent
    parts = list(path.relative_to(top.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path, module: str, known: set[str]) -> set[str]:
    """The modules among ``known`` that the file at ``path`` imports, at any depth."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            source = node.module or ""
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                source = ".".join(base + ([node.module] if node.module else []))
            for alias in node.names:
                # `from . import trainer` imports the module; `from .trainer import Trainer` its name
                candidate = f"{source}.{alias.name}"
                found.add(candidate if candidate in known else source)
    return (found & known) - {module}


def import_graph(package_dir: Path) -> dict[str, set[str]]:
    """``{module: modules it imports}`` among the modules under ``package_dir``."""
    paths = {_module_name(path): path for path in sorted(Path(package_dir).rglob("*.py"))}
    known = set(paths)
    return {module: _imports(path, module, known) for module, path in paths.items()}


def cycles(package_dir: Path) -> list[list[str]]:
    """One import circle for each group of modules under ``package_dir`` that import each other
    (a strongly connected component), as ``[a, b, ..., a]``; empty when the imports form a DAG."""
    graph = import_graph(package_dir)
    order, low, on_stack, stack, components = {}, {}, set(), [], []

    def visit(module: str) -> None:  # Tarjan's strongly connected components
        order[module] = low[module] = len(order)
        stack.append(module)
        on_stack.add(module)
        for target in sorted(graph[module]):
            if target not in order:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in on_stack:
                low[module] = min(low[module], order[target])
        if low[module] == order[module]:
            component = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.add(member)
                if member == module:
                    break
            if len(component) > 1:
                components.append(component)

    for module in sorted(graph):
        if module not in order:
            visit(module)
    return [_circle_within(graph, component) for component in components]


def _circle_within(graph: dict[str, set[str]], component: set[str]) -> list[str]:
    """A path that starts and ends at the component's first module, staying inside it."""
    start = min(component)
    paths = [[start]]
    while paths:  # breadth first: the shortest circle through ``start``
        path = paths.pop(0)
        for target in sorted(graph[path[-1]] & component):
            if target == start:
                return path + [start]
            if target not in path:
                paths.append(path + [target])
    raise AssertionError(f"no circle through {start} in {sorted(component)}")


@pytest.mark.parametrize("folder", FOLDERS_WITHOUT_CYCLES)
def test_no_import_circles(folder):
    found = cycles(PACKAGE_ROOT / folder)
    assert not found, "modules that import each other in a circle:\n" + "\n".join(
        " -> ".join(circle) for circle in found
    )


def test_cycles_finds_circles_hidden_in_functions_and_type_checking(tmp_path):
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "loop.py").write_text("from .hooks import Hook\n")
    (package / "hooks.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .loop import Loop\n"
    )
    (package / "a.py").write_text("def f():\n    from . import b\n")
    (package / "b.py").write_text("import pkg.a\n")
    (package / "leaf.py").write_text("from . import a\n")
    assert cycles(package) == [["pkg.a", "pkg.b", "pkg.a"], ["pkg.hooks", "pkg.loop", "pkg.hooks"]]

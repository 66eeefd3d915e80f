"""Each program in ``programs/`` is written for PyTorch. It runs once as written, under PyTorch,
and once with its import lines rewritten by ``buildingai port`` (nothing else changed), under
BuildingAI; both runs' results (losses, learning rates, outputs, shapes, state dict keys) must
agree to float32 round-off.

The programs draw their starting weights and data with NumPy from fixed seeds, so both libraries
start from the same numbers; where a program draws with the library's own generator (dropout,
random_split, randperm), it compares only what does not depend on the draw.
"""

import ast
import importlib.util
import math
from pathlib import Path

import pytest

from buildingai.port import rewrite_imports

torch = pytest.importorskip("torch")

PROGRAMS = sorted((Path(__file__).parent / "programs").glob("*.py"))
RTOL, ATOL = 2e-4, 2e-5  # float32 round-off, grown over a few optimizer steps


def _run(source: str, path: Path) -> object:
    namespace = {"__name__": f"compat_{path.stem}", "__file__": str(path)}
    exec(compile(source, str(path), "exec"), namespace)
    return namespace["main"]()


def _mismatches(ours, theirs, where="result") -> list[str]:
    """Where two results differ: numbers beyond the tolerance, anything else when unequal."""
    if isinstance(theirs, dict):
        if not isinstance(ours, dict) or list(ours) != list(theirs):
            return [f"{where}: keys {list(ours)} != {list(theirs)}"]
        return [
            m for key in theirs for m in _mismatches(ours[key], theirs[key], f"{where}[{key!r}]")
        ]
    if isinstance(theirs, (list, tuple)):
        if not isinstance(ours, (list, tuple)) or len(ours) != len(theirs):
            return [f"{where}: {ours!r} != {theirs!r}"]
        return [
            m
            for i, pair in enumerate(zip(ours, theirs))
            for m in _mismatches(*pair, f"{where}[{i}]")
        ]
    if isinstance(theirs, float) and not isinstance(ours, bool):
        if math.isclose(ours, theirs, rel_tol=RTOL, abs_tol=ATOL):
            return []
        return [f"{where}: BuildingAI {ours!r}, PyTorch {theirs!r}"]
    return [] if ours == theirs else [f"{where}: BuildingAI {ours!r}, PyTorch {theirs!r}"]


def test_the_corpus_holds_the_styles_it_is_meant_to_cover():
    text = "\n".join(path.read_text() for path in PROGRAMS)
    assert len(PROGRAMS) >= 10
    for feature in ["def main():", "(Dataset):", "DataLoader(", "torch.cuda.is_available()",
                    "torch.no_grad()", ".state_dict()", "load_state_dict(", "lr_scheduler",
                    "clip_grad_norm_(", "nn.InstanceNorm2d(", "nn.PixelShuffle(",
                    "nn.ParameterList(", "torch.optim.LBFGS(", "from einops", "CyclicLR(",
                    "ChainedScheduler(", "(torch.optim.Optimizer):", ".normal_(",
                    "torch.finfo(", ".data.copy_(", ".data.add_(", "torch.compile(model",
                    "@torch.compile("]:  # fmt: skip
        assert feature in text, feature


def _missing_packages(source: str) -> list[str]:
    """The packages a program imports (optional ones, such as einops) that are not installed."""
    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            names.add(node.module.split(".")[0])
    return sorted(name for name in names if importlib.util.find_spec(name) is None)


@pytest.mark.parametrize("path", PROGRAMS, ids=lambda path: path.stem)
def test_program_ported_by_its_imports_gives_pytorchs_results(path, capsys):
    source = path.read_text()
    missing = _missing_packages(source)
    if missing:
        pytest.skip(f"{path.name} needs {', '.join(missing)}, which is not installed")
    ported, changes = rewrite_imports(source, filename=str(path))
    assert changes, "a PyTorch program imports torch"
    import_lines = {
        number
        for node in ast.walk(ast.parse(source))
        if isinstance(node, (ast.Import, ast.ImportFrom))
        for number in range(node.lineno, node.end_lineno + 1)
    }
    differing = {
        number
        for number, (before, after) in enumerate(zip(source.splitlines(), ported.splitlines()), 1)
        if before != after
    }
    assert differing <= import_lines, (
        f"lines other than imports changed: {differing - import_lines}"
    )

    theirs = _run(source, path)
    ours = _run(ported, path)
    capsys.readouterr()
    problems = _mismatches(ours, theirs)
    assert not problems, "\n".join(problems[:20])

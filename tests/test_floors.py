"""The house has floors, and arrows point down only: no module imports a higher floor.

Every import of every module in ``buildingai/`` is read with ``ast``, the ones inside functions
included (an import inside a function that reaches up hides a wrong arrow; pass what the lower
floor needs down to it instead). Imports within one floor are fine.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE_ROOT = Path(__file__).resolve().parents[1] / "buildingai"

# Bottom to top. Each top-level part of the package is on exactly one floor.
FLOORS: dict[str, tuple[int, str]] = {
    "errors": (0, "the error hierarchy: every floor raises these"),
    "utils": (1, "git_info, optional-library imports, metric numbers: plain helpers over errors"),
    "backend": (0, "array namespaces (NumPy/CuPy), devices, dtypes, precision, random, threads"),
    "ops": (1, "the primitive op records: forward on arrays, backward on Tensors via ctx"),
    "accel": (2, "registered faster kernels beside the op records: numba, BLAS routing, threads"),
    "autograd": (3, "Tensor, graph nodes, dispatch (the only door for ops) and the engine"),
    "functions": (4, "the public tensor functions, composed from ops through dispatch"),
    "nn": (5, "Module, Parameter, layers, functional: models built from functions"),
    "optim": (5, "optimizers and schedulers: update Parameters, beside nn"),
    "data": (5, "datasets and loaders: produce Tensors, beside nn"),
    "prune": (5, "pruning masks as forward pre-hooks on Modules, beside nn (nn.utils re-exports)"),
    "prob": (5, "distributions, sampling, KL: composed from functions, beside nn"),
    "graph": (6, "freeze, static graphs, passes and parallel(): observe dispatch and modules"),
    "export": (6, "ONNX export: reads frozen graphs and op records"),
    "quant": (6, "int8 quantisation: op records with ONNX QDQ mappings, quantised layers"),
    "debug": (6, "gradcheck, anomaly detection, statistics: tools over the lower floors"),
    "vis": (6, "plots and graph drawings: tools over the lower floors"),
    "wandb": (6, "Weights & Biases adapter: logs numbers through the wandb package"),
    "mlflow": (6, "MLflow adapter: logs params and metrics through the mlflow package"),
    "tensorboard": (6, "TensorBoard event files through tensorboardX"),
    "profile": (6, "TimeTracer: op timings by module, flame graphs, trace files"),
    "serialization": (6, "save/load of tensors and state dicts"),
    "checkpoint": (6, "gradient checkpointing: recompute segments in backward to save memory"),
    "memory": (6, "memory stats, summary and memory_scope: observers of dispatch"),
    "amp": (6, "autocast (per-op dtypes from the op records) and GradScaler"),
    "distributed": (6, "collectives over MPI/NCCL, process groups, the launcher, DP helpers"),
    "train": (7, "Config, Trainer, callbacks: training loops over everything below"),
    "serve": (8, "the HTTP model server: loads checkpoints via train, beside cli"),
    "cli": (8, "the command line: the top floor, may use every other"),
    "__main__": (8, "`python -m buildingai`: runs the command line"),
    "version": (0, "the release number: every floor may report it"),
    # PyTorch's module paths: thin faces over the floors they name
    "cuda": (1, "torch.cuda's questions (is_available, device_count, seeds), from backend"),
    "cuda.amp": (6, "torch.cuda.amp's spelling of amp: autocast and GradScaler"),
    "backends": (1, "torch.backends' flags and device questions"),
    "hub": (6, "torch.hub's load_state_dict_from_url, over serialization"),
    "linalg": (4, "torch.linalg's spelling: norms, decompositions and solves, from functions"),
    "port": (1, "`buildingai port`: rewrites a PyTorch program's import lines"),
    "utils.data": (6, "torch.utils.data's spelling of data (and the distributed sampler)"),
    "": (9, "buildingai/__init__.py: the public face, re-exports every floor"),
}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE_ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_module(name: str) -> bool:
    """True when ``name`` (buildingai.x.y) is a module or package of this tree."""
    relative = Path(*name.split(".")[1:]) if "." in name else Path()
    base = PACKAGE_ROOT / relative
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def _imported_modules(source: str, module: str, is_package: bool) -> list[tuple[int, str]]:
    """(line, module) for every ``buildingai`` module that ``source`` (the text of ``module``)
    imports, at any depth."""
    package = module if is_package else module.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(source, filename=module)):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            for alias in node.names:
                candidate = f"{source}.{alias.name}"
                # `from . import nn` imports the sub-module; `from .x import f` imports from x
                found.append((node.lineno, candidate if _is_module(candidate) else source))
    return [(line, name) for line, name in found if name.split(".")[0] == "buildingai"]


def _part(module: str) -> str:
    """The key of FLOORS for ``module``: a sub-package with a floor of its own
    (``utils.data``), else its top-level part."""
    parts = module.split(".")
    if ".".join(parts[1:3]) in FLOORS:
        return ".".join(parts[1:3])
    return parts[1] if len(parts) > 1 else ""


def _all_files() -> list[Path]:
    return sorted(PACKAGE_ROOT.rglob("*.py"))


def test_every_part_of_the_package_has_a_floor():
    parts = {_part(_module_name(path)) for path in _all_files()}
    missing = sorted(parts - FLOORS.keys())
    assert not missing, f"give these parts of buildingai a floor in FLOORS: {missing}"


def _upward_imports() -> list[str]:
    problems = []
    for path in _all_files():
        module = _module_name(path)
        floor = FLOORS[_part(module)][0]
        imports = _imported_modules(path.read_text(), module, path.name == "__init__.py")
        for line, target in imports:
            target_floor = FLOORS[_part(target)][0]
            if target_floor > floor:
                where = path.relative_to(PACKAGE_ROOT.parent)
                problems.append(
                    f"{where}:{line}: {module} (floor {floor}) imports {target} "
                    f"(floor {target_floor})"
                )
    return problems


def test_no_module_imports_a_higher_floor():
    problems = _upward_imports()
    assert not problems, "imports that point up:\n" + "\n".join(problems)


@pytest.mark.parametrize(
    "source, expected",
    [
        ("from ..autograd.tensor import Tensor\n", "buildingai.autograd.tensor"),
        ("def f():\n    from ..autograd import dispatch\n", "buildingai.autograd.dispatch"),
        ("from .. import nn\n", "buildingai.nn"),
        ("import buildingai.graph.trace\n", "buildingai.graph.trace"),
        ("from . import base\n", "buildingai.ops.base"),
    ],
)
def test_the_reader_resolves_relative_and_function_level_imports(source, expected):
    imports = _imported_modules(source, "buildingai.ops.some_family", is_package=False)
    assert [name for _, name in imports] == [expected]


def test_an_upward_import_inside_a_function_is_caught():
    source = "def backward(ctx, grad):\n    from ..autograd.tensor import Tensor\n"
    ((_, target),) = _imported_modules(source, "buildingai.ops.some_family", is_package=False)
    assert FLOORS[_part(target)][0] > FLOORS["ops"][0]

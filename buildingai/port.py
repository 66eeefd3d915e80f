"""``buildingai port FILE``: rewrite a PyTorch program's import lines to BuildingAI's.

Only import statements change, by one rule: ``import torch`` becomes
``import buildingai as torch``; ``import torch.X as Y`` and ``from torch.X import ...`` name the
same path under ``buildingai`` (``torch.utils.data`` -> ``buildingai.utils.data``,
``torch.nn.functional`` -> ``buildingai.nn.functional``). einops keeps its layers per framework
inside its own package, so ``from einops.layers.torch import Rearrange, Reduce`` becomes
``from buildingai.nn import Rearrange, Reduce``. Other imports stay, packages whose names merely
start with "torch" (``torchvision``) included. Every other line is left as it is,
and line numbers do not move, so a traceback of the ported program points at the original line.
"""

from __future__ import annotations

import argparse
import ast
import os
import re
import sys
from dataclasses import dataclass

from .errors import BuildingAIError

SOURCE, TARGET = "torch", "buildingai"
_LINE_END = re.compile(r"\r\n|\r|\n")


@dataclass(frozen=True)
class Change:
    """One rewritten import statement: its first line number and its text before and after."""

    line: int
    before: str
    after: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.before}  ->  {self.after}"


# modules of other packages that hold PyTorch-only code, and where BuildingAI keeps theirs
_COUNTERPARTS = {"einops.layers.torch": "buildingai.nn"}


def _renamed(module: str | None) -> str | None:
    """``torch.X`` -> ``buildingai.X`` (and the counterparts above); None for a module the rule
    leaves alone."""
    if module in _COUNTERPARTS:
        return _COUNTERPARTS[module]
    if module == SOURCE or (module or "").startswith(SOURCE + "."):
        return TARGET + module[len(SOURCE) :]
    return None


def _alias_text(name: str, asname: str | None) -> str:
    return name if asname is None else f"{name} as {asname}"


def _import_text(node: ast.Import) -> str | None:
    """The rewritten ``import ...`` statement, or None when it names no torch module."""
    parts, changed = [], False
    for alias in node.names:
        renamed = _renamed(alias.name)
        if renamed is None:
            parts.append(_alias_text(alias.name, alias.asname))
        elif alias.asname is not None:  # import torch.nn as nn -> import buildingai.nn as nn
            parts.append(f"{renamed} as {alias.asname}")
            changed = True
        elif alias.name in _COUNTERPARTS:  # import einops.layers.torch: the name is einops
            parts.append(alias.name)
        elif alias.name == SOURCE:  # import torch -> the name torch, bound to buildingai
            parts.append(f"{TARGET} as {SOURCE}")
            changed = True
        else:  # import torch.nn.parallel: load the path, and bind the name torch as it does
            parts.append(f"{renamed}, {TARGET} as {SOURCE}")
            changed = True
    return "import " + ", ".join(parts) if changed else None


def _offsets(source: str) -> list[int]:
    """The character offset at which each line of ``source`` starts (1-based lines), counting
    lines as the parser does: only ``\n``, ``\r\n`` and ``\r`` end one (``str.splitlines``
    would also split at form feeds and other separators)."""
    return [0, 0] + [match.end() for match in _LINE_END.finditer(source)]


def rewrite_imports(source: str, filename: str = "<source>") -> tuple[str, list[Change]]:
    """``source`` with its torch imports rewritten by the rule above, and the changes made.

    Raises ``BuildingAIError`` when ``source`` is not valid Python (naming the line).
    """
    try:
        tree = ast.parse(source, filename=filename)
    except SyntaxError as error:
        raise BuildingAIError(
            f"[port] {filename} is not valid Python 3: {error.msg} at line {error.lineno}",
            help="port a file that runs under Python 3",
        ) from None
    starts = _offsets(source)
    edits = []  # (start offset, end offset, new text, change)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            text = _import_text(node)
            if text is None:
                continue
            start = starts[node.lineno] + node.col_offset
            end = starts[node.end_lineno] + node.end_col_offset
            # a statement over several lines becomes one, followed by as many newlines
            text += "\n" * (node.end_lineno - node.lineno)
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            renamed = _renamed(node.module)
            if renamed is None:
                continue
            # the module name is the first occurrence of it after `from`
            start = source.index(node.module, starts[node.lineno] + node.col_offset + 4)
            end, text = start + len(node.module), renamed
        else:
            continue
        before = " ".join((ast.get_source_segment(source, node) or "").split())
        if isinstance(node, ast.Import):
            after = text.strip()
        else:
            after = before.replace(node.module, text, 1)
        edits.append((start, end, text, Change(node.lineno, before, after)))
    result = source
    for start, end, text, _ in sorted(edits, key=lambda edit: edit[0], reverse=True):
        result = result[:start] + text + result[end:]
    return result, sorted((edit[3] for edit in edits), key=lambda change: change.line)


def port_file(path: str, output: str | None = None) -> list[Change]:
    """Rewrite the imports of the program at ``path``: to ``output``, or to stdout when None.
    The input is never overwritten. Returns the changes."""
    if not os.path.isfile(path):
        raise BuildingAIError(f"[port] no file at {path}", help="give the path of a .py file")
    if output is not None and os.path.abspath(output) == os.path.abspath(path):
        raise BuildingAIError(
            f"[port] -o {output} would overwrite the program being ported",
            help="write to another path, then replace the original yourself if you want to",
        )
    with open(path, encoding="utf-8") as file:
        source = file.read()
    ported, changes = rewrite_imports(source, filename=path)
    if output is None:
        sys.stdout.write(ported)
    else:
        with open(output, "w", encoding="utf-8") as file:
            file.write(ported)
    return changes


def _run(args: argparse.Namespace) -> int:
    changes = port_file(args.file, args.output)
    report = sys.stderr if args.output is None else sys.stdout  # stdout may hold the program
    for change in changes:
        print(f"{args.file}: {change}", file=report)
    where = args.output or "stdout"
    print(f"{args.file}: {len(changes)} import statement(s) rewritten -> {where}", file=report)
    return 0


def add_command(commands, parents: list[argparse.ArgumentParser]) -> None:
    """Register ``buildingai port`` with the command line's sub-commands."""
    port = commands.add_parser(
        "port",
        parents=parents,
        help="rewrite a PyTorch program's import lines to BuildingAI's",
        description=__doc__.split("\n\n")[1].replace("\n", " ").replace("``", "`"),
    )
    port.add_argument("file", help="the PyTorch program (a .py file); it is never changed")
    port.add_argument("-o", "--output", default=None,
                      help="write the ported program here (default: stdout; the list of "
                      "changes goes to stderr)")  # fmt: skip
    port.set_defaults(run=_run)

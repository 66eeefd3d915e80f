"""How many public functions and classes have a docstring, and how many of those state shapes.

    python tools/docstring_shapes.py                 # the summary, per module
    python tools/docstring_shapes.py --missing nn    # the names in buildingai.nn* without shapes

A public object is a function or class reachable as a public name (no leading underscore, or
listed in ``__all__``) of a module on the API reference's list, and defined inside buildingai;
each is counted once, under the first module that exposes it. A docstring "states shapes" when
it names a shape: a tuple of dimension names such as ``(N, C, H, W)``, ``(B, T, C)``, ``(N,)``,
``(*, D)``, or the word "shape". For a class, its own docstring, ``__init__``'s and ``forward``'s
count together.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import re
import sys
from dataclasses import dataclass, field

MODULES = (
    "buildingai", "buildingai.autograd", "buildingai.nn", "buildingai.nn.functional",
    "buildingai.optim", "buildingai.data", "buildingai.graph", "buildingai.export",
    "buildingai.serialization", "buildingai.train", "buildingai.debug", "buildingai.vis",
    "buildingai.utils", "buildingai.checkpoint", "buildingai.memory", "buildingai.amp",
    "buildingai.profile", "buildingai.distributed", "buildingai.prob", "buildingai.quant",
    "buildingai.prune", "buildingai.serve",
)  # fmt: skip

# a parenthesised list of dimension names/sizes: (N, C, H, W), (B, T), (N,), (*batch, L, E), (*)
_DIMS = r"(?:\*?[A-Za-z_]\w*|\d+|\*|\.\.\.)(?:\s*[-+/*]\s*\w+)*"
SHAPE = re.compile(
    rf"\(\s*{_DIMS}\s*,\s*(?:{_DIMS}\s*(?:,\s*{_DIMS}\s*)*)?,?\s*\)|\(\*\)|\bshapes?\b"
)


@dataclass
class Tally:
    total: int = 0
    documented: int = 0
    with_shapes: int = 0
    missing: list[str] = field(default_factory=list)


def states_shapes(text: str | None) -> bool:
    """True when ``text`` names a shape ('(N, C, H, W)', '(B, T)', '(N,)' or 'shape')."""
    return bool(text) and SHAPE.search(text) is not None


def _docstrings(obj) -> list[str]:
    texts = [inspect.getdoc(obj) or ""] if obj.__doc__ else []
    if inspect.isclass(obj):
        for method in ("__init__", "forward"):
            member = obj.__dict__.get(method)
            if member is not None and member.__doc__:
                texts.append(member.__doc__)
    return texts


def _public_names(module) -> list[str]:
    names = getattr(module, "__all__", None)
    if names is None:
        names = [name for name in dir(module) if not name.startswith("_")]
    return sorted(names)


def survey(modules=MODULES) -> dict[str, Tally]:
    """A ``Tally`` per module of every public function and class seen first there."""
    seen: set[int] = set()
    tallies: dict[str, Tally] = {}
    for module_name in modules:
        module = importlib.import_module(module_name)
        tally = tallies.setdefault(module_name, Tally())
        for name in _public_names(module):
            obj = getattr(module, name, None)
            if not (inspect.isclass(obj) or inspect.isfunction(obj)):
                continue
            if not getattr(obj, "__module__", "").startswith("buildingai") or id(obj) in seen:
                continue
            seen.add(id(obj))
            texts = _docstrings(obj)
            tally.total += 1
            tally.documented += bool(texts)
            if any(states_shapes(text) for text in texts):
                tally.with_shapes += 1
            else:
                tally.missing.append(f"{module_name}.{name}")
    return tallies


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--missing", metavar="MODULE", help="list names without shapes under it")
    args = parser.parse_args(argv)
    tallies = survey()
    print(f"{'module':28} {'public':>7} {'docstring':>10} {'shapes':>7}")
    for name, tally in tallies.items():
        print(f"{name:28} {tally.total:7} {tally.documented:10} {tally.with_shapes:7}")
    total = sum(t.total for t in tallies.values())
    documented = sum(t.documented for t in tallies.values())
    shapes = sum(t.with_shapes for t in tallies.values())
    print(
        f"{'all':28} {total:7} {documented:10} {shapes:7}   "
        f"docstring {documented / total:.1%}, states shapes {shapes / total:.1%}"
    )
    if args.missing:
        # "nn", "buildingai.nn" and "buildingai" (everything) all name a part of the package
        name = args.missing
        prefix = name if name.split(".")[0] == "buildingai" else "buildingai." + name
        for name, tally in tallies.items():
            if name == prefix or name.startswith(prefix + "."):
                print("\n".join(tally.missing))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""What the example scripts share with the ``buildingai`` command: each run writes a run
directory of its own, and a mistake (a bad override, a run_dir that holds another run) is one
line on standard error with exit code 2, not a traceback (``--debug`` shows the traceback).

Rerunning an example is what people do while they learn, so a script never stops because an
earlier run used the config's ``run_dir``: it takes the next free one (``runs/mnist_mlp-2``,
``-3``, ...) and says so. A ``run_dir=...`` you type is used exactly as given, and refused if it
holds files; ``--resume`` continues the newest run of the config's ``run_dir`` (or the one
you name). Nothing is ever overwritten or deleted.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from buildingai.cli import one_line
from buildingai.errors import BuildingAIError
from buildingai.train import Config
from buildingai.train.trainer import next_free_run_dir


def holds_files(path: Path) -> bool:
    """True when ``path`` is a file or a directory with something in it."""
    return path.exists() and (not path.is_dir() or any(path.iterdir()))


def numbered_runs(run_dir: Path) -> list[Path]:
    """``run_dir`` and its numbered siblings ``run_dir-2``, ``run_dir-3``, ... that hold files,
    oldest (lowest number) first."""
    pattern = re.compile(re.escape(run_dir.name) + r"-(\d+)")
    siblings = []
    if run_dir.parent.is_dir():
        for path in run_dir.parent.iterdir():
            match = pattern.fullmatch(path.name)
            if match and holds_files(path):
                siblings.append((int(match.group(1)), path))
    first = [run_dir] if holds_files(run_dir) else []
    return first + [path for _, path in sorted(siblings)]


def choose_run_dir(config: Config, overrides: Sequence[str], resume: bool = False) -> None:
    """Set ``config.run_dir`` for this run of an example script (see the module docstring);
    a changed choice is said on standard error."""
    named = any(item.split("=", 1)[0].strip() == "run_dir" for item in overrides)
    if config.run_dir is None or named:
        return
    base = Path(config.run_dir)
    if resume:
        runs = numbered_runs(base)
        if runs and runs[-1] != base:
            config.run_dir = str(runs[-1])
            print(f"resuming the newest run, {config.run_dir}", file=sys.stderr)
        return
    if holds_files(base):
        config.run_dir = str(next_free_run_dir(base))
        print(
            f"{base} holds an earlier run, so this one writes {config.run_dir} "
            "(run_dir=DIR chooses one; --resume continues the newest)",
            file=sys.stderr,
        )


def run_script(main: Callable[[], object]) -> int:
    """Call ``main`` and turn a BuildingAI error into one line and exit code 2, as the
    ``buildingai`` command does; ``--debug`` anywhere on the command line shows the traceback."""
    debug = "--debug" in sys.argv
    if debug:
        sys.argv.remove("--debug")
    try:
        main()
    except BuildingAIError as error:
        if debug:
            raise
        print(one_line(error), file=sys.stderr)
        return 2
    return 0

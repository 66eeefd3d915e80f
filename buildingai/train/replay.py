"""``replay``: re-run steps of a recorded Trainer run and name the first step that differs.

A Trainer with a ``run_dir`` records each step's parameter checksum (``checksums.jsonl``) and
saves checkpoints holding everything the next step depends on. ``replay(run_dir, steps)``
rebuilds the run from its config, loads a checkpoint (or starts from step 0), runs ``steps``
steps, and compares each step's checksum with the recorded one::

    result = replay("runs/mnist", steps=20)
    result.first_divergent_step        # None when every replayed step matched
    print(result.summary())            # one line

``buildingai replay RUN_DIR --steps N`` prints that line and exits 1 on a divergence.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ..errors import BuildingAIError
from ..serialization import load
from . import callbacks as cb
from .checksums import parameter_checksum, read_checksums


@dataclass
class ReplayResult:
    """What a replay found: the steps it compared and the first one that differed."""

    start_step: int
    checked_steps: list[int]
    first_divergent_step: int | None = None
    recorded: str | None = None
    replayed: str | None = None
    start_source: str = "step 0"

    @property
    def matched(self) -> bool:
        return self.first_divergent_step is None

    def summary(self) -> str:
        if not self.checked_steps:
            return f"replay from {self.start_source}: no step was replayed"
        span = f"steps {self.checked_steps[0]}-{self.checked_steps[-1]}"
        if self.matched:
            return f"replay from {self.start_source}: {span} match the recorded parameter checksums"
        return (
            f"replay from {self.start_source}: step {self.first_divergent_step} is the first "
            f"whose parameters differ from the record (checksum {self.replayed}, recorded "
            f"{self.recorded}); the run is not deterministic from there"
        )


class _Compare(cb.Callback):
    """After each replayed step, compare the checksum with the record; stop at a difference."""

    def __init__(self, recorded: dict[int, str], result: ReplayResult, last_step: int) -> None:
        self.recorded, self.result, self.last_step = recorded, result, last_step

    def on_step_end(self, trainer) -> None:
        step = trainer.step
        replayed = parameter_checksum(trainer.model)
        self.result.checked_steps.append(step)
        if replayed != self.recorded[step]:
            self.result.first_divergent_step = step
            self.result.recorded, self.result.replayed = self.recorded[step], replayed
            trainer.stop(f"step {step} differs from the record")
        elif step >= self.last_step or step + 1 not in self.recorded:
            trainer.stop("replayed every recorded step asked for")


def _choose_start(run_dir: Path, steps: int, recorded: dict[int, str]) -> Path | None:
    """The newest checkpoint from which ``steps`` recorded steps follow; else the oldest
    checkpoint with any recorded step after it; else None (start from step 0)."""
    candidates = []
    for path in cb.list_checkpoints(run_dir):
        step = int(path.stem.split("-")[1])
        if step + 1 in recorded:
            candidates.append((step, path))
    if not candidates:
        return None
    full = [(step, path) for step, path in candidates if step + steps in recorded]
    return (full[-1] if full else candidates[0])[1]


def replay(
    run_dir: str | os.PathLike, steps: int, checkpoint: str | os.PathLike | None = None,
    from_start: bool = False,
) -> ReplayResult:  # fmt: skip
    """Re-run ``steps`` steps of the run in ``run_dir`` from ``checkpoint`` (default: chosen
    so that ``steps`` recorded steps follow it; ``from_start=True``: from step 0, rebuilt from
    ``config.yaml``) and compare each step's parameter checksum with the recorded one.
    Nothing is written to ``run_dir``."""
    from .trainer import Trainer, load_config

    run_dir = Path(run_dir)
    if steps < 1:
        raise BuildingAIError(f"replay needs steps >= 1; got {steps}", help="e.g. --steps 10")
    recorded = read_checksums(run_dir)
    if not recorded:
        raise BuildingAIError(
            f"{run_dir} holds no parameter checksums (checksums.jsonl), so there is nothing to "
            "compare a replay with",
            help="replay runs written by the Trainer with a run_dir (buildingai train)",
        )
    path = None if from_start else (checkpoint or _choose_start(run_dir, steps, recorded))
    if path is not None:
        state = load(path)
        if not isinstance(state, dict) or state.get("config") is None:
            raise BuildingAIError(
                f"{path} holds no training config, so its run cannot be rebuilt",
                help="replay checkpoints written by the Trainer built from a config",
            )
        config, start = load_config(state["config"]), state["progress"]["step"]
    elif (run_dir / "config.yaml").exists():
        state, config, start = None, load_config(run_dir / "config.yaml"), 0
    else:
        raise BuildingAIError(
            f"{run_dir} has neither a checkpoint nor config.yaml to replay from",
            help="replay runs written by `buildingai train` or Trainer.from_config",
        )
    if start + 1 not in recorded:
        raise BuildingAIError(
            f"the run in {run_dir} recorded no step after step {start}, so a replay from "
            "there has nothing to compare with",
            help="choose an earlier checkpoint with --checkpoint, or --from-start",
        )
    config.run_dir, config.progress = None, False  # a replay writes nothing
    result = ReplayResult(start_step=start, checked_steps=[],
                          start_source=f"{Path(path).name}" if path else "step 0")  # fmt: skip
    last = start + steps
    trainer = Trainer.from_config(
        config, verbose=False, callbacks=[_Compare(recorded, result, last)]
    )
    if state is not None:
        trainer.load_state_dict(state)
    trainer.max_steps = last if trainer.max_steps is None else min(trainer.max_steps, last)
    trainer.fit()
    return result

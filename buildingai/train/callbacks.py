"""Callbacks: small objects the Trainer calls at fixed points of its loop.

The hooks, in the order a run meets them::

    on_fit_start(trainer)
        on_step_end(trainer)                      after every optimizer step
        on_log(trainer, metrics)                  whenever the trainer logs numbers
        on_evaluate(trainer, metrics)             after each evaluation during fit
        on_epoch_end(trainer)
    on_fit_end(trainer)

A callback with state that must survive a crash (the best score so far, a patience counter)
returns it from ``state_dict()``; the Trainer saves it in every checkpoint and hands it back to
``load_state_dict`` on resume.

Callbacks see the trainer as a ``TrainerView``: where the run stands and the few things a
callback may ask of it. The trainer's module imports this one, never the reverse.
"""

from __future__ import annotations

import csv
import json
import math
import os
from pathlib import Path
from typing import IO, Any, Protocol

from ..nn.module import Module
from .config import Config, ConfigError

CHECKPOINT_SUFFIX = ".safetensors"


class TrainerView(Protocol):
    """What a callback reads and calls on the ``Trainer`` it is given."""

    model: Module
    config: Config | None  # the resolved config of a run built with ``from_config``
    run_dir: Path | None
    step: int  # optimizer steps so far
    epoch: int  # the current epoch, from 0
    epochs: int
    batch_in_epoch: int  # batches of the current epoch done so far
    steps_per_epoch: int

    def write(self, text: str) -> None:
        """Print a line above the progress bar."""

    def save_checkpoint(self, path: str | os.PathLike) -> None:
        """Save everything the next step depends on."""

    def stop(self, reason: str) -> None:
        """End fit after the current step."""


class Callback:
    """Base class: override the hooks you need; each gets the trainer (a ``TrainerView``)."""

    def on_fit_start(self, trainer: TrainerView) -> None:
        pass

    def on_step_end(self, trainer: TrainerView) -> None:
        pass

    def on_log(self, trainer: TrainerView, metrics: dict[str, float]) -> None:
        pass

    def on_evaluate(self, trainer: TrainerView, metrics: dict[str, float]) -> None:
        pass

    def on_epoch_end(self, trainer: TrainerView) -> None:
        pass

    def on_fit_end(self, trainer: TrainerView) -> None:
        pass

    def state_dict(self) -> dict[str, Any]:
        return {}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        pass


# ----- logging -----------------------------------------------------------------------------------
class MetricsLogger(Callback):
    """Append every logged number to ``run_dir/metrics.csv`` (long format: step, epoch,
    metric, value) and every record to ``run_dir/metrics.jsonl`` (one JSON object a line).

    On resume, records later than the checkpoint's step are dropped first: the resumed run
    writes them again, so each step appears once.
    """

    def __init__(self, run_dir: str | os.PathLike) -> None:
        self.run_dir = Path(run_dir)
        self.csv_path = self.run_dir / "metrics.csv"
        self.jsonl_path = self.run_dir / "metrics.jsonl"

    def on_fit_start(self, trainer: TrainerView) -> None:
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self._truncate_after(trainer.step)
        if not self.csv_path.exists():
            with self.csv_path.open("w", newline="") as handle:
                csv.writer(handle).writerow(["step", "epoch", "metric", "value"])

    def _truncate_after(self, step: int) -> None:
        if self.jsonl_path.exists():
            lines = self.jsonl_path.read_text().splitlines()
            kept = [line for line in lines if line and json.loads(line)["step"] <= step]
            self.jsonl_path.write_text("".join(line + "\n" for line in kept))
        if self.csv_path.exists():
            with self.csv_path.open(newline="") as handle:
                rows = list(csv.reader(handle))
            kept_rows = rows[:1] + [row for row in rows[1:] if int(row[0]) <= step]
            with self.csv_path.open("w", newline="") as handle:
                csv.writer(handle).writerows(kept_rows)

    def on_log(self, trainer: TrainerView, metrics: dict[str, float]) -> None:
        record = {"step": trainer.step, "epoch": trainer.epoch, **metrics}
        with self.jsonl_path.open("a") as handle:
            handle.write(json.dumps(record) + "\n")
        with self.csv_path.open("a", newline="") as handle:
            writer = csv.writer(handle)
            for name, value in metrics.items():
                writer.writerow([trainer.step, trainer.epoch, name, value])


class ConsoleLogger(Callback):
    """Print each evaluation on one line: ``epoch 2/5  step 938  eval/loss=0.081 ...``."""

    def __init__(self, file: IO[str] | None = None) -> None:
        self.file = file

    def on_evaluate(self, trainer: TrainerView, metrics: dict[str, float]) -> None:
        values = "  ".join(f"{name}={value:.4f}" for name, value in metrics.items())
        line = f"epoch {trainer.epoch}/{trainer.epochs}  step {trainer.step}  {values}"
        if self.file is not None:
            print(line, file=self.file, flush=True)
        else:
            trainer.write(line)  # above the progress bar, which keeps its line


# ----- checkpoints -------------------------------------------------------------------------------
def checkpoint_path(run_dir: str | os.PathLike, step: int) -> Path:
    return Path(run_dir) / "checkpoints" / f"step-{step:08d}{CHECKPOINT_SUFFIX}"


def list_checkpoints(run_dir: str | os.PathLike) -> list[Path]:
    """The step checkpoints of a run, oldest first (``best`` is not among them)."""
    folder = Path(run_dir) / "checkpoints"
    if not folder.is_dir():
        return []
    return sorted(folder.glob(f"step-*{CHECKPOINT_SUFFIX}"))


def latest_checkpoint(run_dir: str | os.PathLike) -> Path | None:
    found = list_checkpoints(run_dir)
    return found[-1] if found else None


class Checkpoint(Callback):
    """Save the full training state every ``every_steps`` steps, at the end of every epoch and
    at the end of fit, as ``run_dir/checkpoints/step-<step>.safetensors``; keep the newest
    ``keep_last`` of them (None keeps all).

    Only checkpoints this run wrote are ever deleted: their names are kept in ``written``, which
    travels in every checkpoint, so a resumed run prunes the files it wrote before the crash and
    never a file it did not write.
    """

    def __init__(self, run_dir: str | os.PathLike, every_steps: int | None = None,
                 keep_last: int | None = 2) -> None:  # fmt: skip
        if every_steps is not None and every_steps < 1:
            raise ConfigError(f"checkpoint every_steps must be >= 1 or None, got {every_steps}")
        if keep_last is not None and keep_last < 1:
            raise ConfigError(f"checkpoint keep_last must be >= 1 or None, got {keep_last}")
        self.run_dir, self.every_steps, self.keep_last = Path(run_dir), every_steps, keep_last
        self.written: list[str] = []  # this run's checkpoint file names, oldest first

    def save(self, trainer: TrainerView) -> None:
        path = checkpoint_path(self.run_dir, trainer.step)
        if path.name in self.written:
            return  # this step is saved already (the epoch ended on a multiple of every_steps)
        written = self.written + [path.name]
        dropped = written[: -self.keep_last] if self.keep_last is not None else []
        self.written = written[len(dropped) :]  # what the new checkpoint records as kept
        trainer.save_checkpoint(path)
        for name in dropped:
            (path.parent / name).unlink(missing_ok=True)

    def on_step_end(self, trainer: TrainerView) -> None:
        if trainer.batch_in_epoch >= trainer.steps_per_epoch:
            return  # the epoch's last step: on_epoch_end saves it, after the evaluation
        if self.every_steps and trainer.step % self.every_steps == 0:
            self.save(trainer)

    def on_epoch_end(self, trainer: TrainerView) -> None:
        self.save(trainer)

    def on_fit_end(self, trainer: TrainerView) -> None:
        self.save(trainer)

    def state_dict(self) -> dict[str, Any]:
        return {"written": list(self.written)}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.written = list(state.get("written", []))


class _Monitor(Callback):
    """Shared by KeepBest and EarlyStopping: follow one metric, remember its best value."""

    def __init__(self, metric: str, mode: str, min_delta: float = 0.0) -> None:
        if mode not in ("min", "max"):
            raise ConfigError(f"mode must be 'min' or 'max', got {mode!r}")
        self.metric, self.mode, self.min_delta = metric, mode, min_delta
        self.best: float | None = None

    def value_of(self, metrics: dict[str, float]) -> float:
        if self.metric not in metrics:
            raise ConfigError(
                f"{type(self).__name__} follows {self.metric!r}, which the evaluation does not "
                f"report; it reports {sorted(metrics)}",
                help="set the metric to one of these names",
            )
        return float(metrics[self.metric])

    def improved(self, value: float) -> bool:
        if math.isnan(value):
            return False
        if self.best is None:
            return True
        if self.mode == "max":
            return value > self.best + self.min_delta
        return value < self.best - self.min_delta

    def state_dict(self) -> dict[str, Any]:
        return {"best": self.best}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.best = state.get("best")


class KeepBest(_Monitor):
    """Save ``run_dir/checkpoints/best.safetensors`` whenever ``metric`` improves."""

    def __init__(self, run_dir: str | os.PathLike, metric: str = "eval/accuracy",
                 mode: str = "max") -> None:  # fmt: skip
        super().__init__(metric, mode)
        self.path = Path(run_dir) / "checkpoints" / f"best{CHECKPOINT_SUFFIX}"

    def on_evaluate(self, trainer: TrainerView, metrics: dict[str, float]) -> None:
        value = self.value_of(metrics)
        if self.improved(value):
            self.best = value
            trainer.save_checkpoint(self.path)


class EarlyStopping(_Monitor):
    """Stop fit when ``metric`` has not improved by more than ``min_delta`` for ``patience``
    evaluations in a row."""

    def __init__(self, metric: str = "eval/loss", mode: str = "min", patience: int = 3,
                 min_delta: float = 0.0) -> None:  # fmt: skip
        super().__init__(metric, mode, min_delta)
        if patience < 1:
            raise ConfigError(f"EarlyStopping patience must be >= 1, got {patience}")
        self.patience = patience
        self.bad_evaluations = 0

    def on_evaluate(self, trainer: TrainerView, metrics: dict[str, float]) -> None:
        value = self.value_of(metrics)
        if self.improved(value):
            self.best, self.bad_evaluations = value, 0
            return
        self.bad_evaluations += 1
        if self.bad_evaluations >= self.patience:
            trainer.stop(
                f"early stopping: {self.metric} has not improved on {self.best:.6g} for "
                f"{self.patience} evaluations"
            )

    def state_dict(self) -> dict[str, Any]:
        return {"best": self.best, "bad_evaluations": self.bad_evaluations}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.best = state.get("best")
        self.bad_evaluations = int(state.get("bad_evaluations", 0))

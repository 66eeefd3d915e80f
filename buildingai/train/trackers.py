"""Trainer callbacks that send logged numbers to experiment trackers: Weights & Biases, MLflow
and TensorBoard. Each imports its library only when the run starts, and names the extra to
install when it is missing.

In a config, ``trackers`` lists them by name or as sections with arguments::

    trackers: [tensorboard, {type: wandb, project: mnist}, {type: mlflow, experiment: mnist}]
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from .. import mlflow, tensorboard, wandb
from .callbacks import Callback, TrainerView
from .config import ConfigError


def _config_of(trainer: TrainerView) -> dict:
    return trainer.config.to_dict() if trainer.config is not None else {}


class WandbLogger(Callback):
    """Log every number the Trainer logs to a W&B run (offline without credentials); the
    resolved config becomes the run's config."""

    def __init__(self, project: str | None = None, **init_kwargs: Any) -> None:
        self.project, self.init_kwargs = project, init_kwargs

    def on_fit_start(self, trainer: TrainerView) -> None:
        if trainer.run_dir is not None:
            self.init_kwargs.setdefault("dir", str(trainer.run_dir))
        wandb.init(self.project, config=_config_of(trainer), **self.init_kwargs)

    def on_log(self, trainer: TrainerView, metrics: dict[str, float]) -> None:
        wandb.log(dict(metrics), step=trainer.step)

    def on_fit_end(self, trainer: TrainerView) -> None:
        wandb.finish()


class MLflowLogger(Callback):
    """Log the resolved config as parameters and every logged number as a metric to an
    MLflow run (local ``./mlruns``, or under ``run_dir/mlruns`` with a run_dir, unless a
    tracking URI is given or set in ``MLFLOW_TRACKING_URI``)."""

    def __init__(self, experiment: str = "buildingai", run_name: str | None = None,
                 uri: str | None = None) -> None:  # fmt: skip
        self.experiment, self.run_name, self.uri = experiment, run_name, uri
        self._context = self._run = None

    def on_fit_start(self, trainer: TrainerView) -> None:
        uri = self.uri
        if uri is None and not os.environ.get("MLFLOW_TRACKING_URI") and trainer.run_dir:
            uri = (Path(trainer.run_dir) / "mlruns").resolve().as_uri()
        self._context = mlflow.log_experiment(self.experiment, self.run_name, uri=uri)
        self._run = self._context.__enter__()
        self._run.log_params(_config_of(trainer))

    def on_log(self, trainer: TrainerView, metrics: dict[str, float]) -> None:
        self._run.log_metrics(dict(metrics), step=trainer.step)

    def on_fit_end(self, trainer: TrainerView) -> None:
        if self._context is not None:
            self._context.__exit__(None, None, None)
            self._context = self._run = None


class TensorBoardLogger(Callback):
    """Write every logged number as a TensorBoard scalar under ``logdir`` (default
    ``run_dir/tensorboard``)."""

    def __init__(self, logdir: str | os.PathLike | None = None) -> None:
        self.logdir, self.writer = logdir, None

    def on_fit_start(self, trainer: TrainerView) -> None:
        logdir = self.logdir
        if logdir is None and trainer.run_dir is not None:
            logdir = Path(trainer.run_dir) / "tensorboard"
        self.writer = tensorboard.SummaryWriter(logdir)

    def on_log(self, trainer: TrainerView, metrics: dict[str, float]) -> None:
        self.writer.add_scalars_from(dict(metrics), step=trainer.step)
        self.writer.flush()

    def on_fit_end(self, trainer: TrainerView) -> None:
        if self.writer is not None:
            self.writer.close()
            self.writer = None


TRACKERS = {"wandb": WandbLogger, "mlflow": MLflowLogger, "tensorboard": TensorBoardLogger}


def trackers_from_config(entries: list) -> list[Callback]:
    """The callbacks a config's ``trackers`` list names (names or ``{type: ..., ...}``)."""
    built = []
    for index, entry in enumerate(entries or []):
        spec = entry.to_dict() if hasattr(entry, "to_dict") else entry
        if isinstance(spec, str):
            spec = {"type": spec}
        name = spec.get("type") if isinstance(spec, dict) else None
        if name not in TRACKERS:
            raise ConfigError(
                f"trackers[{index}] is {entry!r}; not a tracker",
                help=f"use one of {', '.join(TRACKERS)}, e.g. trackers: [tensorboard]",
            )
        arguments = {key: value for key, value in spec.items() if key != "type"}
        try:
            built.append(TRACKERS[name](**arguments))
        except TypeError as error:
            raise ConfigError(f"cannot build the {name} tracker from trackers[{index}]: {error}",
                              help=f"see buildingai.train.trackers.{TRACKERS[name].__name__}") from None  # fmt: skip
    return built

"""MLflow through its own package (``pip install 'buildingai[mlflow]'``)::

    from buildingai.mlflow import log_experiment
    with log_experiment() as run:
        run.log_params(config)                 # nested configs become dotted keys
        run.log_metrics(metrics, step=step)    # tensors become numbers

Runs go to ``MLFLOW_TRACKING_URI`` when it is set, else to a local file store ``./mlruns``
(read it with ``mlflow ui --backend-store-uri ./mlruns``). MLflow keeps its file store in
maintenance mode behind ``MLFLOW_ALLOW_FILE_STORE``; choosing the local default sets it for this
process. The ``MLflowLogger`` callback (``buildingai.train.trackers``) does the same for a
Trainer.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .utils.extras import require
from .utils.scalars import flatten, numbers

DEFAULT_STORE = "mlruns"


def _library():
    return require("mlflow", "mlflow", "buildingai.mlflow")


class ExperimentRun:
    """One MLflow run: ``log_params``, ``log_metrics``, ``set_tags``, ``log_artifact``."""

    def __init__(self, client, run) -> None:
        self.client, self.run = client, run
        self.run_id = run.info.run_id

    def log_params(self, params: Any) -> None:
        """Log a (nested) mapping or ``Config`` of parameters, as dotted keys."""
        params = params.to_dict() if hasattr(params, "to_dict") else params
        for name, value in flatten(params).items():
            self.client.log_param(self.run_id, name, value)

    def log_metrics(self, metrics: dict[str, Any], step: int | None = None) -> None:
        """Log ``{name: value}`` at ``step`` (tensors become numbers)."""
        for name, value in numbers(metrics).items():
            self.client.log_metric(self.run_id, name, value, step=step or 0)

    def set_tags(self, tags: dict[str, Any]) -> None:
        for name, value in tags.items():
            self.client.set_tag(self.run_id, name, str(value))

    def log_artifact(self, path: str | os.PathLike) -> None:
        self.client.log_artifact(self.run_id, str(path))


def tracking_uri(uri: str | None = None) -> str:
    """``uri``, else ``MLFLOW_TRACKING_URI``, else the local file store ``./mlruns``."""
    if uri:
        return uri
    if os.environ.get("MLFLOW_TRACKING_URI"):
        return os.environ["MLFLOW_TRACKING_URI"]
    os.environ.setdefault("MLFLOW_ALLOW_FILE_STORE", "true")
    return Path(DEFAULT_STORE).resolve().as_uri()


@contextlib.contextmanager
def log_experiment(
    experiment: str = "buildingai", run_name: str | None = None, uri: str | None = None,
    tags: dict[str, Any] | None = None,
) -> Iterator[ExperimentRun]:  # fmt: skip
    """Start an MLflow run in ``experiment`` (created when missing) and end it on exit:
    FINISHED normally, FAILED when the block raised."""
    mlflow = _library()
    location = tracking_uri(uri)
    if location.startswith("file:"):
        os.environ.setdefault("MLFLOW_ALLOW_FILE_STORE", "true")
    client = mlflow.tracking.MlflowClient(tracking_uri=location)
    found = client.get_experiment_by_name(experiment)
    experiment_id = found.experiment_id if found else client.create_experiment(experiment)
    run = ExperimentRun(client, client.create_run(experiment_id, run_name=run_name, tags=tags))
    status = "FAILED"
    try:
        yield run
        status = "FINISHED"
    finally:
        client.set_terminated(run.run_id, status=status)

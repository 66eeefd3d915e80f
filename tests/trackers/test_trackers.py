"""The tracker adapters write files their own tools read: W&B offline runs, MLflow's local
store, TensorBoard event files; each is also a Trainer callback, and a missing library is a
one-line error naming the extra."""

import sys
import time

import numpy as np
import pytest

import buildingai as bai
from buildingai.train import Config, Trainer
from buildingai.utils import MissingExtraError

from .readers import tensorboard_scalars, wandb_history


@pytest.fixture
def offline(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    monkeypatch.delenv("WANDB_MODE", raising=False)
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.netrc credentials
    monkeypatch.setenv("WANDB_SILENT", "true")
    return tmp_path


@pytest.mark.slow
def test_wandb_as_users_write_it_works_offline(offline):
    pytest.importorskip("wandb")
    import buildingai.wandb as wandb

    wandb.init(project="my_exp")
    for current_loss in [bai.tensor(2.0), np.float32(1.0), 0.5]:
        wandb.log({"loss": current_loss})
    assert wandb.run is not None
    wandb.finish()
    files = list((offline / "wandb").glob("offline-run-*/run-*.wandb"))
    assert len(files) == 1
    losses = logged(files[0], "loss", count=3)
    assert losses == [2.0, 1.0, 0.5]


def logged(path, key: str, count: int, patience_s: float = 20.0) -> list:
    """The values of ``key`` in a W&B run file; wandb's own service process writes the file, so
    on a loaded machine the last records may land a moment after ``finish`` returns."""
    deadline = time.monotonic() + patience_s
    while True:
        values = [row[key] for row in wandb_history(path) if key in row]
        if len(values) >= count or time.monotonic() > deadline:
            return values
        time.sleep(0.2)


def test_wandb_log_before_init_says_what_to_do():
    pytest.importorskip("wandb")
    import buildingai.wandb as wandb

    with pytest.raises(bai.BuildingAIError, match=r"before init"):
        wandb.log({"loss": 1.0})


def test_mlflow_as_users_write_it_reads_back_from_the_local_store(offline):
    pytest.importorskip("mlflow")
    import mlflow

    from buildingai.mlflow import log_experiment

    config = Config(lr=0.01, model=dict(type="MLP", hidden=[8]))
    with log_experiment() as run:
        run.log_params(config)
        run.log_metrics({"loss": bai.tensor(0.75), "accuracy": 0.5}, step=1)
        run.log_metrics({"loss": 0.25}, step=2)
    client = mlflow.tracking.MlflowClient((offline / "mlruns").as_uri())
    stored = client.get_run(run.run_id)
    assert stored.info.status == "FINISHED"
    assert stored.data.params["lr"] == "0.01" and stored.data.params["model.type"] == "MLP"
    history = [(m.step, m.value) for m in client.get_metric_history(run.run_id, "loss")]
    assert history == [(1, 0.75), (2, 0.25)]


def test_an_mlflow_run_that_raises_is_marked_failed(offline):
    pytest.importorskip("mlflow")
    import mlflow

    from buildingai.mlflow import log_experiment

    with pytest.raises(ZeroDivisionError), log_experiment("failing") as run:
        raise ZeroDivisionError("planted")
    client = mlflow.tracking.MlflowClient((offline / "mlruns").as_uri())
    assert client.get_run(run.run_id).info.status == "FAILED"


def test_tensorboard_scalars_read_back(tmp_path):
    pytest.importorskip("tensorboardX")
    from buildingai.tensorboard import SummaryWriter

    with SummaryWriter(tmp_path / "tb") as writer:
        writer.add_scalar("loss", bai.tensor(1.5), 1)
        writer.add_scalars_from({"loss": 0.5, "accuracy": np.float64(0.75)}, step=2)
        writer.add_histogram("weight", bai.randn(10), 2)
    scalars = tensorboard_scalars(tmp_path / "tb")
    assert scalars["loss"] == [(1, 1.5), (2, 0.5)] and scalars["accuracy"] == [(2, 0.75)]


def test_a_trainer_config_sends_its_numbers_to_all_three(offline):
    for name in ("wandb", "mlflow", "tensorboardX"):
        pytest.importorskip(name)
    import mlflow

    config = Config(
        epochs=1, batch_size=8, log_every=2, run_dir=str(offline / "run"), progress=False,
        data=dict(train=dict(type="Spirals", n=32, seed=0), eval=None),
        model=dict(type="MLP", in_features=2, hidden=[8], out_features=3),
        trackers=["tensorboard", {"type": "wandb", "project": "spirals"},
                  {"type": "mlflow", "experiment": "spirals"}],
    )  # fmt: skip
    Trainer.from_config(config, verbose=False).fit()
    run_dir = offline / "run"
    losses = tensorboard_scalars(run_dir / "tensorboard")["train/loss"]
    assert [step for step, _ in losses] == [2, 4]
    wandb_file = next((run_dir / "wandb").glob("offline-run-*/run-*.wandb"))
    logged(wandb_file, "train/loss", count=2)
    rows = [row for row in wandb_history(wandb_file) if "train/loss" in row]
    assert [row["_step"] for row in rows] == [2, 4]
    assert np.allclose([row["train/loss"] for row in rows], [value for _, value in losses])
    client = mlflow.tracking.MlflowClient((run_dir / "mlruns").as_uri())
    (run,) = client.search_runs([client.get_experiment_by_name("spirals").experiment_id])
    assert run.data.params["model.type"] == "MLP"
    assert [m.step for m in client.get_metric_history(run.info.run_id, "train/loss")] == [2, 4]


def test_an_unknown_tracker_in_a_config_is_refused_by_name():
    config = Config(trackers=["neptune"], data=dict(train=dict(type="Spirals", n=8), eval=None),
                    model=dict(type="MLP", in_features=2, out_features=3))  # fmt: skip
    with pytest.raises(bai.BuildingAIError, match=r"(?s)trackers\[0\].*neptune.*tensorboard"):
        Trainer.from_config(config)


@pytest.mark.parametrize(
    "module, library, extra",
    [("buildingai.wandb", "wandb", "wandb"), ("buildingai.mlflow", "mlflow", "mlflow"),
     ("buildingai.tensorboard", "tensorboardX", "tensorboard")],
)  # fmt: skip
def test_a_missing_library_is_one_line_naming_the_extra(monkeypatch, module, library, extra):
    import importlib

    monkeypatch.setitem(sys.modules, library, None)  # import fails as if not installed
    adapter = importlib.import_module(module)
    with pytest.raises(MissingExtraError) as caught:
        if library == "wandb":
            adapter.init(project="x")
        elif library == "mlflow":
            with adapter.log_experiment():
                pass
        else:
            adapter.SummaryWriter("unused")
    message = str(caught.value)
    assert f"pip install 'buildingai[{extra}]'" in message and library in message

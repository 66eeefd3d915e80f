"""plot_metrics on a real Trainer run: one panel per metric, read from the run's
metrics.jsonl."""

from __future__ import annotations

import json

import pytest

from buildingai.train import Config, Trainer
from buildingai.vis import plot_metrics, read_metrics

pytest.importorskip("matplotlib")
pytest.importorskip("safetensors")


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    run = tmp_path_factory.mktemp("runs") / "run"
    config = Config(
        seed=0, epochs=2, batch_size=16, eval_batch_size=64, run_dir=run, log_every=2,
        data=dict(train=dict(type="Spirals", n=64, seed=0), eval=dict(type="Spirals", n=32, seed=1)),
        model=dict(type="MLP", in_features=2, hidden=[8], out_features=3),
        optim=dict(type="Adam", lr=0.01), progress=False,
    )  # fmt: skip
    Trainer.from_config(config, verbose=False).fit()
    return run


def test_curves_are_read_from_the_runs_metrics_file(run_dir):
    curves = read_metrics(run_dir)
    records = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    expected = [(r["step"], r["train/loss"]) for r in records if "train/loss" in r]
    assert curves["train/loss"] == expected
    assert [step for step, _ in curves["eval/accuracy"]] == [4, 8]


def test_plot_has_one_panel_per_metric(run_dir, tmp_path):
    figure = plot_metrics(run_dir, tmp_path / "metrics.png")
    titles = {axes.get_title() for axes in figure.axes}
    assert {"train/loss", "eval/loss", "eval/accuracy"} <= titles
    assert (tmp_path / "metrics.png").read_bytes()[:4] == b"\x89PNG"
    chosen = plot_metrics(run_dir, metrics=["eval/loss"])
    assert [axes.get_title() for axes in chosen.axes] == ["eval/loss"]
    line = chosen.axes[0].lines[0]
    assert list(line.get_xdata()) == [4, 8]


def test_missing_run_or_metric_is_explained(run_dir, tmp_path):
    with pytest.raises(FileNotFoundError, match="no metrics.jsonl in"):
        plot_metrics(tmp_path)
    with pytest.raises(KeyError, match="no metric 'bleu'.*train/loss"):
        plot_metrics(run_dir, metrics=["bleu"])

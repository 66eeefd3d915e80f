"""The Trainer on a synthetic set: fit, evaluate, callbacks, and exact resume after a crash."""

import io
import json

import numpy as np
import pytest

from buildingai.train import (
    Callback,
    Config,
    ConfigError,
    EarlyStopping,
    Trainer,
    latest_checkpoint,
    list_checkpoints,
)  # fmt: skip
from buildingai.train.progress import PlainProgress

pytest.importorskip("safetensors")


def config(run_dir=None, **changes) -> Config:
    base = Config(
        seed=3, epochs=3, batch_size=16, eval_batch_size=64, run_dir=run_dir, log_every=4,
        data=dict(train=dict(type="Spirals", n=96, seed=0), eval=dict(type="Spirals", n=48, seed=1)),
        model=dict(type="MLP", in_features=2, hidden=[16, 16], out_features=3, dropout=0.1),
        optim=dict(type="Adam", lr=0.01), scheduler=dict(type="CosineAnnealingLR", T_max=3),
        progress=False,
    )  # fmt: skip
    return base.merge(changes, strict=False)  # the Trainer checks it against DEFAULTS


def weights(trainer) -> dict:
    return {name: value.numpy().copy() for name, value in trainer.model.state_dict().items()}


class Crash(Callback):
    def __init__(self, at_step):
        self.at_step = at_step

    def on_step_end(self, trainer):
        if trainer.step == self.at_step:
            raise KeyboardInterrupt("simulated crash")


def test_fit_learns_and_writes_run_folder(tmp_path):
    trainer = Trainer.from_config(config(tmp_path / "run"), verbose=False)
    assert trainer.steps_per_epoch == 6
    metrics = trainer.fit()
    assert set(metrics) == {"eval/loss", "eval/accuracy"} and trainer.step == 18
    run = tmp_path / "run"
    assert Config.from_yaml(run / "config.yaml").epochs == 3
    records = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in records if "train/loss" in r] == [4, 8, 12, 16]
    assert [r["step"] for r in records if "eval/loss" in r] == [6, 12, 18]
    assert (run / "metrics.csv").read_text().startswith("step,epoch,metric,value\n")
    assert trainer.evaluate() == pytest.approx(metrics)


def test_resume_after_crash_is_bit_identical(tmp_path):
    reference = Trainer.from_config(config(tmp_path / "a"), verbose=False)
    reference.fit()

    changes = {"checkpoint": {"every_steps": 5}}
    crashed = Trainer.from_config(config(tmp_path / "b", **changes), verbose=False,
                                  callbacks=[Crash(at_step=9)])  # fmt: skip
    with pytest.raises(KeyboardInterrupt):
        crashed.fit()
    assert latest_checkpoint(tmp_path / "b").name == "step-00000006.safetensors"  # epoch end
    resumed = Trainer.from_config(config(tmp_path / "b", **changes), resume=True, verbose=False)
    assert (resumed.step, resumed.epoch, resumed.batch_in_epoch) == (6, 1, 0)
    resumed.fit()
    for name, value in weights(reference).items():
        np.testing.assert_array_equal(weights(resumed)[name], value)  # bit for bit

    # Mid-epoch: crash after the step-10 checkpoint, resume inside epoch 1.
    crashed = Trainer.from_config(config(tmp_path / "c", **changes), verbose=False,
                                  callbacks=[Crash(at_step=11)])  # fmt: skip
    with pytest.raises(KeyboardInterrupt):
        crashed.fit()
    resumed = Trainer.from_config(config(tmp_path / "c", **changes), resume=True, verbose=False)
    assert (resumed.step, resumed.epoch, resumed.batch_in_epoch) == (10, 1, 4)
    assert resumed.fit() == reference.last_eval
    for name, value in weights(reference).items():
        np.testing.assert_array_equal(weights(resumed)[name], value)
    records = [
        json.loads(line) for line in (tmp_path / "c" / "metrics.jsonl").read_text().splitlines()
    ]
    steps = [r["step"] for r in records if "train/loss" in r]
    assert steps == sorted(set(steps))  # records after the checkpoint were not duplicated


def test_checkpoint_cadence_and_keep_last(tmp_path):
    trainer = Trainer.from_config(
        config(tmp_path, checkpoint={"every_steps": 4, "keep_last": None}), verbose=False
    )
    trainer.fit()
    # every 4 steps, plus each epoch end (6, 12, 18)
    assert [int(p.stem[5:]) for p in list_checkpoints(tmp_path)] == [4, 6, 8, 12, 16, 18]
    trainer = Trainer.from_config(
        config(tmp_path / "k", checkpoint={"every_steps": 4, "keep_last": 2}), verbose=False
    )
    trainer.fit()
    assert [int(p.stem[5:]) for p in list_checkpoints(tmp_path / "k")] == [16, 18]


def test_keep_best(tmp_path):
    seen = []

    class Record(Callback):
        def on_evaluate(self, trainer, metrics):
            seen.append(metrics["eval/accuracy"])

    trainer = Trainer.from_config(
        config(tmp_path, checkpoint={"keep_best": "eval/accuracy"}), verbose=False,
        callbacks=[Record()],
    )  # fmt: skip
    trainer.fit()
    from buildingai import load

    best = load(tmp_path / "checkpoints" / "best.safetensors")
    assert best["last_eval"]["eval/accuracy"] == max(seen)
    assert best["progress"]["step"] == 6 * (1 + seen.index(max(seen)))


def test_early_stopping():
    stopper = EarlyStopping(metric="eval/loss", mode="min", patience=2)
    trainer = Trainer.from_config(
        config(epochs=20, optim={"lr": 0.0}, scheduler=None), verbose=False, callbacks=[stopper]
    )  # lr 0: the loss never improves after the first evaluation
    trainer.fit()
    assert trainer.epoch == 3 and "early stopping" in trainer.stop_reason
    trainer = Trainer.from_config(
        config(epochs=2, early_stopping={"metric": "eval/los"}), verbose=False
    )
    with pytest.raises(
        ConfigError, match="follows 'eval/los', which the evaluation does not report"
    ):
        trainer.fit()


def test_max_steps_and_top_k_metric():
    trainer = Trainer.from_config(
        config(max_steps=7, metrics=["accuracy", "top2_accuracy"]), verbose=False
    )
    metrics = trainer.fit()
    assert trainer.step == 7 and metrics["eval/top2_accuracy"] >= metrics["eval/accuracy"]


def test_config_errors_surface_early():
    with pytest.raises(
        ConfigError, match="unknown key 'optim.lrr' for optimizer Adam — did you mean 'optim.lr'"
    ):
        Trainer.from_config(config(optim={"lrr": 0.1}))
    with pytest.raises(ConfigError, match="unknown key 'epoch' — did you mean 'epochs'"):
        Trainer.from_config(config().to_dict() | {"epoch": 1})


def test_plain_progress_line():
    out = io.StringIO()
    bar = PlainProgress(10, "train", file=out, min_interval=0)
    bar.set_postfix({"loss": 0.5})
    bar.update(4)
    bar.close()
    text = out.getvalue()
    assert "\r" in text and "4/10 [ 40%]" in text and "steps/s ETA" in text and "loss=0.5" in text


def test_evaluate_on_another_dataset_uses_the_loader_options():
    from buildingai import nn, optim
    from buildingai.data import Dataset, default_collate, get_worker_info
    from buildingai.data.datasets import Spirals

    class InWorkersOnly(Dataset):
        """Dict items (the collate_fn makes them a tuple), readable only in a worker."""

        def __init__(self, n):
            self.spirals = Spirals(n, seed=2)

        def __len__(self):
            return len(self.spirals)

        def __getitem__(self, index):
            assert get_worker_info() is not None, "loaded in the main process"
            point, label = self.spirals[index]
            return {"x": point, "y": label}

    def to_pair(items):
        batch = default_collate(items)
        return batch["x"], batch["y"]

    model = nn.Linear(2, 3)
    trainer = Trainer(
        model, optim.SGD(model.parameters(), lr=0.1), InWorkersOnly(8), eval_set=InWorkersOnly(8),
        collate_fn=to_pair, num_workers=1, eval_batch_size=5, verbose=False, show_progress=False,
    )  # fmt: skip
    expected = trainer.evaluate()
    assert set(expected) == {"eval/loss", "eval/accuracy"}
    assert trainer.evaluate(InWorkersOnly(8)) == pytest.approx(expected)
    assert trainer.evaluate(InWorkersOnly(8), batch_size=3) == pytest.approx(expected)


def test_from_config_keeps_freed_memory_unless_told_not_to(monkeypatch):
    import buildingai.train.trainer as trainer_module

    calls = []
    monkeypatch.setattr(trainer_module, "retain_freed_memory", lambda: calls.append(1))
    Trainer.from_config(config(retain_freed_memory=False), verbose=False)
    assert calls == []
    Trainer.from_config(config(), verbose=False)
    assert calls == [1]


def test_from_config_sets_the_threads_and_one_pool(monkeypatch):
    import buildingai.train.trainer as trainer_module
    from buildingai.backend.threads import get_num_threads

    calls = []
    monkeypatch.setattr(trainer_module, "set_num_threads", lambda n, gemm: calls.append((n, gemm)))
    Trainer.from_config(config(), verbose=False)
    assert calls == []  # null: the threads stay as the program set them
    Trainer.from_config(config(threads=2), verbose=False)
    Trainer.from_config(config(threads=2, one_pool=True), verbose=False)
    Trainer.from_config(config(one_pool=True), verbose=False)  # at the current count
    Trainer.from_config(config(threads=1, one_pool=False), verbose=False)
    assert calls == [(2, None), (2, True), (get_num_threads(), True), (1, False)]
    with pytest.raises(ConfigError, match="threads"):
        Trainer.from_config(config(threads=0), verbose=False)

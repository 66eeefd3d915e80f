"""Trainer.from_config: the top-level shorthands, a user-registered model, and datasets that
are built only when the data is first needed."""

import pytest

import buildingai.train.trainer as trainer_module
from buildingai import nn
from buildingai.nn import functional as F
from buildingai.train import Config, ConfigError, Trainer, register_model

pytest.importorskip("safetensors")


@register_model
class CustomResNet(nn.Module):
    """A small residual network for (N, 1, 28, 28) images, registered as users register theirs.

    depth: layers in all (a stem, residual convolutions, a head); widen_factor: channels x4."""

    def __init__(self, depth: int = 18, widen_factor: int = 1, num_classes: int = 10) -> None:
        super().__init__()
        width = 4 * widen_factor
        self.stem = nn.Conv2d(1, width, 3, padding=1)
        self.blocks = nn.ModuleList(
            [nn.Conv2d(width, width, 3, padding=1) for _ in range(depth - 2)]
        )
        self.head = nn.Linear(width, num_classes)

    def forward(self, x):
        x = F.relu(self.stem(x))  # (N, width, 28, 28)
        for block in self.blocks:
            x = x + F.relu(block(x))
        return self.head(x.mean(axis=(2, 3)))  # (N, num_classes)


def test_the_readme_snippet_runs_without_reading_any_data(monkeypatch):
    def no_data(*args, **kwargs):
        raise AssertionError("from_config read a dataset")

    monkeypatch.setattr(trainer_module, "build_dataset", no_data)

    # verbatim, as users write it
    config = Config(batch_size=256, lr=1e-3, model=dict(type="CustomResNet", depth=50, widen_factor=2))  # fmt: skip
    trainer = Trainer.from_config(config)

    assert isinstance(trainer.model, CustomResNet) and len(trainer.model.blocks) == 48
    assert trainer.model.stem.weight.shape == (8, 1, 3, 3)  # widen_factor 2
    assert trainer.batch_size == 256 and trainer.optimizer.param_groups[0]["lr"] == 1e-3
    assert trainer.config.optim.lr == 1e-3 and trainer.config.lr is None  # one place for it
    with pytest.raises(AssertionError, match="read a dataset"):
        trainer.steps_per_epoch  # noqa: B018 - the data is built on first use, here


def spirals(**changes) -> Config:
    base = Config(
        epochs=1, batch_size=16, progress=False, retain_freed_memory=False,
        data=dict(train=dict(type="Spirals", n=64, seed=0), eval=dict(type="Spirals", n=32, seed=1)),
        model=dict(type="MLP", in_features=2, hidden=[8], out_features=3),
    )  # fmt: skip
    return base.merge(changes, strict=False)


def test_lr_shorthand_sets_the_optimizer_and_is_saved_as_optim_lr(tmp_path):
    trainer = Trainer.from_config(
        spirals(lr=0.05, optim={"type": "SGD"}, run_dir=str(tmp_path / "run")), verbose=False
    )
    assert trainer.optimizer.param_groups[0]["lr"] == 0.05 and trainer.steps_per_epoch == 4
    trainer.fit()
    saved = Config.from_yaml(tmp_path / "run" / "config.yaml")
    assert saved.optim.to_dict() == {"type": "SGD", "lr": 0.05} and saved.lr is None
    # the saved config builds the same optimizer again, without a conflict
    assert Trainer.from_config(saved.merge({"run_dir": None}), verbose=False).lr == 0.05


def test_lr_and_optim_lr_that_disagree_name_both():
    with pytest.raises(ConfigError, match=r"lr=0\.1 and optim\.lr=0\.01 disagree"):
        Trainer.from_config(spirals(lr=0.1, optim={"lr": 0.01}), verbose=False)
    same = Trainer.from_config(spirals(lr=0.01, optim={"lr": 0.01}), verbose=False)
    assert same.lr == 0.01


def test_without_any_lr_the_optimizer_default_applies():
    assert Trainer.from_config(spirals(), verbose=False).lr == 1e-3  # Adam's default


def test_dataset_and_scheduler_specs_are_checked_before_any_data_is_read(monkeypatch):
    monkeypatch.setattr(trainer_module, "build_dataset", None)  # calling it would fail
    with pytest.raises(ConfigError, match="unknown key 'data.train.nn' for dataset Spirals"):
        Trainer.from_config(spirals(data={"train": {"nn": 64}}), verbose=False)
    with pytest.raises(ConfigError, match="unknown dataset type 'Spiral'"):
        Trainer.from_config(spirals(data={"eval": {"type": "Spiral"}}), verbose=False)
    with pytest.raises(ConfigError, match="unknown key 'scheduler.T_mx'"):
        Trainer.from_config(
            spirals(scheduler={"type": "CosineAnnealingLR", "T_mx": 3}), verbose=False
        )


def test_a_configured_scheduler_is_built_before_the_first_step():
    config = spirals(
        epochs=2, optim={"type": "SGD", "lr": 0.1},
        scheduler={"type": "LinearLR", "start_factor": 0.5, "total_iters": 2},
    )  # fmt: skip
    trainer = Trainer.from_config(config, verbose=False)
    used = []  # the rate each optimizer step runs with
    trainer.optimizer.register_step_pre_hook(lambda opt: used.append(opt.param_groups[0]["lr"]))
    trainer.fit()
    assert trainer.scheduler.steps_per_epoch == 4 and len(used) == 8
    assert used[0] == pytest.approx(0.05)  # start_factor applies from the first step
    assert used[-1] == pytest.approx(0.1 * (0.5 + 0.5 * 7 / 8))

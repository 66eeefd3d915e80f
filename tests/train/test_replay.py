"""``buildingai replay``: a deterministic run replays with every checksum equal; a planted
nondeterminism is caught at the first step it changes."""

import json

import numpy as np
import pytest

import buildingai as bai
from buildingai import cli, nn
from buildingai.train import Config, Trainer
from buildingai.train.checksums import parameter_checksum, read_checksums
from buildingai.train.registry import MODELS
from buildingai.train.replay import replay

pytest.importorskip("safetensors")
pytest.importorskip("yaml")

# The planted nondeterminism: after this many forward calls, the model adds noise that no seed
# controls, as a data race or an unseeded library call would.
_calls = {"count": 0, "noisy_after": None}


@MODELS.register(name="ReplayProbe", replace=True)
class ReplayProbe(nn.Module):
    def __init__(self, in_features: int = 2, out_features: int = 3) -> None:
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        _calls["count"] += 1
        out = self.linear(x)
        if _calls["noisy_after"] is not None and _calls["count"] > _calls["noisy_after"]:
            noise = np.random.default_rng().normal(size=out.shape).astype(np.float32)
            out = out + bai.tensor(noise)
        return out


def train(run_dir, model_type="MLP", epochs=2):
    config = Config(
        epochs=epochs, batch_size=8, run_dir=str(run_dir), progress=False, seed=3,
        data=dict(train=dict(type="Spirals", n=48, seed=0), eval=dict(type="Spirals", n=16, seed=1)),
        model=dict(type=model_type, in_features=2, out_features=3),
        checkpoint=dict(every_steps=4, keep_last=None),
    )  # fmt: skip
    if model_type == "MLP":
        config.model.hidden = [8]
        config.model.dropout = 0.2  # random streams must replay too
    else:  # Adam's first step moves by lr * sign(grad), which small noise may not change
        config.optim = Config(type="SGD", lr=0.1)
    trainer = Trainer.from_config(config, verbose=False)
    trainer.fit()
    return trainer


def test_every_step_records_the_parameter_checksum(tmp_path):
    trainer = train(tmp_path / "run")
    recorded = read_checksums(tmp_path / "run")
    assert sorted(recorded) == list(range(1, trainer.step + 1))
    assert recorded[trainer.step] == parameter_checksum(trainer.model)


def test_a_deterministic_run_replays_step_for_step(tmp_path):
    train(tmp_path / "run")
    result = replay(tmp_path / "run", steps=5)
    assert result.matched and len(result.checked_steps) == 5
    assert result.start_step > 0  # from a checkpoint
    from_zero = replay(tmp_path / "run", steps=7, from_start=True)
    assert from_zero.matched and from_zero.checked_steps == list(range(1, 8))
    assert "match" in from_zero.summary()


def test_replay_names_the_first_step_a_planted_nondeterminism_changes(tmp_path):
    _calls.update(count=0, noisy_after=None)
    train(tmp_path / "run", model_type="ReplayProbe")
    _calls.update(count=0, noisy_after=3)  # forward calls 1-3 of the replay stay clean
    try:
        result = replay(tmp_path / "run", steps=6, from_start=True)
    finally:
        _calls["noisy_after"] = None
    assert result.first_divergent_step == 4
    assert result.checked_steps == [1, 2, 3, 4]
    assert "step 4 is the first" in result.summary()


def test_the_command_prints_one_line_and_exits_1_on_a_divergence(tmp_path, capsys):
    _calls.update(count=0, noisy_after=None)
    train(tmp_path / "run", model_type="ReplayProbe")
    assert cli.main(["replay", str(tmp_path / "run"), "--steps", "3"]) == 0
    assert "match the recorded" in capsys.readouterr().out
    _calls.update(count=0, noisy_after=0)
    try:
        assert cli.main(["replay", str(tmp_path / "run"), "--steps", "3", "--from-start"]) == 1
    finally:
        _calls["noisy_after"] = None
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1 and "step 1 is the first" in out[0]


def test_replay_of_a_directory_without_a_record_is_one_clear_line(tmp_path, capsys):
    assert cli.main(["replay", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error:") and "checksums" in err and "\n" not in err


def test_the_run_record_holds_seed_config_git_blas_and_versions(tmp_path):
    train(tmp_path / "run", epochs=1)
    session = json.loads((tmp_path / "run" / "run.json").read_text())["sessions"][0]
    assert session["seed"] == 3
    assert session["config"]["model"]["type"] == "MLP"
    assert session["config"]["data"]["train"]["n"] == 48
    assert "commit" in session["git"]
    assert session["numpy"] == np.__version__ and "blas" in session
    assert "accelerations" in session and "packages" in session

"""A run directory is never overwritten: a fresh run refuses one that holds files, and keep_last
deletes only checkpoints the run itself wrote."""

import pytest

from buildingai import nn, optim
from buildingai.data.datasets import Spirals
from buildingai.train import Config, RunDirExistsError, Trainer, list_checkpoints

pytest.importorskip("safetensors")


def config(run_dir, **changes) -> Config:
    base = Config(
        seed=0, epochs=1, batch_size=16, run_dir=str(run_dir), progress=False,
        retain_freed_memory=False, checkpoint=dict(every_steps=2, keep_last=1),
        data=dict(train=dict(type="Spirals", n=64, seed=0), eval=dict(type="Spirals", n=32, seed=1)),
        model=dict(type="MLP", in_features=2, hidden=[8], out_features=3),
    )  # fmt: skip
    return base.merge(changes, strict=False)


def snapshot(folder) -> dict:
    return {
        str(path.relative_to(folder)): path.read_bytes()
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


def test_a_fresh_run_refuses_a_run_dir_that_holds_files(tmp_path):
    run = tmp_path / "run"
    Trainer.from_config(config(run), verbose=False).fit()
    before = snapshot(run)
    assert "config.yaml" in before and "run.json" in before and "metrics.jsonl" in before

    with pytest.raises(RunDirExistsError, match="already holds files") as info:
        Trainer.from_config(config(run, epochs=2), verbose=False).fit()
    assert "--resume" in info.value.help and f"run_dir={tmp_path / 'run-2'}" in info.value.help
    assert snapshot(run) == before  # nothing deleted, truncated or rewritten

    (tmp_path / "run-2").mkdir()  # an empty directory is free
    (tmp_path / "run-2" / "notes.txt").write_text("mine")
    with pytest.raises(RunDirExistsError, match=r"run_dir=.*run-3"):
        Trainer.from_config(config(run), verbose=False).fit()


def test_a_trainer_built_directly_refuses_too_before_reading_data(tmp_path):
    (tmp_path / "results.csv").write_text("keep me")
    model = nn.Linear(2, 3)

    def train_set():
        raise AssertionError("the data was read before the run_dir was checked")

    trainer = Trainer(model, optim.SGD(model.parameters(), lr=0.1), train_set,
                      run_dir=tmp_path, verbose=False, show_progress=False)  # fmt: skip
    with pytest.raises(RunDirExistsError, match=r"\(results\.csv\)"):
        trainer.fit()
    assert [p.name for p in tmp_path.iterdir()] == ["results.csv"]
    trainer = Trainer(model, optim.SGD(model.parameters(), lr=0.1), lambda: Spirals(32),
                      run_dir=tmp_path / "new", verbose=False, show_progress=False)  # fmt: skip
    trainer.fit()  # a function that builds the dataset, called when fit needs the data
    assert trainer.steps_per_epoch == 1 and (tmp_path / "new" / "run.json").exists()


def test_an_empty_run_dir_and_a_second_fit_are_the_same_run(tmp_path):
    trainer = Trainer.from_config(config(tmp_path), verbose=False)  # tmp_path exists, empty
    trainer.fit()
    trainer.epochs = 2
    trainer.fit()  # the same trainer goes on in its own directory
    assert trainer.step == 8 and [p.name for p in list_checkpoints(tmp_path)] == [
        "step-00000008.safetensors"
    ]


def test_resume_continues_in_the_run_dir(tmp_path):
    Trainer.from_config(config(tmp_path / "run"), verbose=False).fit()
    resumed = Trainer.from_config(config(tmp_path / "run", epochs=2), resume=True, verbose=False)
    assert resumed.step == 4
    resumed.fit()
    assert resumed.step == 8


def test_keep_last_deletes_only_checkpoints_this_run_wrote(tmp_path):
    run = tmp_path / "run"
    Trainer.from_config(config(run, checkpoint={"keep_last": 2}), verbose=False).fit()
    written = [p.name for p in list_checkpoints(run)]
    assert written == ["step-00000002.safetensors", "step-00000004.safetensors"]
    # a file the run did not write, named like one of its checkpoints
    foreign = run / "checkpoints" / "step-00000003.safetensors"
    foreign.write_bytes(b"a user's copy")

    changes = {"epochs": 3, "checkpoint": {"keep_last": 2}}
    resumed = Trainer.from_config(config(run, **changes), resume=True, verbose=False)
    resumed.fit()
    assert foreign.read_bytes() == b"a user's copy"
    names = [p.name for p in list_checkpoints(run)]
    assert names == [foreign.name, "step-00000010.safetensors", "step-00000012.safetensors"]


class FailAt:
    """A dataset of Spirals whose item ``index`` raises: a run that fails at a chosen step."""

    def __init__(self, index: int) -> None:
        self.data, self.index = Spirals(64, seed=0), index

    def __len__(self) -> int:
        return len(self.data)

    def __getitem__(self, index):
        if index == self.index:
            raise RuntimeError("a broken sample")
        return self.data[index]


def broken_trainer(run_dir, fail_at: int, **options) -> Trainer:
    model = nn.Sequential(nn.Flatten(), nn.Linear(2, 3))
    return Trainer(model, optim.SGD(model.parameters(), lr=0.1), FailAt(fail_at), run_dir=run_dir,
                   batch_size=16, shuffle=False, verbose=False, show_progress=False,
                   **options)  # fmt: skip


@pytest.mark.parametrize("existed", [False, True])
def test_a_run_that_fails_before_its_first_checkpoint_leaves_the_run_dir_as_found(
    tmp_path, existed
):
    run = tmp_path / "run"
    if existed:
        run.mkdir()  # an empty directory made for the run stays, empty
    trainer = broken_trainer(run, fail_at=20, checkpoint_every=4)  # fails in step 2
    with pytest.raises(RuntimeError, match="a broken sample"):
        trainer.fit()
    assert run.exists() == existed and (not existed or not any(run.iterdir()))
    Trainer.from_config(config(run), verbose=False).fit()  # the corrected run is not refused
    assert list_checkpoints(run)


def test_a_run_that_fails_after_a_checkpoint_keeps_its_files(tmp_path):
    run = tmp_path / "run"
    with pytest.raises(RuntimeError, match="a broken sample"):
        broken_trainer(run, fail_at=40, checkpoint_every=2).fit()  # fails in step 3
    assert [p.name for p in list_checkpoints(run)] == ["step-00000002.safetensors"]
    assert (run / "run.json").exists()
    with pytest.raises(RunDirExistsError):  # resumable: kept, and a new run is refused
        Trainer.from_config(config(run), verbose=False).fit()

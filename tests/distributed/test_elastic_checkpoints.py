"""Elastic checkpoints and the restart policy, without MPI: only sealed checkpoints are resumed
from, none is overwritten, and the launcher's decisions (restart, shrink, give up) are named."""

import numpy as np
import pytest

import buildingai as bai
from buildingai.distributed import DistributedError, _rank_status, elastic
from buildingai.distributed._restarts import RestartPolicy
from buildingai.errors import CheckpointError


def test_latest_is_the_newest_sealed_checkpoint(tmp_path):
    folder = elastic.CheckpointFolder(tmp_path / "ckpt")
    assert folder.latest() is None
    folder.save(5, {"w": bai.tensor(np.arange(3.0))})
    folder.save(10, {"w": bai.tensor(np.arange(3.0) + 1)})
    # a rank died while step 15 was written: its file is there, the seal is not
    unsealed = folder.folder_of(15)
    unsealed.mkdir()
    bai.save({"w": bai.tensor(np.zeros(3))}, unsealed / "rank0.safetensors")
    latest = folder.latest()
    assert (latest.step, latest.world_size, latest.files) == (10, 1, ("rank0.safetensors",))
    assert latest.load()["w"].numpy().tolist() == [1.0, 2.0, 3.0]
    assert [saved.step for saved in folder.complete()] == [5, 10]


def test_a_sealed_checkpoint_is_never_overwritten(tmp_path):
    folder = elastic.CheckpointFolder(tmp_path)
    folder.save(5, {"step": 5})
    with pytest.raises(CheckpointError, match="already holds a complete checkpoint of step 5"):
        folder.save(5, {"step": 6})
    assert folder.latest().load() == {"step": 5}


def test_an_unsealed_step_is_rewritten_and_loses_a_larger_worlds_files(tmp_path):
    folder = elastic.CheckpointFolder(tmp_path)
    unsealed = folder.folder_of(5)
    unsealed.mkdir()
    for rank in range(2):  # two ranks wrote, then the job died before the seal
        bai.save({"rank": rank}, unsealed / f"rank{rank}.safetensors")
    folder.save(5, {"rank": "new"})
    assert sorted(p.name for p in unsealed.iterdir()) == ["complete.json", "rank0.safetensors"]
    assert folder.latest().load_all() == [{"rank": "new"}]


def test_keep_last_deletes_only_older_sealed_checkpoints(tmp_path):
    folder = elastic.CheckpointFolder(tmp_path, keep_last=2)
    for step in (1, 2, 3):
        folder.save(step, {})
    assert [saved.step for saved in folder.complete()] == [2, 3]
    assert not folder.folder_of(1).exists()


def test_a_seal_whose_files_went_missing_is_named(tmp_path):
    folder = elastic.CheckpointFolder(tmp_path)
    folder.save(5, {})
    (folder.folder_of(5) / "rank0.safetensors").unlink()
    with pytest.raises(CheckpointError, match="is sealed but lacks rank0.safetensors"):
        folder.latest()
    with pytest.raises(CheckpointError, match="there is no rank 3"):
        elastic.SavedCheckpoint(tmp_path, 5, 1, ("rank0.safetensors",)).load(3)


def test_restart_count_comes_from_the_launcher(monkeypatch):
    monkeypatch.delenv(elastic.RESTART_VARIABLE, raising=False)
    assert elastic.restart_count() == 0
    monkeypatch.setenv(elastic.RESTART_VARIABLE, "2")
    assert elastic.restart_count() == 2


def test_the_step_and_checkpoint_reach_the_launchers_report(tmp_path, monkeypatch):
    status = _rank_status.RankStatus.create(str(tmp_path / "rank1"))
    status.started(77)
    monkeypatch.setattr("buildingai.distributed.elastic.rank_status", lambda: status)
    elastic.record_step(7)
    elastic.CheckpointFolder(tmp_path / "ckpt").save(5, {})
    status.ended(_rank_status.SIGNALLED, 9)
    _rank_status.RankStatus.create(str(tmp_path / "rank0")).started(76)
    assert _rank_status.first_failure(str(tmp_path), 2) == (
        1,
        "rank 1 (PID 77) was killed by signal 9 (SIGKILL) at step 7",
    )
    assert _rank_status.last_checkpoint(str(tmp_path), 2) == 5


def test_a_rank_that_aborted_the_job_is_the_cause_without_an_exit_status(tmp_path):
    # MPI_Abort may kill the rank's supervisor before it records how the rank ended
    cleaned_up = _rank_status.RankStatus.create(str(tmp_path / "rank0"))
    cleaned_up.started(76)
    cleaned_up.entered("all_reduce #1 at a.py:3")
    aborted = _rank_status.RankStatus.create(str(tmp_path / "rank1"))
    aborted.started(77)
    aborted.at_step(3)
    aborted.failing("sys.exit(3)")
    assert _rank_status.first_failure(str(tmp_path), 2) == (
        1,
        "rank 1 (PID 77) ended after sys.exit(3) at step 3, which aborts the whole job (its "
        "traceback is above)",
    )


KILLED = (1, "rank 1 (PID 77) was killed by signal 9 (SIGKILL) at step 7")


def test_restarts_keep_the_world_size_by_default():
    policy = RestartPolicy(2, max_restarts=2)
    assert policy.after_failure(137, KILLED, 5) == (True, [
        "restart 1 of 2: rank 1 (PID 77) was killed by signal 9 (SIGKILL) at step 7",
        "starting 2 ranks again from the last complete checkpoint (step 5)",
    ])  # fmt: skip
    again, lines = policy.after_failure(137, KILLED, None)
    assert again and policy.ranks == 2
    assert lines[1] == ("slot 1 (rank 1) has had 2 failures (--slot-failures 2), but 1 rank "
                        "would be fewer than --min-ranks 2: keeping 2")  # fmt: skip
    assert lines[-1] == "starting 2 ranks again from the last complete checkpoint (step 5)"
    assert policy.after_failure(137, KILLED, None) == (False, [
        "rank 1 (PID 77) was killed by signal 9 (SIGKILL) at step 7; not restarting (all 2 "
        "restarts used)"
    ])  # fmt: skip


def test_a_slot_that_keeps_failing_is_dropped_down_to_min_ranks():
    policy = RestartPolicy(4, max_restarts=5, min_ranks=3)
    policy.after_failure(137, (2, "rank 2 died"), None)
    _, lines = policy.after_failure(137, (2, "rank 2 died"), None)
    assert lines[1] == ("slot 2 (rank 2) has had 2 failures (--slot-failures 2): counting it "
                        "gone; the job shrinks to 3 ranks (--min-ranks 3)")  # fmt: skip
    assert lines[2] == "starting 3 ranks again (no complete checkpoint was recorded)"
    assert (policy.ranks, policy.slots) == (3, [0, 1, 3])
    # rank 2 now runs in slot 3: its failures are slot 3's
    policy.after_failure(137, (2, "rank 2 died"), None)
    _, lines = policy.after_failure(137, (2, "rank 2 died"), None)
    assert "but 2 ranks would be fewer than --min-ranks 3: keeping 3" in lines[1]
    assert policy.slots == [0, 1, 3] and policy.failures == {2: 2, 3: 2}


def test_without_restarts_a_failure_adds_no_line():
    assert RestartPolicy(2).after_failure(1, None, None) == (False, [])


@pytest.mark.parametrize(("options", "message"), [
    ({"max_restarts": -1}, "--max-restarts must be >= 0, got -1"),
    ({"min_ranks": 3}, "--min-ranks must be between 1 and -n (2), got 3"),
    ({"min_ranks": 0}, "--min-ranks must be between 1 and -n (2), got 0"),
    ({"slot_failures": 0}, "--slot-failures must be >= 1, got 0"),
])  # fmt: skip
def test_bad_restart_options_are_refused(options, message):
    with pytest.raises(DistributedError, match=message.replace("(", r"\(").replace(")", r"\)")):
        RestartPolicy(2, **options)


def test_the_cli_passes_the_restart_options(monkeypatch):
    from buildingai import cli

    seen = {}
    monkeypatch.setattr("buildingai.distributed.launch.launch",
                        lambda *args, **options: seen.update(options) or 0)  # fmt: skip
    command = ["launch", "--max-restarts", "3", "--min-ranks", "2", "-n", "4", "train.py"]
    assert cli.main(command) == 0
    assert (seen["max_restarts"], seen["min_ranks"], seen["slot_failures"]) == (3, 2, 2)


def test_a_bad_restart_option_is_one_line_from_the_cli(tmp_path, capsys):
    from buildingai import cli

    script = tmp_path / "train.py"
    script.write_text("")
    assert cli.main(["launch", "--min-ranks", "5", "-n", "2", str(script)]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "--min-ranks must be between 1 and -n (2), got 5" in error

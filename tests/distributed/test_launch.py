"""The launcher's command line and its one-line errors (no MPI needed)."""

import sys

import pytest

from buildingai import cli
from buildingai.distributed import DistributedError, _rank_status
from buildingai.distributed import launch as launching


def test_without_any_mpiexec_the_error_names_the_extra(monkeypatch, tmp_path, capsys):
    monkeypatch.delenv("BUILDINGAI_MPIEXEC", raising=False)
    monkeypatch.setattr(launching.sys, "executable", str(tmp_path / "python"))
    monkeypatch.setenv("PATH", str(tmp_path))
    script = tmp_path / "train.py"
    script.write_text("print('hi')\n")
    assert cli.main(["launch", "-n", "2", str(script)]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1
    assert "no mpiexec found" in error and "pip install 'buildingai[mpi]'" in error


def _fake_mpiexec_and_script(monkeypatch, tmp_path):
    """An executable stand-in for mpiexec, named by BUILDINGAI_MPIEXEC, and an empty training
    script beside it: (mpiexec path, script path)."""
    fake = tmp_path / "mpiexec"
    fake.write_text("#!/bin/sh\n")
    fake.chmod(0o755)
    monkeypatch.setenv("BUILDINGAI_MPIEXEC", str(fake))
    script = tmp_path / "train.py"
    script.write_text("")
    return fake, script


def test_the_command_runs_each_rank_through_the_runner(monkeypatch, tmp_path):
    fake, script = _fake_mpiexec_and_script(monkeypatch, tmp_path)
    command = launching.launch_command(4, str(script), ["--lr", "0.1"], hostfile="hosts",
                                       auto_cleanup=False)  # fmt: skip
    assert command == [str(fake), "-n", "4", "-hostfile", "hosts", "-disable-auto-cleanup",
                       sys.executable, "-m", "buildingai.distributed.run", str(script), "--lr",
                       "0.1"]  # fmt: skip


def test_bad_counts_and_missing_scripts_are_refused(tmp_path):
    with pytest.raises(DistributedError, match="-n must be at least 1"):
        launching.launch_command(0, "x.py", [])
    with pytest.raises(DistributedError, match="no script"):
        launching.launch_command(2, str(tmp_path / "missing.py"), [])


def test_script_arguments_pass_through_the_cli():
    args = cli.build_parser().parse_args(["launch", "-n", "3", "train.py", "--epochs", "2", "-n"])
    assert (args.n, args.script, args.args) == (3, "train.py", ["--epochs", "2", "-n"])


def test_launched_ranks_start_through_the_supervisor(monkeypatch, tmp_path):
    _, script = _fake_mpiexec_and_script(monkeypatch, tmp_path)
    command = launching.launch_command(2, str(script), ["-x"], supervised=True)
    assert command[3:] == [sys.executable, _rank_status.__file__, str(script), "-x"]


def _status(folder, rank, pid, how=0, value=0, reason="", collective="", inside=False):
    status = _rank_status.RankStatus.create(str(folder / f"rank{rank}"))
    status.started(pid)
    if collective:
        status.entered(collective)
        if not inside:
            status.left()
    if reason:
        status.failing(reason)
    if how:
        status.ended(how, value)


def test_each_rank_that_ended_abnormally_gets_one_line(tmp_path):
    status = _rank_status
    _status(tmp_path, 0, 100, collective="all_reduce #1 at a.py:3", inside=True)
    _status(tmp_path, 1, 101, status.SIGNALLED, 9, collective="all_reduce #0 at a.py:2")
    _status(tmp_path, 2, 102, status.EXITED, 0, status.FINISHED, "barrier #4 at a.py:9")
    _status(tmp_path, 3, 103, status.EXITED, 3, "sys.exit(3)")
    assert status.failure_lines(str(tmp_path), 5) == [
        "rank 1 (PID 101) was killed by signal 9 (SIGKILL); last collective entered: "
        "all_reduce #0 at a.py:2 (completed)",
        "rank 3 (PID 103) exited with code 3 after sys.exit(3); it entered no collective",
        "rank 0 (PID 100) was ended without an exit status (mpiexec's cleanup after another rank "
        "failed, or a SIGKILL from outside); last collective entered: all_reduce #1 at a.py:3 "
        "(still inside it)",
        "rank 4: no status (never started, or ran on another host, where this launcher cannot see)",
    ]


def test_a_rank_that_exits_0_before_its_script_ends_is_named(tmp_path):
    _status(tmp_path, 0, 100, _rank_status.EXITED, 0, _rank_status.FINISHED)
    _status(tmp_path, 1, 101, _rank_status.EXITED, 0)
    assert _rank_status.failure_lines(str(tmp_path), 2) == [
        "rank 1 (PID 101) exited with code 0 before its script finished; it entered no collective"
    ]

"""The launcher's command line and its one-line errors (no MPI needed)."""

import sys

import pytest

from buildingai import cli
from buildingai.distributed import DistributedError
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


def test_the_command_runs_each_rank_through_the_runner(monkeypatch, tmp_path):
    fake = tmp_path / "mpiexec"
    fake.write_text("#!/bin/sh\n")
    fake.chmod(0o755)
    monkeypatch.setenv("BUILDINGAI_MPIEXEC", str(fake))
    script = tmp_path / "train.py"
    script.write_text("")
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

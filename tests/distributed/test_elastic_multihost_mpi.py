"""The multi-host recipe of docs/site/guides/distributed.md, run as written on two "hosts" of this
machine: a hostfile naming the loopback addresses 127.0.0.1 and 127.0.0.2.

MPICH's Hydra starts one proxy per host, reaching every host but its own through ssh. No sshd
runs here, so ``HYDRA_LAUNCHER_EXEC`` points at a stand-in for ssh that runs the proxy's command
on this machine and notes the host it was asked for; ``MPIR_CVAR_NOLOCAL=1`` makes MPICH treat
the other rank as remote (no shared memory between the "hosts"). Everything else (the hostfile,
the per-host proxies, the control connection back to mpiexec, the commands) is the recipe's.
Skips when 127.0.0.2 cannot be bound or the mpiexec is not Hydra's."""

import os
import socket
import subprocess
import sys

import pytest

from .launcher import JOBS, ROOT, require_mpi

pytestmark = [pytest.mark.mpi, pytest.mark.slow]

SSH_STAND_IN = """#!/bin/sh
# ssh's stand-in: skip ssh's options, note the host, run the command here
while [ $# -gt 0 ]; do
  case "$1" in
    -*) shift ;;
    *) echo "$1" >> "{log}"; shift; break ;;
  esac
done
exec sh -c "$*"
"""


def hydra_mpiexec() -> str:
    require_mpi()
    from buildingai.distributed.launch import find_mpiexec

    mpiexec = find_mpiexec()
    version = subprocess.run([mpiexec, "--version"], capture_output=True, text=True, timeout=20)
    if "HYDRA" not in version.stdout:
        pytest.skip(f"{mpiexec} is not MPICH's Hydra (the check stands in for its ssh launcher)")
    return mpiexec


def second_loopback_address() -> None:
    try:
        with socket.socket() as probe:
            probe.bind(("127.0.0.2", 0))
    except OSError as error:
        pytest.skip(f"127.0.0.2 cannot be bound here ({error})")


@pytest.fixture
def two_hosts(tmp_path):
    """(hostfile, environment, log of the hosts reached through "ssh")."""
    second_loopback_address()
    hostfile = tmp_path / "hosts"
    hostfile.write_text("127.0.0.1:1\n127.0.0.2:1\n")  # one slot on each "host"
    log = tmp_path / "ssh.log"
    ssh = tmp_path / "ssh"
    ssh.write_text(SSH_STAND_IN.format(log=log))
    ssh.chmod(0o755)
    environment = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1",
                       HYDRA_LAUNCHER_EXEC=str(ssh), MPIR_CVAR_NOLOCAL="1")  # fmt: skip
    return hostfile, environment, log


def recipe(mpiexec: str, hostfile, script) -> dict:
    """The guide's two commands, with the hostfile and script of this test."""
    return {
        "buildingai launch": [sys.executable, "-m", "buildingai", "launch", "-n", "2",
                              "--hostfile", str(hostfile), "--timeout", "60", str(script)],
        "mpiexec": [mpiexec, "-n", "2", "-f", str(hostfile), sys.executable, "-m",
                    "buildingai.distributed.run", str(script)],
    }  # fmt: skip


@pytest.mark.parametrize("command", ["buildingai launch", "mpiexec"])
def test_the_hostfile_recipe_trains_across_two_loopback_hosts(two_hosts, command):
    hostfile, environment, log = two_hosts
    line = recipe(hydra_mpiexec(), hostfile, JOBS / "train.py")[command]
    done = subprocess.run(line, capture_output=True, text=True, timeout=90, env=environment,
                          cwd=ROOT)  # fmt: skip
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    for rank in (0, 1):
        assert f"rank {rank}/2: training ok" in output, output
    assert log.read_text().split() == ["127.0.0.2"]  # rank 1's proxy went to the other "host"

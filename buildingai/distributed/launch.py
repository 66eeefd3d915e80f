"""``buildingai launch -n N script.py [args]``: start N ranks of a script under ``mpiexec``.

It uses the ``mpiexec`` of the mpich wheel installed next to this Python (the ``mpi`` extra), else
``$BUILDINGAI_MPIEXEC``, else the first on PATH. Each rank runs ``buildingai.distributed.run``,
which aborts the job when the script fails, so the launcher exits non-zero and no rank is left.
A small supervisor (``_rank_status.py``) starts each rank and records how it ended; after the
job the launcher prints one line per rank that ended abnormally (rank, PID, exit code or signal,
the last collective it entered), however it ended.

With ``--max-restarts K`` a failed job is started again from the script's last complete
checkpoint (``elastic.py``), on fewer ranks down to ``--min-ranks`` once a slot counts as gone
(``_restarts.py``); every restart is one line naming its cause.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from . import _rank_status
from ._restarts import MAX_RESTARTS_VARIABLE, RESTART_VARIABLE, RestartPolicy
from .errors import DistributedError


def find_mpiexec() -> str:
    """The path of the ``mpiexec`` to use, or a one-line error naming the extra to install."""
    chosen = os.environ.get("BUILDINGAI_MPIEXEC")
    if chosen:
        if shutil.which(chosen) is None:
            raise DistributedError(f"BUILDINGAI_MPIEXEC={chosen} is not an executable")
        return shutil.which(chosen)
    bundled = Path(sys.executable).parent / "mpiexec"
    if bundled.is_file() and os.access(bundled, os.X_OK):
        return str(bundled)
    found = shutil.which("mpiexec") or shutil.which("mpirun")
    if found is None:
        raise DistributedError(
            "no mpiexec found (next to this Python, in $BUILDINGAI_MPIEXEC, or on PATH)",
            help="pip install 'buildingai[mpi]' (mpi4py and the mpich wheel, which brings mpiexec)",
        )
    return found


def launch_command(processes: int, script: str, args: list[str], hostfile: str | None = None,
                   auto_cleanup: bool = True, supervised: bool = False) -> list[str]:  # fmt: skip
    """The ``mpiexec`` command line that runs ``script`` on ``processes`` ranks; ``supervised``
    starts each rank through the supervisor that records how it ended."""
    if processes < 1:
        raise DistributedError(f"[launch] -n must be at least 1, got {processes}")
    if not Path(script).is_file():
        raise DistributedError(f"[launch] no script {script}", help="give the path of a .py file")
    command = [find_mpiexec(), "-n", str(processes)]
    if hostfile:
        command += ["-hostfile", hostfile]
    if not auto_cleanup:
        command.append("-disable-auto-cleanup")  # MPICH's Hydra: survivors report, then abort
    if supervised:
        return command + [sys.executable, _rank_status.__file__, script, *args]
    return command + [sys.executable, "-m", "buildingai.distributed.run", script, *args]


def launch(processes: int, script: str, args: list[str], hostfile: str | None = None,
           auto_cleanup: bool = True, timeout: float | None = None,
           threads_per_rank: int | None = None, max_restarts: int = 0,
           min_ranks: int | None = None, slot_failures: int = 2) -> int:  # fmt: skip
    """Run the job and return its exit code (non-zero when any rank failed).

    Each rank gets ``threads_per_rank`` BLAS/OpenMP threads (default: the CPUs divided among the
    ranks) unless OMP_NUM_THREADS is already set. With ``timeout`` seconds, the whole job (every
    restart included) is killed when it runs longer, and the exit code is 124. Afterwards, one
    line on stderr per rank that ended abnormally names its rank, PID, exit code or signal, step
    and last collective.

    With ``max_restarts`` K, a failed job starts again, up to K times, with the restart count in
    ``$BUILDINGAI_RESTART``; the script resumes from its last complete checkpoint
    (``buildingai.distributed.elastic``). A slot that failed ``slot_failures`` times is counted
    gone and the job shrinks by one rank, down to ``min_ranks`` (default: never shrink).
    """
    policy = RestartPolicy(processes, max_restarts, min_ranks, slot_failures)
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        folder = tempfile.mkdtemp(prefix="buildingai-launch-")
        try:
            command = launch_command(policy.ranks, script, args, hostfile, auto_cleanup,
                                     supervised=True)  # fmt: skip
            restart = {RESTART_VARIABLE: str(policy.restarts),
                       MAX_RESTARTS_VARIABLE: str(max_restarts)}  # fmt: skip
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            code = _run_job(command, policy.ranks, folder, left, threads_per_rank, restart,
                            timeout)  # fmt: skip
            for line in _rank_status.failure_lines(folder, policy.ranks):
                print(f"buildingai launch: {line}", file=sys.stderr)
            if code == 0 or code in (124, 130):  # done, past --timeout, or interrupted
                if code == 0 and policy.restarts:
                    times = "once" if policy.restarts == 1 else f"{policy.restarts} times"
                    print(f"buildingai launch: the job finished after restarting {times}, on "
                          f"{policy.ranks} rank{'s' if policy.ranks > 1 else ''}",
                          file=sys.stderr)  # fmt: skip
                return code
            cause = _rank_status.first_failure(folder, policy.ranks)
            checkpoint = _rank_status.last_checkpoint(folder, policy.ranks)
            again, lines = policy.after_failure(code, cause, checkpoint)
            for line in lines:
                print(f"buildingai launch: {line}", file=sys.stderr)
            if not again:
                return code
        finally:
            shutil.rmtree(folder, ignore_errors=True)


def _run_job(command: list[str], processes: int, folder: str, timeout: float | None,
             threads_per_rank: int | None, extra: dict | None = None,
             whole: float | None = None) -> int:  # fmt: skip
    environment = dict(os.environ, **{_rank_status.FOLDER_VARIABLE: folder}, **(extra or {}))
    if "OMP_NUM_THREADS" not in environment:
        threads = threads_per_rank or max(1, (os.cpu_count() or 1) // processes)
        for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
            environment.setdefault(name, str(threads))
    job = subprocess.Popen(command, env=environment, start_new_session=True)
    try:
        return job.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        limit = whole if whole is not None else timeout
        print(f"buildingai launch: the job ran past {limit:g} s; killing it", file=sys.stderr)
        _kill(job)
        return 124
    except KeyboardInterrupt:
        _kill(job)
        return 130


def _kill(job: subprocess.Popen) -> None:
    """End mpiexec and every rank it started (they share its new session)."""
    for sent in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(job.pid, sent)
        except ProcessLookupError:
            return
        try:
            job.wait(timeout=3)
            return
        except subprocess.TimeoutExpired:
            continue

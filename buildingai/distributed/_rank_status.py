"""How ``buildingai launch`` names a rank that ended abnormally: each rank's status file.

``buildingai launch`` makes a folder and starts every rank through this file run as a script
(``python _rank_status.py script.py args``): a small supervisor that forks, execs the rank
(``python -m buildingai.distributed.run script.py args``) in the child and waits for it, so it
learns the rank's exit code or signal even when the rank vanished with ``os._exit`` or SIGKILL.
The rank writes its PID, the collective it last entered and why it is failing into a shared
memory map of ``<folder>/rank<N>``; the supervisor adds how it ended, and after the job the
launcher prints one line per rank that ended abnormally (``failure_lines``).

The status file (``SIZE`` bytes) holds: PID, the collective's state (0 none, 1 inside, 2 left),
how the rank ended (0 not recorded, 1 exit code, 2 signal) and the code or signal, when it ended,
the training step the rank last recorded and the last complete checkpoint's step (each stored
plus one: 0 means none recorded), then two NUL-padded texts: why it failed (an exception's name)
and the collective it last entered.
Only the standard library is used here: the supervisor imports nothing else before it forks.
"""

from __future__ import annotations

import contextlib
import mmap
import os
import signal
import struct
import sys
import time

FOLDER_VARIABLE = "BUILDINGAI_LAUNCH_STATUS"  # the launcher's folder, for the supervisors
FILE_VARIABLE = "BUILDINGAI_RANK_STATUS"  # this rank's status file, for the rank itself
_RANK_VARIABLES = ("PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "SLURM_PROCID")
# pid, collective state, ended how, code or signal, ended at, step + 1, checkpoint's step + 1
_HEAD = struct.Struct("<qqqqdqq")
_REASON = slice(_HEAD.size, _HEAD.size + 96)
_COLLECTIVE = slice(_REASON.stop, _REASON.stop + 360)
SIZE = _COLLECTIVE.stop
INSIDE, LEFT = 1, 2
EXITED, SIGNALLED = 1, 2
FINISHED = "its script finished"  # the reason run.py records when the script returned


class RankStatus:
    """One rank's status file, mapped into memory: writes are plain memory stores (a collective
    pays about a microsecond), and they survive the process however it ends."""

    def __init__(self, path: str) -> None:
        self.path = path
        with open(path, "r+b") as file:
            self.memory = mmap.mmap(file.fileno(), SIZE)

    @classmethod
    def create(cls, path: str) -> RankStatus:
        with open(path, "wb") as file:
            file.write(bytes(SIZE))
        return cls(path)

    def started(self, pid: int) -> None:
        struct.pack_into("<q", self.memory, 0, pid)

    def entered(self, description: str) -> None:
        """The rank entered a collective (``all_reduce #3 (shape (4,), float32) at x.py:9``)."""
        self.memory[_COLLECTIVE] = _padded(description, _COLLECTIVE)
        struct.pack_into("<q", self.memory, 8, INSIDE)

    def left(self) -> None:
        """The collective last entered completed."""
        struct.pack_into("<q", self.memory, 8, LEFT)

    def failing(self, reason: str) -> None:
        """Why the rank is about to end (``raising ValueError``, ``sys.exit(3)``, or
        ``FINISHED``). Its time stands for when the rank ended until ``ended`` records that: a
        rank that aborts the job may lose its supervisor before the supervisor records it."""
        self.memory[_REASON] = _padded(reason, _REASON)
        struct.pack_into("<d", self.memory, 32, time.time())

    def ended(self, how: int, value: int) -> None:
        struct.pack_into("<qqd", self.memory, 16, how, value, time.time())

    def at_step(self, step: int) -> None:
        """The rank is working on training step ``step`` (named if it dies there)."""
        struct.pack_into("<q", self.memory, 40, step + 1)

    def checkpointed(self, step: int) -> None:
        """A complete checkpoint of step ``step`` is on disk (a restart resumes from it)."""
        struct.pack_into("<q", self.memory, 48, step + 1)


def _padded(text: str, field: slice) -> bytes:
    size = field.stop - field.start
    data = text.encode("utf-8", "replace")
    if len(data) > size:
        data = b"..." + data[-(size - 3) :]  # keep the end: the file name and line of a path
    return data.ljust(size, b"\0")


def _text(data: bytes) -> str:
    return data.rstrip(b"\0").decode("utf-8", "replace")


def read(path: str) -> dict | None:
    """The status file as a dict, or None when it is missing or short."""
    try:
        with open(path, "rb") as file:
            data = file.read(SIZE)
    except OSError:
        return None
    if len(data) < SIZE:
        return None
    pid, state, how, value, ended_at, step, checkpoint = _HEAD.unpack_from(data)
    return {"pid": pid, "state": state, "how": how, "value": value, "ended_at": ended_at,
            "step": step - 1 if step else None, "checkpoint": checkpoint - 1 if checkpoint else None,
            "reason": _text(data[_REASON]), "collective": _text(data[_COLLECTIVE])}  # fmt: skip


# ----- the launcher's report -----------------------------------------------------------------------
def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _how_it_ended(status: dict) -> str | None:
    """``exited with code 9``, ``was killed by signal 9 (SIGKILL) at step 7``, ...; None for a
    clean exit. The step is the training step the rank last recorded, when it recorded one."""
    finished = status["reason"] == FINISHED
    reason = f" after {status['reason']}" if status["reason"] and not finished else ""
    at = f" at step {status['step']}" if status["step"] is not None else ""
    if status["how"] == EXITED:
        if status["value"] == 0:
            return None if finished else f"exited with code 0{at} before its script finished"
        return f"exited with code {status['value']}{at}{reason}"
    if status["how"] == SIGNALLED:
        number = status["value"]
        return f"was killed by signal {number} ({_signal_name(number)}){at}{reason}"
    if reason:
        return f"ended{reason}{at}, which aborts the whole job (its traceback is above)"
    return (
        f"was ended{at} without an exit status (mpiexec's cleanup after another rank failed, or "
        "a SIGKILL from outside)"
    )


def _where(status: dict) -> str:
    if not status["collective"]:
        return "it entered no collective"
    state = "still inside it" if status["state"] == INSIDE else "completed"
    return f"last collective entered: {status['collective']} ({state})"


def _abnormal_ends(folder: str, processes: int) -> tuple[list, list[int]]:
    """``([(order, rank, status, how it ended)], ranks without a status)``, first to end first."""
    found, missing = [], []
    for rank in range(processes):
        status = read(os.path.join(folder, f"rank{rank}"))
        if status is None:
            missing.append(rank)
            continue
        ended = _how_it_ended(status)
        if ended is not None:
            order = status["ended_at"] or float("inf")
            found.append((order, rank, status, ended))
    found.sort(key=lambda item: (item[0], item[1]))
    return found, missing


def describe(rank: int, status: dict, ended: str) -> str:
    """``rank 1 (PID 77) was killed by signal 9 (SIGKILL) at step 7``."""
    pid = f"PID {status['pid']}" if status["pid"] else "PID unknown"
    return f"rank {rank} ({pid}) {ended}"


def first_failure(folder: str, processes: int) -> tuple[int, str] | None:
    """``(rank, description)`` of the rank that failed first, or None: the first to end with an
    exit status or a reason of its own (an exception, ``sys.exit``) recorded. The ranks that
    mpiexec's cleanup ended afterwards have neither."""
    found, _ = _abnormal_ends(folder, processes)
    for _, rank, status, ended in found:
        if status["how"] or status["reason"]:
            return rank, describe(rank, status, ended)
    return None


def last_checkpoint(folder: str, processes: int) -> int | None:
    """The step of the newest complete checkpoint any rank recorded, or None."""
    steps = [status["checkpoint"] for rank in range(processes)
             if (status := read(os.path.join(folder, f"rank{rank}"))) is not None
             and status["checkpoint"] is not None]  # fmt: skip
    return max(steps, default=None)


def failure_lines(folder: str, processes: int) -> list[str]:
    """One line per rank that ended abnormally, the first to end first: rank, PID, exit code or
    signal, the training step it recorded, and the last collective it entered. Ranks without a
    status file are named too."""
    found, missing = _abnormal_ends(folder, processes)
    lines = [f"{describe(rank, status, ended)}; {_where(status)}"
             for _, rank, status, ended in found]  # fmt: skip
    if missing and (lines or len(missing) < processes):
        ranks = ", ".join(str(rank) for rank in missing)
        lines.append(
            f"rank{'s' if len(missing) > 1 else ''} {ranks}: no status (never started, or ran "
            "on another host, where this launcher cannot see)"
        )
    return lines


# ----- the supervisor ------------------------------------------------------------------------------
def rank_from_environment() -> int | None:
    for name in _RANK_VARIABLES:
        value = os.environ.get(name, "")
        if value.isdigit():
            return int(value)
    return None


def _die_with_parent(parent: int) -> None:
    """Ask Linux to SIGKILL this process when its supervisor dies (mpiexec kills supervisors)."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
    if os.getppid() != parent:  # the supervisor died before the request took effect
        os._exit(1)


def supervise(rank_command: list[str]) -> int:
    """Run ``rank_command`` as a child, record how it ended and end the same way (a signal as
    exit code 128 + signal, so that mpiexec leaves the other ranks to report when asked to)."""
    folder, rank = os.environ.get(FOLDER_VARIABLE, ""), rank_from_environment()
    if not os.path.isdir(folder) or rank is None or not hasattr(os, "fork"):
        os.execv(rank_command[0], rank_command)  # no launcher folder here: run the rank as is
    path = os.path.join(folder, f"rank{rank}")
    status = RankStatus.create(path)
    parent = os.getpid()
    child = os.fork()
    if child == 0:
        _die_with_parent(parent)
        os.execve(rank_command[0], rank_command, dict(os.environ, **{FILE_VARIABLE: path}))
    status.started(child)

    def forward(number: int, frame) -> None:
        with contextlib.suppress(ProcessLookupError):  # it ended a moment ago: waitpid says how
            os.kill(child, number)

    for number in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2):
        signal.signal(number, forward)
    _, code = os.waitpid(child, 0)
    if os.WIFSIGNALED(code):
        status.ended(SIGNALLED, os.WTERMSIG(code))
        return 128 + os.WTERMSIG(code)
    status.ended(EXITED, os.WEXITSTATUS(code))
    return os.WEXITSTATUS(code)


if __name__ == "__main__":
    del sys.path[0]  # this folder: nothing here should shadow what the rank imports
    sys.exit(supervise([sys.executable, "-m", "buildingai.distributed.run", *sys.argv[1:]]))

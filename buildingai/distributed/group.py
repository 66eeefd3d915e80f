"""Process groups: who takes part in a collective, and the default (world) group.

``init_process_group`` picks the backend ("mpi" under a launcher, "local" for a plain ``python
script.py``), and a collective called before it initialises the world from the environment the
same way. ``new_group(ranks)`` makes a sub-group; every process must call it, in the same order.
"""

from __future__ import annotations

import collections
import datetime
import os
import sys
import threading
import time

from ._ledger import Ledger
from ._local import LocalBackend
from ._rank_status import FILE_VARIABLE, RankStatus
from .errors import CollectiveTimeoutError, DistributedError

DEFAULT_TIMEOUT = 300.0  # seconds; BUILDINGAI_DISTRIBUTED_TIMEOUT overrides it
# variables a launcher sets: mpiexec (MPICH/Hydra, Open MPI, Intel MPI) and Slurm's srun
_LAUNCHER_SIZE_VARIABLES = ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "PMIX_SIZE", "MPI_LOCALNRANKS",
                            "SLURM_NTASKS")  # fmt: skip


class ProcessGroup:
    """A set of processes that run collectives together.

    Attributes:
        ranks: the world ranks of the members, in group order.
        rank: this process's rank within the group (None when it is not a member).
        size: the number of members.
        timeout: seconds a collective may wait before it raises ``CollectiveTimeoutError``.
        debug: whether each collective is recorded in the group's ledger (every collective is
            checked against the other ranks' calls in any mode).
        status: this rank's status file under ``buildingai launch`` (the collective it last
            entered), else None.
    """

    def __init__(self, backend, ranks: list[int], timeout: float, debug: bool,
                 status: RankStatus | None = None) -> None:  # fmt: skip
        self.backend = backend
        self.ranks = ranks
        self.rank = None if backend is None else backend.rank
        self.size = len(ranks)
        self.timeout = timeout
        self.debug = debug
        self.ledger = Ledger()
        self.sequence = 0  # collectives started in this group, the same count on every member
        self.broken: str | None = None  # why the group cannot be used any more
        self.unstarted: collections.deque = collections.deque()  # Works waiting for their check
        self.abandoned: list = []  # Works that raised: MPI may still use their buffers
        self.status = status
        self.lock = threading.Lock()

    @property
    def backend_name(self) -> str:
        return "none" if self.backend is None else self.backend.name

    def __repr__(self) -> str:
        return f"ProcessGroup(backend={self.backend_name!r}, ranks={self.ranks}, rank={self.rank})"

    def group_rank(self, world_rank: int, collective: str, argument: str) -> int:
        """The group rank of ``world_rank`` (``src``/``dst`` are world ranks, as in PyTorch)."""
        if world_rank not in self.ranks:
            raise DistributedError(
                f"[{collective}] {argument}={world_rank} is not in the group (world ranks "
                f"{self.ranks})",
                help=f"pass the world rank of a member as {argument}",
            )
        return self.ranks.index(world_rank)

    def wait(self, pendings, collective: str, seq: int, opcode: int, detail: str) -> None:
        """Wait for a backend's requests, raising ``CollectiveTimeoutError`` at the deadline."""
        if pendings is None:
            return
        deadline = time.monotonic() + self.timeout
        grace = min(1.0, 0.25 * self.timeout)  # the last part of the wait asks the others why
        if self.backend.wait(pendings, deadline - grace, (seq, opcode)):
            return
        report = self.backend.describe_stall(seq, opcode, grace)
        if self.backend.wait(pendings, time.monotonic(), (seq, opcode)):
            return  # it completed while we asked
        world_rank = self.ranks[self.rank]
        self.broken = f"{collective} #{seq} timed out"
        last = self.ledger.last_line()
        raise CollectiveTimeoutError(
            f"[{collective}] rank {world_rank} waited {self.timeout:g} s for {collective} #{seq} "
            f"({detail}) in group {self.ranks}: {report}"
            + (f"; this rank's call: {last}" if last else ""),
            help="make every rank call the same collectives in the same order; a rank that "
            "crashed shows its own traceback (buildingai launch names a rank that vanished); "
            "raise timeout= in init_process_group if a rank is just slow",
        )


class _World:
    """The default group of this process (set by ``init_process_group``), and its status file."""

    group: ProcessGroup | None = None
    status: RankStatus | None = None


_WORLD = _World()


def rank_status() -> RankStatus | None:
    """This rank's status file when ``buildingai launch`` started it (opened once), else None."""
    path = os.environ.get(FILE_VARIABLE)
    if _WORLD.status is None and path and os.path.isfile(path):
        _WORLD.status = RankStatus(path)
    return _WORLD.status


def _launched_size() -> int:
    """The world size a launcher announced in the environment (1 when there is none)."""
    for name in _LAUNCHER_SIZE_VARIABLES:
        value = os.environ.get(name)
        if value and value.isdigit():
            return int(value)
    return 1


def _seconds(timeout) -> float:
    if timeout is None:
        return float(os.environ.get("BUILDINGAI_DISTRIBUTED_TIMEOUT", DEFAULT_TIMEOUT))
    if isinstance(timeout, datetime.timedelta):
        return timeout.total_seconds()
    seconds = float(timeout)
    if seconds <= 0:
        raise DistributedError(f"[init_process_group] timeout must be positive, got {timeout!r}")
    return seconds


def init_process_group(
    backend: str | None = None, timeout: float | datetime.timedelta | None = None,
    debug: bool | None = None,
) -> ProcessGroup:  # fmt: skip
    """Join the world group and return it.

    Args:
        backend: "mpi" (mpi4py; the default under a launcher), "nccl" (CuPy's NCCL, GPUs) or
            "local" (one process; the default for a plain ``python script.py``).
        timeout: seconds (or a timedelta) any collective may wait before raising
            ``CollectiveTimeoutError`` naming the missing rank; default 300 s or
            ``BUILDINGAI_DISTRIBUTED_TIMEOUT``.
        debug: keep a ledger of collectives (``buildingai.distributed.ledger()``); default
            from ``BUILDINGAI_DISTRIBUTED_DEBUG=1``. In every mode, each collective first checks
            that all ranks call it with the same op, shape, dtype and arguments, and raises
            ``CollectiveMismatchError`` on every rank, naming each rank's call, when they differ.

    Under MPI with more than one process, an exception that ends a rank's script aborts the
    whole job (MPI_Abort), so the other ranks never wait for it.
    """
    if _WORLD.group is not None:
        if backend is not None and backend != _WORLD.group.backend_name:
            raise DistributedError(
                f"[init_process_group] the process group is already initialised with backend "
                f"{_WORLD.group.backend_name!r}, not {backend!r}",
                help="call destroy_process_group() first to change the backend",
            )
        return _WORLD.group
    if backend is None:
        backend = "mpi" if _launched_size() > 1 else "local"
    seconds = _seconds(timeout)
    if debug is None:
        debug = os.environ.get("BUILDINGAI_DISTRIBUTED_DEBUG", "") not in ("", "0")
    if backend == "local":
        if _launched_size() > 1:
            raise DistributedError(
                f"[init_process_group] backend 'local' is one process, but the launcher started "
                f"{_launched_size()}",
                help="use backend='mpi' (the default under a launcher)",
            )
        engine = LocalBackend()
    elif backend == "mpi":
        from ._mpi import MPIBackend

        engine = MPIBackend()
        if engine.size > 1:
            _abort_on_uncaught_exception(engine)
    elif backend == "nccl":
        from ._nccl import NCCLBackend

        engine = NCCLBackend()
    else:
        raise DistributedError(
            f"[init_process_group] unknown backend {backend!r}",
            help="use 'mpi', 'nccl' or 'local'",
        )
    _WORLD.group = ProcessGroup(engine, list(range(engine.size)), seconds, bool(debug),
                                rank_status())  # fmt: skip
    return _WORLD.group


def _abort_on_uncaught_exception(engine) -> None:
    """Print a rank's uncaught exception, then end the whole job: the other ranks would otherwise
    wait in their next collective until the timeout."""
    previous = sys.excepthook

    def abort_job(kind, value, traceback) -> None:
        previous(kind, value, traceback)
        if rank_status() is not None:
            rank_status().failing(f"raising {kind.__name__}")
        sys.stdout.flush()
        sys.stderr.flush()
        engine.abort(1)

    sys.excepthook = abort_job


def default_group() -> ProcessGroup:
    """The world group, initialised from the environment when no one called
    ``init_process_group``."""
    return _WORLD.group if _WORLD.group is not None else init_process_group()


def is_initialized() -> bool:
    return _WORLD.group is not None


def destroy_process_group() -> None:
    """Forget the world group (a later collective initialises a new one)."""
    _WORLD.group = None


def get_rank(group: ProcessGroup | None = None) -> int:
    """This process's rank in ``group`` (the world by default); -1 when it is not a member."""
    group = group or default_group()
    return -1 if group.rank is None else group.rank


def get_world_size(group: ProcessGroup | None = None) -> int:
    return (group or default_group()).size


def get_backend(group: ProcessGroup | None = None) -> str:
    return (group or default_group()).backend_name


def new_group(ranks: list[int] | None = None, timeout=None, debug: bool | None = None):
    """A sub-group of the world over ``ranks`` (world ranks; all when None). Every process calls
    it, members or not; a non-member gets a group it cannot use (``get_rank`` gives -1)."""
    world = default_group()
    ranks = list(range(world.size)) if ranks is None else sorted(int(r) for r in ranks)
    outside = [r for r in ranks if not 0 <= r < world.size]
    if outside or len(set(ranks)) != len(ranks):
        raise DistributedError(
            f"[new_group] ranks {ranks} must be distinct world ranks in 0..{world.size - 1}"
        )
    engine = world.backend.split(ranks)
    return ProcessGroup(
        engine, ranks, world.timeout if timeout is None else _seconds(timeout),
        world.debug if debug is None else debug, world.status,
    )  # fmt: skip

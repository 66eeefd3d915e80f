"""The ``mpi`` backend: MPI through mpi4py, on a tensor's NumPy memory (no pickling, no copies on
the fast path). Every operation is nonblocking (``Iallreduce``, ``Ibcast``, ...) and polled
against a deadline, so a rank that died or stopped calling collectives is reported, never waited
for forever. While it waits, a rank answers the others' "where are you?" probes on a duplicate
communicator, which is how a timeout names the rank that is missing and where the others wait.
"""

from __future__ import annotations

import os
import time

import numpy as np

from ._ledger import OPS
from .errors import DistributedError

_PROBE_TAG, _ANSWER_TAG = 32101, 32102


def import_mpi():
    """``mpi4py.MPI``, or a one-line error naming the extra to install."""
    try:
        from mpi4py import MPI
    except ImportError as error:
        raise DistributedError(
            "the 'mpi' backend needs mpi4py, which is not installed",
            help="pip install 'buildingai[mpi]' (mpi4py and the mpich wheel)",
        ) from error
    return MPI


class MPIBackend:
    """One MPI communicator: the world, or a sub-group made by ``split``."""

    name = "mpi"

    def __init__(self, comm=None) -> None:
        self.MPI = MPI = import_mpi()
        self.comm = MPI.COMM_WORLD if comm is None else comm
        self.control = self.comm.Dup()  # probes travel here, never mixed with user messages
        self.checks = self.comm.Dup()  # call fingerprints and send headers, in call order
        self.rank, self.size = self.comm.Get_rank(), self.comm.Get_size()
        self.ops = {"sum": MPI.SUM, "max": MPI.MAX, "min": MPI.MIN, "prod": MPI.PROD,
                    "lor": MPI.LOR, "land": MPI.LAND}  # fmt: skip
        self.native_float16 = _reduces_float16(MPI)
        self.where = (-1, -1)  # (sequence number, op index) of the wait in progress

    # ----- operations: each returns the MPI requests to wait for ---------------------------------
    def allreduce(self, array: np.ndarray, op: str):
        return [self.comm.Iallreduce(self.MPI.IN_PLACE, array, op=self.ops[op])]

    def broadcast(self, array: np.ndarray, root: int):
        return [self.comm.Ibcast(array, root=root)]

    def allgather(self, send: np.ndarray, recv: np.ndarray):
        return [self.comm.Iallgather(send, recv)]

    def reduce_scatter(self, send: np.ndarray, recv: np.ndarray, op: str):
        return [self.comm.Ireduce_scatter_block(send, recv, op=self.ops[op])]

    def gather(self, send: np.ndarray, recv: np.ndarray | None, root: int):
        return [self.comm.Igather(send, recv, root=root)]

    def scatter(self, send: np.ndarray | None, recv: np.ndarray, root: int):
        return [self.comm.Iscatter(send, recv, root=root)]

    def send(self, array: np.ndarray, peer: int, tag: int):
        return [self.comm.Isend(array, dest=peer, tag=tag)]

    def recv(self, array: np.ndarray, peer: int, tag: int):
        return [self.comm.Irecv(array, source=peer, tag=tag)]

    def barrier(self):
        return [self.comm.Ibarrier()]

    # ----- the checks that come before the data ------------------------------------------------
    def agree(self, pair: np.ndarray):
        """Start the maximum over the ranks of ``pair`` = (fingerprint, -fingerprint), in place:
        every rank called the same way when the result is (fingerprint, -fingerprint) again."""
        return [self.checks.Iallreduce(self.MPI.IN_PLACE, pair, op=self.MPI.MAX)]

    def send_header(self, header: np.ndarray, peer: int, tag: int):
        return [self.checks.Isend(header, dest=peer, tag=tag)]

    def recv_header(self, header: np.ndarray, peer: int, tag: int):
        return [self.checks.Irecv(header, source=peer, tag=tag)]

    def allgather_object(self, value) -> list:
        """Every rank's ``value`` (pickled; only for small reports, after all ranks arrived)."""
        return self.control.allgather(value)

    def test(self, requests: list) -> bool:
        return self.MPI.Request.Testall(requests)

    def split(self, ranks: list[int]) -> MPIBackend | None:
        """A backend over ``ranks`` (ranks of this group); every rank of this group must call it."""
        member = self.rank in ranks
        color = 0 if member else self.MPI.UNDEFINED
        comm = self.comm.Split(color, ranks.index(self.rank) if member else 0)
        return MPIBackend(comm) if member else None

    # ----- waiting against a deadline ------------------------------------------------------------
    def wait(self, requests: list, deadline: float, where: tuple[int, int] = (-1, -1)) -> bool:
        """Poll ``requests`` until all complete (True) or ``deadline`` passes (False). It spins,
        yielding the core to any other runnable process, for as long as a large message takes,
        then sleeps a little between polls; it answers other ranks' probes every 50 ms."""
        testall = self.MPI.Request.Testall
        if testall(requests):
            return True
        self.where = where
        started = time.monotonic()
        next_answer = started + 0.05
        pause = 0.0
        polls = 0
        while not testall(requests):
            polls += 1
            if polls % 64:
                continue
            os.sched_yield()  # a rank sharing this core progresses the other side
            now = time.monotonic()
            if now > deadline:
                return False
            if now - started > 0.1:  # a straggler, not a transfer: stop burning a core
                pause = min(1e-3, pause + 1e-5)
                time.sleep(pause)
            if now > next_answer:
                self.answer_probes()
                next_answer = now + 0.05
        self.where = (-1, -1)
        return True

    def answer_probes(self) -> None:
        """Tell every rank that asked where this rank waits: (sequence number, op index)."""
        status = self.MPI.Status()
        while self.control.Iprobe(source=self.MPI.ANY_SOURCE, tag=_PROBE_TAG, status=status):
            question = np.empty(2, np.int64)
            self.control.Recv(question, source=status.Get_source(), tag=_PROBE_TAG)
            answer = np.array(self.where, np.int64)
            self.control.Isend(answer, dest=status.Get_source(), tag=_ANSWER_TAG)

    def describe_stall(self, seq: int, opcode: int, grace: float) -> str:
        """Ask every other rank where it waits, for ``grace`` seconds; one line per rank that is
        not in this same collective (the likely culprits)."""
        self.where = (seq, opcode)
        peers = [peer for peer in range(self.size) if peer != self.rank]
        question = np.array([seq, opcode], np.int64)
        answers = {peer: np.full(2, -2, np.int64) for peer in peers}
        sends = [self.control.Isend(question, dest=peer, tag=_PROBE_TAG) for peer in peers]
        receives = {
            peer: self.control.Irecv(answers[peer], source=peer, tag=_ANSWER_TAG) for peer in peers
        }
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline and not all(r.Test() for r in receives.values()):
            self.answer_probes()
            time.sleep(0.005)
        lines = []
        for peer in peers:
            if not receives[peer].Test():
                lines.append(
                    f"rank {peer} did not answer within {grace:.1f} s: it died, or it stopped "
                    "calling collectives (busy elsewhere, or waiting outside BuildingAI)"
                )
                continue
            peer_seq, peer_op = (int(v) for v in answers[peer])
            if peer_seq < 0:
                lines.append(f"rank {peer} is alive but not inside a collective")
            elif (peer_seq, peer_op) != (seq, opcode):
                lines.append(f"rank {peer} waits in {OPS[peer_op]} #{peer_seq} instead")
        del sends  # never completed on purpose: the group is broken after a timeout
        return "; ".join(lines) or "every rank answered from this same collective"

    def abort(self, code: int = 1) -> None:
        """End every process of the job (MPI_Abort): the launcher then exits with ``code``."""
        self.MPI.COMM_WORLD.Abort(code)


def _reduces_float16(MPI) -> bool:
    """Whether this MPI can sum float16 itself (MPICH can); otherwise sums go through float32."""
    try:
        values = np.ones(1, np.float16)
        MPI.COMM_SELF.Allreduce(MPI.IN_PLACE, values, op=MPI.SUM)
        return bool(values[0] == 1)
    except Exception:
        return False

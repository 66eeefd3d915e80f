"""The ``local`` backend: one process, world size 1. Every collective completes at once: the
result of combining one rank's values is those values."""

from __future__ import annotations

import numpy as np

from .errors import DistributedError


class LocalBackend:
    """A group of one process (rank 0). Nothing is imported beyond NumPy."""

    name = "local"
    rank, size = 0, 1
    native_float16 = True

    def allreduce(self, array: np.ndarray, op: str):
        return None

    def broadcast(self, array: np.ndarray, root: int):
        return None

    def allgather(self, send: np.ndarray, recv: np.ndarray):
        recv.reshape(send.shape)[...] = send
        return None

    def reduce_scatter(self, send: np.ndarray, recv: np.ndarray, op: str):
        recv[...] = send.reshape(recv.shape)
        return None

    def gather(self, send: np.ndarray, recv: np.ndarray | None, root: int):
        recv.reshape(send.shape)[...] = send
        return None

    def scatter(self, send: np.ndarray | None, recv: np.ndarray, root: int):
        recv[...] = send.reshape(recv.shape)
        return None

    def send(self, array: np.ndarray, peer: int, tag: int):
        raise DistributedError(
            f"[send] rank 0 cannot send to rank {peer}: the world has 1 process",
            help="launch several processes: buildingai launch -n 2 script.py",
        )

    recv = send_header = recv_header = send

    def barrier(self):
        return None

    def wait(self, pendings: list, deadline: float, where: tuple = (-1, -1)) -> bool:
        return True

    def test(self, pendings) -> bool:
        return True

    def split(self, ranks: list[int]) -> LocalBackend | None:
        return self if 0 in ranks else None

    def describe_stall(self, seq: int, opcode: int, grace: float) -> str:
        return ""

    def abort(self, code: int = 1) -> None:
        pass

    def allgather_object(self, value) -> list:
        return [value]

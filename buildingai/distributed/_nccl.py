"""The ``nccl`` backend: NCCL through CuPy, on the tensors' GPU memory, with the interface of the
MPI backend. MPI (mpi4py) starts it: rank 0 makes the NCCL id and broadcasts it. Each operation
runs on the current stream and records an event; waiting polls the event against the deadline
and aborts the communicator when it passes. Small host arrays (the fingerprints checked before each
collective, send headers) and object exchanges travel over MPI."""

from __future__ import annotations

import os
import time

import numpy as np

from ..errors import DeviceError, DTypeError
from .errors import DistributedError

_LOCAL_RANK_VARIABLES = ("MPI_LOCALRANKID", "OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID",
                         "LOCAL_RANK")  # fmt: skip


def _import_nccl():
    try:
        import cupy
        from cupy.cuda import nccl
    except ImportError as error:
        raise DistributedError(
            "the 'nccl' backend needs CuPy with NCCL, which is not installed",
            help="pip install cupy-cuda12x (and 'buildingai[mpi]' to start several processes)",
        ) from error
    if not nccl.available:
        raise DistributedError("this CuPy was built without NCCL", help="pip install cupy-cuda12x")
    return cupy, nccl


class NCCLBackend:
    """One NCCL communicator over the ranks of an MPI communicator (the world by default)."""

    name = "nccl"
    native_float16 = True

    def __init__(self, bootstrap=None) -> None:
        self.cupy, self.nccl = cupy, nccl = _import_nccl()
        if bootstrap is None:
            from ._mpi import MPIBackend

            bootstrap = MPIBackend()
        self.bootstrap = bootstrap
        self.rank, self.size = bootstrap.rank, bootstrap.size
        local_rank = next((int(os.environ[n]) for n in _LOCAL_RANK_VARIABLES if n in os.environ), 0)
        cupy.cuda.Device(local_rank % cupy.cuda.runtime.getDeviceCount()).use()
        unique_id = nccl.get_unique_id() if self.rank == 0 else None
        unique_id = bootstrap.comm.bcast(unique_id, root=0)
        self.comm = nccl.NcclCommunicator(self.size, unique_id, self.rank)
        self.ops = {"sum": nccl.NCCL_SUM, "prod": nccl.NCCL_PROD, "max": nccl.NCCL_MAX,
                    "min": nccl.NCCL_MIN, "lor": nccl.NCCL_MAX, "land": nccl.NCCL_MIN}  # fmt: skip
        self.types = {
            "int8": nccl.NCCL_INT8, "uint8": nccl.NCCL_UINT8, "bool": nccl.NCCL_UINT8,
            "int32": nccl.NCCL_INT32, "uint32": nccl.NCCL_UINT32, "int64": nccl.NCCL_INT64,
            "uint64": nccl.NCCL_UINT64, "float16": nccl.NCCL_FLOAT16,
            "float32": nccl.NCCL_FLOAT32, "float64": nccl.NCCL_FLOAT64,
        }  # fmt: skip

    # ----- helpers ---------------------------------------------------------------------------------
    def _type(self, array, reduce: bool):
        """(NCCL dtype, element count) of a device array; bytes for dtypes NCCL only copies."""
        if isinstance(array, np.ndarray):
            raise DeviceError(
                "the 'nccl' backend moves GPU memory, but this tensor is on the host",
                help="move it with .to('cuda') first, or use backend='mpi' for host tensors",
            )
        kind = self.types.get(array.dtype.name)
        if kind is not None:
            return kind, array.size
        if reduce:
            raise DTypeError(f"NCCL cannot reduce {array.dtype}", help="convert to float32 first")
        return self.nccl.NCCL_UINT8, array.nbytes

    def _done(self):
        event = self.cupy.cuda.Event(block=False, disable_timing=True)
        event.record()
        return [event]

    def _stream(self) -> int:
        return self.cupy.cuda.get_current_stream().ptr

    # ----- operations ------------------------------------------------------------------------------
    def allreduce(self, array, op: str):
        kind, count = self._type(array, True)
        self.comm.allReduce(array.data.ptr, array.data.ptr, count, kind, self.ops[op],
                            self._stream())  # fmt: skip
        return self._done()

    def broadcast(self, array, root: int):
        kind, count = self._type(array, False)
        self.comm.bcast(array.data.ptr, count, kind, root, self._stream())
        return self._done()

    def allgather(self, send, recv):
        if isinstance(send, np.ndarray):  # debug mode's signatures live on the host
            return self.bootstrap.allgather(send, recv)
        kind, count = self._type(send, False)
        self.comm.allGather(send.data.ptr, recv.data.ptr, count, kind, self._stream())
        return self._done()

    def reduce_scatter(self, send, recv, op: str):
        kind, count = self._type(recv, True)
        self.comm.reduceScatter(send.data.ptr, recv.data.ptr, count, kind, self.ops[op],
                                self._stream())  # fmt: skip
        return self._done()

    def gather(self, send, recv, root: int):
        kind, count = self._type(send, False)
        self.nccl.groupStart()
        if self.rank == root:
            for peer in range(self.size):
                target = recv[peer]
                if peer == root:
                    target[...] = send
                else:
                    self.comm.recv(target.data.ptr, count, kind, peer, self._stream())
        else:
            self.comm.send(send.data.ptr, count, kind, root, self._stream())
        self.nccl.groupEnd()
        return self._done()

    def scatter(self, send, recv, root: int):
        kind, count = self._type(recv, False)
        self.nccl.groupStart()
        if self.rank == root:
            for peer in range(self.size):
                if peer == root:
                    recv[...] = send[peer]
                else:
                    self.comm.send(send[peer].data.ptr, count, kind, peer, self._stream())
        else:
            self.comm.recv(recv.data.ptr, count, kind, root, self._stream())
        self.nccl.groupEnd()
        return self._done()

    def send(self, array, peer: int, tag: int):
        kind, count = self._type(array, False)
        self.comm.send(array.data.ptr, count, kind, peer, self._stream())
        return self._done()

    def recv(self, array, peer: int, tag: int):
        kind, count = self._type(array, False)
        self.comm.recv(array.data.ptr, count, kind, peer, self._stream())
        return self._done()

    def barrier(self):
        token = self.cupy.zeros(1, self.cupy.float32)
        self.comm.allReduce(token.data.ptr, token.data.ptr, 1, self.nccl.NCCL_FLOAT32,
                            self.nccl.NCCL_SUM, self._stream())  # fmt: skip
        return self._done()

    # ----- waiting ---------------------------------------------------------------------------------
    def test(self, pendings) -> bool:
        return all(p.done for p in pendings) if self._events(pendings) else self.bootstrap.test(
            pendings)  # fmt: skip

    def _events(self, pendings) -> bool:
        return bool(pendings) and isinstance(pendings[0], self.cupy.cuda.Event)

    def wait(self, pendings, deadline: float, where: tuple = (-1, -1)) -> bool:
        if not self._events(pendings):
            return self.bootstrap.wait(pendings, deadline, where)
        while not all(event.done for event in pendings):
            if time.monotonic() > deadline:
                return False
            time.sleep(1e-4)
        return True

    def describe_stall(self, seq: int, opcode: int, grace: float) -> str:
        self.comm.abort()  # a stuck NCCL kernel never returns otherwise
        return self.bootstrap.describe_stall(seq, opcode, grace)

    def allgather_object(self, value) -> list:
        return self.bootstrap.allgather_object(value)

    # the checks before each collective and send are small host arrays: they travel over MPI
    def agree(self, pair: np.ndarray):
        return self.bootstrap.agree(pair)

    def send_header(self, header: np.ndarray, peer: int, tag: int):
        return self.bootstrap.send_header(header, peer, tag)

    def recv_header(self, header: np.ndarray, peer: int, tag: int):
        return self.bootstrap.recv_header(header, peer, tag)

    def split(self, ranks: list[int]):
        sub = self.bootstrap.split(ranks)
        return None if sub is None else NCCLBackend(sub)

    def abort(self, code: int = 1) -> None:
        self.bootstrap.abort(code)

"""The collectives: explicit communication between the ranks of a group, on tensors in place.

Each takes ``group=None`` (the world) and ``async_op=False``; with ``async_op=True`` it returns a
``Work`` whose ``wait()`` finishes it. ``src``/``dst`` are world ranks, as in PyTorch. Every wait is
bounded by the group's timeout, after which ``CollectiveTimeoutError`` names the missing rank.
"""

from __future__ import annotations

import numpy as np

from ..autograd.tensor import Tensor
from ..backend.device import array_namespace
from ..errors import DeviceError, DTypeError, ShapeError
from ._buffers import Staged, contiguous, reduce_op_for, wire_array
from ._ledger import OPS, Entry, call_site, mismatch_report
from .errors import CollectiveMismatchError, DistributedError
from .group import ProcessGroup, default_group


class Work:
    """A started collective. ``wait()`` blocks until it is done (raising at the group's timeout)
    and writes the results into the collective's tensors, in place (each keeps its shape);
    ``is_completed()`` asks without blocking."""

    def __init__(self, group: ProcessGroup, pendings, finish, collective: str, seq: int,
                 detail: str) -> None:  # fmt: skip
        self.group, self.pendings, self.finish = group, pendings, finish
        self.collective, self.seq, self.detail = collective, seq, detail
        self.done = False
        self.keep = None

    def is_completed(self) -> bool:
        return self.done or self.pendings is None or self.group.backend.test(self.pendings)

    def wait(self) -> bool:
        if not self.done:
            self.group.wait(self.pendings, self.collective, self.seq, OPS.index(self.collective),
                            self.detail)  # fmt: skip
            self.done, self.keep = True, None
            if self.finish is not None:
                self.finish()
        return True

    def __repr__(self) -> str:
        state = "done" if self.done else "pending"
        return f"Work({self.collective} #{self.seq}, {self.detail}, {state})"


def _array_of(tensor, collective: str, argument: str = "tensor") -> np.ndarray:
    if isinstance(tensor, Tensor):
        array = tensor.data
    elif isinstance(tensor, np.ndarray):
        array = tensor
    elif tensor is None:
        raise DistributedError(
            f"[{collective}] {argument} is None (a parameter's .grad is None when backward did "
            "not reach it)",
            help="skip parameters whose .grad is None on every rank, or give them zeros first",
        )
    else:
        raise DistributedError(
            f"[{collective}] {argument} must be a Tensor, got {type(tensor).__name__}",
            help="wrap values with buildingai.tensor(...)",
        )
    if type(array) is not np.ndarray:
        _check_device(array, collective)
    return array


def _check_device(array, collective: str) -> None:
    if default_group().backend_name != "nccl":
        raise DeviceError(
            f"[{collective}] the {default_group().backend_name!r} backend moves host memory, but "
            "this tensor is on a GPU",
            help="init_process_group(backend='nccl') for GPU tensors, or .cpu() first",
        )


def _modified(tensor) -> None:
    """Bump the version counter of a tensor a collective wrote into (autograd checks it)."""
    if isinstance(tensor, Tensor):
        tensor._version[0] += 1
        tensor._version[1] = "distributed collective"


def _begin(group: ProcessGroup | None, collective: str, array: np.ndarray, check: bool = True):
    """Resolve the group, count the call and, in debug mode, check it against the other ranks."""
    group = group or default_group()
    if group.rank is None:
        raise DistributedError(
            f"[{collective}] this process is not a member of the group (world ranks {group.ranks})",
            help="call collectives of a sub-group only on its members (get_rank(group) >= 0)",
        )
    if group.broken:
        raise DistributedError(
            f"[{collective}] the group cannot be used after an earlier failure: {group.broken}"
        )
    seq = group.sequence
    group.sequence += 1
    if group.debug:
        entry = Entry(seq, collective, tuple(array.shape), str(array.dtype), call_site())
        group.ledger.record(entry)
        if check and group.size > 1:
            _check_same_call(group, entry)
    return group, seq


def _check_same_call(group: ProcessGroup, entry: Entry) -> None:
    """Every rank's (seq, op, shape, dtype) must agree; otherwise name the rank that diverged."""
    mine = entry.signature()
    everyone = np.empty((group.size, mine.size), np.int64)
    pendings = group.backend.allgather(mine, everyone)
    group.wait(pendings, "ledger check", entry.seq, OPS.index("ledger check"), entry.describe())
    if (everyone == mine).all():
        return
    entries = [Entry(*fields) for fields in group.backend.allgather_object(tuple(entry))]
    group.broken = f"collective #{entry.seq} differed across ranks"
    raise CollectiveMismatchError(
        f"[{entry.op}] ranks called different collectives at step #{entry.seq}: "
        + mismatch_report(entries, group.ranks),
        help="every rank must call the same collectives, with the same shapes and dtypes, in the "
        "same order; look at the line of the rank that diverged",
    )


def _run(group, collective, seq, pendings, finish, async_op, detail, keep=None):
    work = Work(group, pendings, finish, collective, seq, detail)
    work.keep = keep  # a temporary buffer the backend reads until the work is done
    if async_op:
        return work
    work.wait()
    return None


def _detail(array: np.ndarray) -> str:
    return f"shape {tuple(array.shape)}, {array.dtype}"


# ----- the collectives ----------------------------------------------------------------------------
def all_reduce(tensor, op: str = "sum", group: ProcessGroup | None = None, async_op: bool = False):
    """Combine ``tensor`` across the ranks, in place: after it, every rank holds the ``op``
    ("sum", "mean", "max", "min", "prod") of all ranks' values. Any shape; bool sums are "any"."""
    array = _array_of(tensor, "all_reduce")
    backend_op = reduce_op_for(array.dtype, op, "all_reduce")
    group, seq = _begin(group, "all_reduce", array)
    staged = Staged(array, group.backend.native_float16)
    pendings = group.backend.allreduce(staged.array, backend_op)
    divide_by = group.size if op == "mean" else 1

    def finish() -> None:
        staged.finish(divide_by)
        _modified(tensor)

    return _run(group, "all_reduce", seq, pendings, finish, async_op, _detail(array))


def broadcast(tensor, src: int = 0, group: ProcessGroup | None = None, async_op: bool = False):
    """Copy ``tensor`` of world rank ``src`` into ``tensor`` on every rank, in place.

    ``tensor``: any shape, the same shape and dtype on every rank; overwritten in place."""
    array = _array_of(tensor, "broadcast")
    group, seq = _begin(group, "broadcast", array)
    root = group.group_rank(src, "broadcast", "src")
    staged = Staged(wire_array(array))
    pendings = group.backend.broadcast(staged.array, root)

    def finish() -> None:
        staged.finish()
        _modified(tensor)

    return _run(group, "broadcast", seq, pendings, finish, async_op, _detail(array))


def all_gather(tensor_list: list, tensor, group: ProcessGroup | None = None,
               async_op: bool = False):  # fmt: skip
    """Fill ``tensor_list[i]`` with ``tensor`` of group rank ``i``, on every rank.

    ``tensor``: any shape ``S``; ``tensor_list``: ``world_size`` tensors, each of shape ``S`` and
    ``tensor``'s dtype, overwritten in place."""
    array = _array_of(tensor, "all_gather")
    group, seq = _begin(group, "all_gather", array)
    targets = _matching_list(tensor_list, array, group.size, "all_gather", "tensor_list")
    send = contiguous(wire_array(array))
    received = array_namespace(send).empty((group.size, *send.shape), send.dtype)
    pendings = group.backend.allgather(send, received)

    def finish() -> None:
        for target, values in zip(targets, received):
            array_namespace(target).copyto(wire_array(target), values)
        for item in tensor_list:
            _modified(item)

    return _run(group, "all_gather", seq, pendings, finish, async_op, _detail(array), send)


def all_gather_into_tensor(output, input, group: ProcessGroup | None = None,
                           async_op: bool = False):  # fmt: skip
    """``output`` (``world_size * input.shape[0]`` rows, or ``(world_size, *input.shape)``) is the
    ranks' ``input`` tensors one after another."""
    array = _array_of(input, "all_gather", "input")
    out = _array_of(output, "all_gather", "output")
    group, seq = _begin(group, "all_gather", array)
    _check_total(out, array, group.size, "all_gather_into_tensor")
    send = contiguous(wire_array(array))
    staged = Staged(wire_array(out))
    received = staged.array.reshape((group.size, *send.shape))
    pendings = group.backend.allgather(send, received)

    def finish() -> None:
        staged.finish()
        _modified(output)

    return _run(group, "all_gather", seq, pendings, finish, async_op, _detail(array), send)


def reduce_scatter(output, input_list: list, op: str = "sum", group: ProcessGroup | None = None,
                   async_op: bool = False):  # fmt: skip
    """Reduce ``input_list[i]`` over the ranks with ``op`` and leave the result in ``output`` of
    group rank ``i``.

    ``output``: any shape ``S``, overwritten in place; ``input_list``: ``world_size`` tensors, each
    of shape ``S`` and ``output``'s dtype."""
    out = _array_of(output, "reduce_scatter", "output")
    group, seq = _begin(group, "reduce_scatter", out)
    inputs = _matching_list(input_list, out, group.size, "reduce_scatter", "input_list")
    return _reduce_scatter(group, seq, output, out, array_namespace(out).stack(inputs), op,
                           async_op)  # fmt: skip


def reduce_scatter_tensor(output, input, op: str = "sum", group: ProcessGroup | None = None,
                          async_op: bool = False):  # fmt: skip
    """``output`` on group rank ``i`` is the ``op`` over the ranks of block ``i`` of ``input``
    (``input`` holds ``world_size`` blocks shaped like ``output``, one after another).

    For ``output`` (N, *), ``input`` holds ``world_size * output.numel()`` elements, e.g.
    (world_size * N, *) or (world_size, N, *); ``output`` is overwritten in place."""
    out = _array_of(output, "reduce_scatter", "output")
    array = _array_of(input, "reduce_scatter", "input")
    group, seq = _begin(group, "reduce_scatter", array)
    _check_total(array, out, group.size, "reduce_scatter_tensor")
    return _reduce_scatter(group, seq, output, out, array, op, async_op)


def _reduce_scatter(group, seq, output, out, send, op, async_op):
    if send.dtype != out.dtype:
        raise DTypeError(f"[reduce_scatter] input is {send.dtype} but output is {out.dtype}")
    backend_op = reduce_op_for(out.dtype, op, "reduce_scatter")
    staged = Staged(out, group.backend.native_float16)
    send = contiguous(send).astype(staged.array.dtype, copy=False)
    pendings = group.backend.reduce_scatter(send.reshape(-1), staged.array.reshape(-1), backend_op)
    divide_by = group.size if op == "mean" else 1

    def finish() -> None:
        staged.finish(divide_by)
        _modified(output)

    return _run(group, "reduce_scatter", seq, pendings, finish, async_op, _detail(out), send)


def gather(tensor, gather_list: list | None = None, dst: int = 0,
           group: ProcessGroup | None = None, async_op: bool = False):  # fmt: skip
    """On world rank ``dst``, fill ``gather_list[i]`` with ``tensor`` of group rank ``i``; the
    other ranks pass no list.

    ``tensor``: any shape ``S``, the same on every rank; ``gather_list`` (on ``dst`` only):
    ``world_size`` tensors, each of shape ``S`` and ``tensor``'s dtype, overwritten in place."""
    array = _array_of(tensor, "gather")
    group, seq = _begin(group, "gather", array)
    root = group.group_rank(dst, "gather", "dst")
    send = contiguous(wire_array(array))
    received = targets = None
    if group.rank == root:
        targets = _matching_list(gather_list, array, group.size, "gather", "gather_list")
        received = array_namespace(send).empty((group.size, *send.shape), send.dtype)
    pendings = group.backend.gather(send, received, root)

    def finish() -> None:
        if targets is not None:
            for target, values in zip(targets, received):
                array_namespace(target).copyto(wire_array(target), values)
            for item in gather_list:
                _modified(item)

    return _run(group, "gather", seq, pendings, finish, async_op, _detail(array), send)


def scatter(tensor, scatter_list: list | None = None, src: int = 0,
            group: ProcessGroup | None = None, async_op: bool = False):  # fmt: skip
    """Copy ``scatter_list[i]`` of world rank ``src`` into ``tensor`` of group rank ``i``.

    ``tensor``: any shape ``S``, the same on every rank, overwritten in place; ``scatter_list``
    (on ``src`` only): ``world_size`` tensors, each of shape ``S`` and ``tensor``'s dtype."""
    array = _array_of(tensor, "scatter")
    group, seq = _begin(group, "scatter", array)
    root = group.group_rank(src, "scatter", "src")
    staged = Staged(wire_array(array))
    send = None
    if group.rank == root:
        sources = _matching_list(scatter_list, array, group.size, "scatter", "scatter_list")
        send = array_namespace(array).stack([wire_array(source) for source in sources])
    pendings = group.backend.scatter(send, staged.array, root)

    def finish() -> None:
        staged.finish()
        _modified(tensor)

    return _run(group, "scatter", seq, pendings, finish, async_op, _detail(array), send)


def send(tensor, dst: int, group: ProcessGroup | None = None, tag: int = 0,
         async_op: bool = False):  # fmt: skip
    """Send ``tensor`` to world rank ``dst`` (which calls ``recv`` with ``src`` this rank).

    ``tensor``: any shape; the receiver's tensor must have the same shape and dtype."""
    array = _array_of(tensor, "send")
    group, seq = _begin(group, "send", array, check=False)
    peer = group.group_rank(dst, "send", "dst")
    buffer = contiguous(wire_array(array))
    pendings = group.backend.send(buffer, peer, tag)
    detail = _detail(array) + f" to rank {dst}"
    return _run(group, "send", seq, pendings, None, async_op, detail, buffer)


def recv(tensor, src: int, group: ProcessGroup | None = None, tag: int = 0,
         async_op: bool = False):  # fmt: skip
    """Receive into ``tensor``, in place, what world rank ``src`` sends with ``send``.

    ``tensor``: any shape, the shape and dtype of the sent tensor; overwritten in place."""
    array = _array_of(tensor, "recv")
    group, seq = _begin(group, "recv", array, check=False)
    peer = group.group_rank(src, "recv", "src")
    staged = Staged(wire_array(array))
    pendings = group.backend.recv(staged.array, peer, tag)

    def finish() -> None:
        staged.finish()
        _modified(tensor)

    detail = _detail(array) + f" from rank {src}"
    return _run(group, "recv", seq, pendings, finish, async_op, detail)


def isend(tensor, dst: int, group: ProcessGroup | None = None, tag: int = 0) -> Work:
    """``send`` without blocking: returns a ``Work``. ``tensor``: any shape, as for ``send``."""
    return send(tensor, dst, group, tag, async_op=True)


def irecv(tensor, src: int, group: ProcessGroup | None = None, tag: int = 0) -> Work:
    """``recv`` without blocking: returns a ``Work``; ``tensor`` (any shape, the sent tensor's)
    is written in place by ``wait()``."""
    return recv(tensor, src, group, tag, async_op=True)


def barrier(group: ProcessGroup | None = None, async_op: bool = False):
    """Wait until every rank of the group reached its barrier."""
    group, seq = _begin(group, "barrier", np.empty(0, np.uint8))
    pendings = group.backend.barrier()
    return _run(group, "barrier", seq, pendings, None, async_op, "no tensor")


# ----- argument checks ----------------------------------------------------------------------------
def _matching_list(tensors, like: np.ndarray, size: int, collective: str, argument: str) -> list:
    """The arrays of ``tensors``: exactly ``size`` of them, each shaped and typed like ``like``."""
    if tensors is None or len(tensors) != size:
        count = "None" if tensors is None else f"{len(tensors)} tensors"
        raise ShapeError(
            f"[{collective}] {argument} must hold one tensor per rank ({size}), got {count}",
            help=f"pass [buildingai.zeros_like(t) for _ in range({size})]",
        )
    arrays = [_array_of(item, collective, argument) for item in tensors]
    for index, array in enumerate(arrays):
        if array.shape != like.shape or array.dtype != like.dtype:
            raise ShapeError(
                f"[{collective}] {argument}[{index}] is shape {tuple(array.shape)} {array.dtype}, "
                f"but the tensor is shape {tuple(like.shape)} {like.dtype}",
                help="every tensor of the list must have the tensor's shape and dtype",
            )
    return arrays


def _check_total(big: np.ndarray, small: np.ndarray, size: int, collective: str) -> None:
    if big.size != size * small.size or big.dtype != small.dtype:
        raise ShapeError(
            f"[{collective}] needs {size} x {small.size} = {size * small.size} elements of "
            f"{small.dtype}, got shape {tuple(big.shape)} {big.dtype} for {tuple(small.shape)}",
            help="the large tensor holds one block per rank, each shaped like the small one",
        )

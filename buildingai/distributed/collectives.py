"""The collectives: explicit communication between the ranks of a group, on tensors in place.

Each takes ``group=None`` (the world) and ``async_op=False``; with ``async_op=True`` it returns a
``Work`` whose ``wait()`` finishes it. ``src``/``dst`` are world ranks, as in PyTorch. Every wait is
bounded by the group's timeout, after which ``CollectiveTimeoutError`` names the missing rank.
"""

from __future__ import annotations

import numpy as np

from ..autograd.tensor import Tensor, bump_version
from ..backend.device import array_namespace
from ..errors import DeviceError, DTypeError, ShapeError
from ._buffers import Staged, contiguous, reduce_op_for, wire_array
from ._ledger import Entry, call_site
from ._work import HEADER_BYTES, Work, collective, header_of, receiving
from .errors import DistributedError
from .group import ProcessGroup, default_group

__all__ = ["Work", "all_gather", "all_gather_into_tensor", "all_reduce", "barrier", "broadcast",
           "gather", "irecv", "isend", "recv", "reduce_scatter", "reduce_scatter_tensor", "scatter",
           "send"]  # fmt: skip


def _array_of(tensor, collective: str, argument: str = "tensor") -> np.ndarray:
    if isinstance(tensor, Tensor):
        array = tensor.array
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
        bump_version(tensor, "distributed collective")


def _group_of(group: ProcessGroup | None, collective: str) -> ProcessGroup:
    """The group (the world by default), refused when this process is not in it or it broke."""
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
    return group


def _entry(group: ProcessGroup, collective: str, array: np.ndarray, arguments: str = "") -> Entry:
    """Count the call and describe it: what every rank's call must agree with (``arguments``
    such as ``op='sum'`` or ``src=0`` too), and the user's line that made it."""
    seq = group.sequence
    group.sequence += 1
    entry = Entry(seq, collective, tuple(array.shape), str(array.dtype), call_site(), arguments)
    if group.debug:
        group.ledger.record(entry)
    if group.status is not None:
        group.status.entered(entry.describe())
    return entry


def _detail(array: np.ndarray) -> str:
    return f"shape {tuple(array.shape)}, {array.dtype}"


# ----- the collectives ----------------------------------------------------------------------------
def all_reduce(tensor, op: str = "sum", group: ProcessGroup | None = None, async_op: bool = False):
    """Combine ``tensor`` across the ranks, in place: after it, every rank holds the ``op``
    ("sum", "mean", "max", "min", "prod") of all ranks' values. Any shape, the same shape and
    dtype on every rank (checked: ranks that differ raise together); bool sums are "any"."""
    array = _array_of(tensor, "all_reduce")
    backend_op = reduce_op_for(array.dtype, op, "all_reduce")
    group = _group_of(group, "all_reduce")
    entry = _entry(group, "all_reduce", array, f"op={op!r}")
    staged = Staged(array, group.backend.native_float16)
    divide_by = group.size if op == "mean" else 1

    def start():
        return group.backend.allreduce(staged.array, backend_op)

    def finish() -> None:
        staged.finish(divide_by)
        _modified(tensor)

    return collective(group, entry, _detail(array), start, finish, async_op)


def broadcast(tensor, src: int = 0, group: ProcessGroup | None = None, async_op: bool = False):
    """Copy ``tensor`` of world rank ``src`` into ``tensor`` on every rank, in place.

    ``tensor``: any shape, the same shape and dtype on every rank; overwritten in place."""
    array = _array_of(tensor, "broadcast")
    group = _group_of(group, "broadcast")
    root = group.group_rank(src, "broadcast", "src")
    entry = _entry(group, "broadcast", array, f"src={src}")
    staged = Staged(wire_array(array))

    def finish() -> None:
        staged.finish()
        _modified(tensor)

    return collective(group, entry, _detail(array), lambda: group.backend.broadcast(
        staged.array, root), finish, async_op)  # fmt: skip


def all_gather(tensor_list: list, tensor, group: ProcessGroup | None = None,
               async_op: bool = False):  # fmt: skip
    """Fill ``tensor_list[i]`` with ``tensor`` of group rank ``i``, on every rank.

    ``tensor``: any shape ``S``, the same on every rank; ``tensor_list``: ``world_size`` tensors,
    each of shape ``S`` and ``tensor``'s dtype, overwritten in place."""
    array = _array_of(tensor, "all_gather")
    group = _group_of(group, "all_gather")
    targets = _matching_list(tensor_list, array, group.size, "all_gather", "tensor_list")
    entry = _entry(group, "all_gather", array)
    send = contiguous(wire_array(array))
    received = array_namespace(send).empty((group.size, *send.shape), send.dtype)

    def finish() -> None:
        for target, values in zip(targets, received):
            array_namespace(target).copyto(wire_array(target), values)
        for item in tensor_list:
            _modified(item)

    return collective(group, entry, _detail(array), lambda: group.backend.allgather(
        send, received), finish, async_op, send)  # fmt: skip


def all_gather_into_tensor(output, input, group: ProcessGroup | None = None,
                           async_op: bool = False):  # fmt: skip
    """``output`` (``world_size * input.shape[0]`` rows, or ``(world_size, *input.shape)``) is the
    ranks' ``input`` tensors one after another; ``input`` has the same shape on every rank."""
    array = _array_of(input, "all_gather", "input")
    out = _array_of(output, "all_gather", "output")
    group = _group_of(group, "all_gather")
    _check_total(out, array, group.size, "all_gather_into_tensor")
    entry = _entry(group, "all_gather", array)
    send = contiguous(wire_array(array))
    staged = Staged(wire_array(out))
    received = staged.array.reshape((group.size, *send.shape))

    def finish() -> None:
        staged.finish()
        _modified(output)

    return collective(group, entry, _detail(array), lambda: group.backend.allgather(
        send, received), finish, async_op, send)  # fmt: skip


def reduce_scatter(output, input_list: list, op: str = "sum", group: ProcessGroup | None = None,
                   async_op: bool = False):  # fmt: skip
    """Reduce ``input_list[i]`` over the ranks with ``op`` and leave the result in ``output`` of
    group rank ``i``.

    ``output``: any shape ``S``, the same on every rank, overwritten in place; ``input_list``:
    ``world_size`` tensors, each of shape ``S`` and ``output``'s dtype."""
    out = _array_of(output, "reduce_scatter", "output")
    group = _group_of(group, "reduce_scatter")
    inputs = _matching_list(input_list, out, group.size, "reduce_scatter", "input_list")
    return _reduce_scatter(group, output, out, array_namespace(out).stack(inputs), op, async_op)


def reduce_scatter_tensor(output, input, op: str = "sum", group: ProcessGroup | None = None,
                          async_op: bool = False):  # fmt: skip
    """``output`` on group rank ``i`` is the ``op`` over the ranks of block ``i`` of ``input``
    (``input`` holds ``world_size`` blocks shaped like ``output``, one after another).

    For ``output`` (N, *), the same on every rank, ``input`` holds ``world_size * output.numel()``
    elements, e.g. (world_size * N, *) or (world_size, N, *); ``output`` is overwritten in place."""
    out = _array_of(output, "reduce_scatter", "output")
    array = _array_of(input, "reduce_scatter", "input")
    group = _group_of(group, "reduce_scatter")
    _check_total(array, out, group.size, "reduce_scatter_tensor")
    return _reduce_scatter(group, output, out, array, op, async_op)


def _reduce_scatter(group, output, out, send, op, async_op):
    if send.dtype != out.dtype:
        raise DTypeError(f"[reduce_scatter] input is {send.dtype} but output is {out.dtype}")
    backend_op = reduce_op_for(out.dtype, op, "reduce_scatter")
    entry = _entry(group, "reduce_scatter", out, f"op={op!r}")
    staged = Staged(out, group.backend.native_float16)
    send = contiguous(send).astype(staged.array.dtype, copy=False)
    divide_by = group.size if op == "mean" else 1

    def start():
        return group.backend.reduce_scatter(send.reshape(-1), staged.array.reshape(-1), backend_op)

    def finish() -> None:
        staged.finish(divide_by)
        _modified(output)

    return collective(group, entry, _detail(out), start, finish, async_op, send)


def gather(tensor, gather_list: list | None = None, dst: int = 0,
           group: ProcessGroup | None = None, async_op: bool = False):  # fmt: skip
    """On world rank ``dst``, fill ``gather_list[i]`` with ``tensor`` of group rank ``i``; the
    other ranks pass no list.

    ``tensor``: any shape ``S``, the same on every rank; ``gather_list`` (on ``dst`` only):
    ``world_size`` tensors, each of shape ``S`` and ``tensor``'s dtype, overwritten in place."""
    array = _array_of(tensor, "gather")
    group = _group_of(group, "gather")
    root = group.group_rank(dst, "gather", "dst")
    received = targets = None
    if group.rank == root:
        targets = _matching_list(gather_list, array, group.size, "gather", "gather_list")
    entry = _entry(group, "gather", array, f"dst={dst}")
    send = contiguous(wire_array(array))
    if targets is not None:
        received = array_namespace(send).empty((group.size, *send.shape), send.dtype)

    def finish() -> None:
        if targets is not None:
            for target, values in zip(targets, received):
                array_namespace(target).copyto(wire_array(target), values)
            for item in gather_list:
                _modified(item)

    return collective(group, entry, _detail(array), lambda: group.backend.gather(
        send, received, root), finish, async_op, send)  # fmt: skip


def scatter(tensor, scatter_list: list | None = None, src: int = 0,
            group: ProcessGroup | None = None, async_op: bool = False):  # fmt: skip
    """Copy ``scatter_list[i]`` of world rank ``src`` into ``tensor`` of group rank ``i``.

    ``tensor``: any shape ``S``, the same on every rank, overwritten in place; ``scatter_list``
    (on ``src`` only): ``world_size`` tensors, each of shape ``S`` and ``tensor``'s dtype."""
    array = _array_of(tensor, "scatter")
    group = _group_of(group, "scatter")
    root = group.group_rank(src, "scatter", "src")
    send = None
    if group.rank == root:
        sources = _matching_list(scatter_list, array, group.size, "scatter", "scatter_list")
        send = array_namespace(array).stack([wire_array(source) for source in sources])
    entry = _entry(group, "scatter", array, f"src={src}")
    staged = Staged(wire_array(array))

    def finish() -> None:
        staged.finish()
        _modified(tensor)

    return collective(group, entry, _detail(array), lambda: group.backend.scatter(
        send, staged.array, root), finish, async_op, send)  # fmt: skip


def send(tensor, dst: int, group: ProcessGroup | None = None, tag: int = 0,
         async_op: bool = False):  # fmt: skip
    """Send ``tensor`` to world rank ``dst`` (which calls ``recv`` with ``src`` this rank).

    ``tensor``: any shape; the receiver's tensor must have the same shape and dtype (a header
    with both travels first: the receiver raises when they differ)."""
    array = _array_of(tensor, "send")
    group = _group_of(group, "send")
    peer = group.group_rank(dst, "send", "dst")
    entry = _entry(group, "send", array, f"dst={dst}")
    buffer = contiguous(wire_array(array))
    header = header_of(entry)
    pendings = group.backend.send_header(header, peer, tag) + group.backend.send(buffer, peer, tag)
    work = Work(group, entry, _detail(array) + f" to rank {dst}", None, None)
    work.pendings, work.keep = pendings, (buffer, header)
    if async_op:
        return work
    work.wait()
    return None


def recv(tensor, src: int, group: ProcessGroup | None = None, tag: int = 0,
         async_op: bool = False):  # fmt: skip
    """Receive into ``tensor``, in place, what world rank ``src`` sends with ``send``.

    ``tensor``: any shape, the shape and dtype of the sent tensor (checked against the sender's
    header: a mismatch raises here, naming both tensors and lines); overwritten in place."""
    array = _array_of(tensor, "recv")
    group = _group_of(group, "recv")
    peer = group.group_rank(src, "recv", "src")
    entry = _entry(group, "recv", array, f"src={src}")
    staged = Staged(wire_array(array))
    header = np.zeros(HEADER_BYTES, np.uint8)
    header_requests = group.backend.recv_header(header, peer, tag)
    pendings = group.backend.recv(staged.array, peer, tag)

    def finish() -> None:
        staged.finish()
        _modified(tensor)

    detail = _detail(array) + f" from rank {src}"
    return receiving(group, entry, detail, src, pendings, header, header_requests, finish,
                     async_op)  # fmt: skip


def isend(tensor, dst: int, group: ProcessGroup | None = None, tag: int = 0) -> Work:
    """``send`` without blocking: returns a ``Work``. ``tensor``: any shape, as for ``send``."""
    return send(tensor, dst, group, tag, async_op=True)


def irecv(tensor, src: int, group: ProcessGroup | None = None, tag: int = 0) -> Work:
    """``recv`` without blocking: returns a ``Work``; ``tensor`` (any shape, the sent tensor's)
    is written in place by ``wait()``."""
    return recv(tensor, src, group, tag, async_op=True)


def barrier(group: ProcessGroup | None = None, async_op: bool = False):
    """Wait until every rank of the group reached its barrier."""
    group = _group_of(group, "barrier")
    entry = _entry(group, "barrier", np.empty(0, np.uint8))
    return collective(group, entry, "no tensor", group.backend.barrier, None, async_op)


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

"""Ranks that call a collective with different shapes, dtypes or arguments, in the default mode
(no debug): every rank must raise CollectiveMismatchError naming both ranks' calls and lines,
and no tensor may be written. Each case runs in a group of its own (a mismatch breaks its group),
then the world still works. Run on 2 ranks; argv[1] is the folder for each rank's report: one
"case<TAB>error" line per case."""

import json
import os
import sys

import numpy as np

import buildingai as bai
from buildingai import distributed as dist

dist.init_process_group(timeout=20)
rank = dist.get_rank()
other = 1 - rank


def ones(shape, dtype=np.float32):
    return bai.tensor(np.ones(shape, dtype))


def all_reduce_shapes():
    t = ones(4 + rank)  # rank 0: (4,), rank 1: (5,)
    try:
        dist.all_reduce(t, group=group)
    finally:
        untouched.append(bool((t.numpy() == 1).all()))


def all_reduce_dtypes():
    t = ones(4, np.float32 if rank == 0 else np.float64)
    dist.all_reduce(t, group=group)


def all_reduce_ops():
    dist.all_reduce(ones(4), op="sum" if rank == 0 else "mean", group=group)


def all_reduce_async():
    work = dist.all_reduce(ones(4 + rank), group=group, async_op=True)
    work.wait()


def broadcast_shapes():
    dist.broadcast(ones((2, 3) if rank == 0 else (3, 2)), src=0, group=group)


def broadcast_sources():
    dist.broadcast(ones(4), src=rank, group=group)


def all_gather_shapes():
    t = ones(3 + rank)
    dist.all_gather([bai.zeros_like(t) for _ in range(2)], t, group=group)


def all_gather_into_tensor_dtypes():
    dtype = np.float32 if rank == 0 else np.int32
    dist.all_gather_into_tensor(ones(8, dtype), ones(4, dtype), group=group)


def reduce_scatter_shapes():
    out = ones(2 + rank)
    dist.reduce_scatter(out, [bai.zeros_like(out) for _ in range(2)], group=group)


def reduce_scatter_tensor_dtypes():
    dtype = np.float64 if rank == 0 else np.float32
    dist.reduce_scatter_tensor(ones(2, dtype), ones(4, dtype), group=group)


def gather_shapes():
    t = ones(4 + rank)
    targets = [bai.zeros_like(t) for _ in range(2)] if rank == 0 else None
    dist.gather(t, targets, dst=0, group=group)


def scatter_dtypes():
    t = ones(4, np.float32 if rank == 0 else np.int64)
    sources = [bai.zeros_like(t) for _ in range(2)] if rank == 0 else None
    dist.scatter(t, sources, src=0, group=group)


def different_collectives():
    if rank == 0:
        dist.all_reduce(ones(4), group=group)
    else:
        dist.broadcast(ones(5), src=0, group=group)


def send_recv_shapes():
    if rank == 0:
        dist.send(ones(5, np.float64), dst=1, group=group)
        raise dist.CollectiveMismatchError("the sender is not told")
    dist.recv(ones(4), src=0, group=group)


CASES = [all_reduce_shapes, all_reduce_dtypes, all_reduce_ops, all_reduce_async, broadcast_shapes,
         broadcast_sources, all_gather_shapes, all_gather_into_tensor_dtypes,
         reduce_scatter_shapes, reduce_scatter_tensor_dtypes, gather_shapes, scatter_dtypes,
         different_collectives, send_recv_shapes]  # fmt: skip
errors, untouched = {}, []
for case in CASES:
    group = dist.new_group([0, 1])
    try:
        case()
        errors[case.__name__] = "no error"
    except dist.CollectiveMismatchError as error:
        errors[case.__name__] = str(error)
    dist.barrier()  # the world is untouched by its sub-group's failure
with open(os.path.join(sys.argv[1], f"rank{rank}.json"), "w") as report:
    json.dump({"errors": errors, "untouched": untouched}, report)
total = bai.tensor([float(rank)])
dist.all_reduce(total)
print(f"rank {rank} done, sum {total.item():g}", flush=True)

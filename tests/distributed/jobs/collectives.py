"""Every collective on every dtype, checked against NumPy on each rank. Run on any number of
processes (a plain `python collectives.py` is one); prints one "ok" line per rank, or FAIL lines
and exit code 1."""

import sys

import numpy as np

import buildingai as bai
from buildingai import distributed as dist

dist.init_process_group(timeout=20)
rank, size = dist.get_rank(), dist.get_world_size()
failures, checks = [], [0]
try:  # bfloat16 travels when ml_dtypes is installed
    import ml_dtypes

    BF16 = [np.dtype(ml_dtypes.bfloat16)]
except ImportError:
    BF16 = []
DTYPES = [np.dtype(name) for name in ("bool", "int8", "int16", "int32", "int64", "uint8",
                                      "float16", "float32", "float64")] + BF16  # fmt: skip


def values(dtype, shape, for_rank, salt=0):
    """What rank ``for_rank`` contributes: every rank can compute every other rank's values."""
    rng = np.random.default_rng([for_rank, salt, dtype.itemsize, dtype.kind == "b"])
    if dtype.kind == "b":
        return rng.random(shape) < 0.5
    if dtype.kind in "iu":
        return rng.integers(1, 3, shape).astype(dtype)  # 1 or 2: products of 4 ranks still fit
    return rng.uniform(-2, 2, shape).astype(np.float32).astype(dtype)


def check(name, got, expected, dtype):
    checks[0] += 1
    got, expected = np.asarray(got), np.asarray(expected)
    tolerance = {"float16": 4e-3, "bfloat16": 3e-2}.get(dtype.name, 1e-6)
    ok = got.shape == expected.shape and got.dtype == dtype
    if ok and got.size:
        ok = np.allclose(got.astype(np.float64), expected.astype(np.float64), rtol=tolerance,
                         atol=tolerance)  # fmt: skip
    if not ok:
        failures.append(f"rank {rank}: {name} {dtype}: got {got!r} expected {expected!r}")


def reference(op, stacked, dtype):
    wide = stacked.astype(np.float64)
    if dtype.kind == "b":
        return (stacked.any(0) if op in ("sum", "max") else stacked.all(0)).astype(dtype)
    result = {"sum": wide.sum(0), "mean": wide.mean(0), "max": wide.max(0), "min": wide.min(0),
              "prod": wide.prod(0)}[op]  # fmt: skip
    return result.astype(dtype)


def layouts(dtype, shape, for_rank, salt):
    """(name, tensor, its array) for a contiguous, a non-contiguous and a zero-size tensor."""
    plain = values(dtype, shape, for_rank, salt)
    wide = np.zeros((shape[0], shape[1] * 2), dtype)
    wide[:, ::2] = plain
    strided = wide[:, ::2]  # every other column: a non-contiguous view of `wide`
    empty = values(dtype, (0, shape[1]), for_rank, salt)
    return [("contiguous", plain), ("strided", strided), ("zero-size", empty)]


for dtype in DTYPES:
    shape = (3, 5)
    ops = ["sum", "max", "min", "prod"] + (["mean"] if dtype.kind in "fV" else [])
    for salt, op in enumerate(ops):
        for layout, _ in layouts(dtype, shape, rank, salt):
            stacked = np.stack([dict(layouts(dtype, shape, r, salt))[layout] for r in range(size)])
            mine = dict(layouts(dtype, shape, rank, salt))[layout]
            tensor = bai.Tensor(mine)
            asynchronous = salt % 2 == 1
            work = dist.all_reduce(tensor, op=op, async_op=asynchronous)
            if asynchronous:
                work.wait()
            check(f"all_reduce {op} {layout}", tensor.data, reference(op, stacked, dtype), dtype)
            if layout == "strided":  # written in place, into the memory the view shares
                check("all_reduce writes through the view", mine, tensor.data, dtype)

    for layout, _ in layouts(dtype, shape, rank, 9):
        source = size - 1
        mine = dict(layouts(dtype, shape, rank, 9))[layout]
        expected = dict(layouts(dtype, shape, source, 9))[layout]
        tensor = bai.Tensor(mine)
        dist.broadcast(tensor, src=source)
        check(f"broadcast {layout}", tensor.data, expected, dtype)

        everyone = [dict(layouts(dtype, shape, r, 10))[layout] for r in range(size)]
        mine = everyone[rank]
        outputs = [bai.Tensor(np.zeros_like(mine)) for _ in range(size)]
        dist.all_gather(outputs, bai.Tensor(mine))
        for r in range(size):
            check(f"all_gather {layout} from {r}", outputs[r].data, everyone[r], dtype)
        big = bai.Tensor(np.zeros((size * mine.shape[0], mine.shape[1]), dtype))
        dist.all_gather_into_tensor(big, bai.Tensor(mine))
        check(f"all_gather_into_tensor {layout}", big.data, np.concatenate(everyone), dtype)

        target = 0 if size == 1 else 1
        gathered = (
            [bai.Tensor(np.zeros_like(mine)) for _ in range(size)] if rank == target else None
        )
        dist.gather(bai.Tensor(mine), gathered, dst=target)
        if rank == target:
            for r in range(size):
                check(f"gather {layout} from {r}", gathered[r].data, everyone[r], dtype)

        pieces = [dict(layouts(dtype, shape, 100 + r, 11))[layout] for r in range(size)]
        received = bai.Tensor(np.zeros_like(mine))
        source = size - 1
        dist.scatter(
            received, [bai.Tensor(p) for p in pieces] if rank == source else None, src=source
        )
        check(f"scatter {layout}", received.data, pieces[rank], dtype)

        if dtype.kind != "b":
            # reduce_scatter: rank r ends with the sum over ranks of every rank's block r
            blocks = {r: [values(dtype, mine.shape, 1000 * r + b, 12) for b in range(size)]
                      for r in range(size)}  # fmt: skip
            output = bai.Tensor(np.zeros_like(mine))
            dist.reduce_scatter(output, [bai.Tensor(b) for b in blocks[rank]], op="sum")
            stacked = np.stack([blocks[r][rank] for r in range(size)])
            check(f"reduce_scatter {layout}", output.data, reference("sum", stacked, dtype), dtype)
            output = bai.Tensor(np.zeros_like(mine))
            dist.reduce_scatter_tensor(output, bai.Tensor(np.concatenate(blocks[rank])), op="max")
            check(f"reduce_scatter_tensor {layout}", output.data,
                  reference("max", stacked, dtype), dtype)  # fmt: skip

    if size > 1:  # a ring of sends: each rank receives its left neighbour's values
        right, left = (rank + 1) % size, (rank - 1) % size
        for layout, mine in layouts(dtype, (2, 3), rank, 13):
            incoming = np.zeros_like(mine)
            if layout == "strided":
                incoming = np.zeros((2, 6), dtype)[:, ::2]
            receiving = dist.irecv(bai.Tensor(incoming), src=left)
            dist.send(bai.Tensor(mine), dst=right)
            receiving.wait()
            check(f"send/recv {layout}", incoming, dict(layouts(dtype, (2, 3), left, 13))[layout],
                  dtype)  # fmt: skip

dist.barrier()
# a sub-group of the even ranks: collectives there, and non-members are told they are outside
evens = dist.new_group([r for r in range(size) if r % 2 == 0])
if rank % 2 == 0:
    tensor = bai.tensor(np.full(4, rank, np.float64))
    dist.all_reduce(tensor, group=evens)
    expected = float(sum(r for r in range(size) if r % 2 == 0))
    check("sub-group all_reduce", tensor.data, np.full(4, expected), np.dtype("float64"))
    check("sub-group rank", np.array(dist.get_rank(evens)), np.array(rank // 2), np.dtype("int64"))
else:
    try:
        dist.all_reduce(bai.tensor(np.ones(2)), group=evens)
        failures.append(f"rank {rank}: a non-member used the sub-group without an error")
    except dist.DistributedError as error:
        checks[0] += 1
        assert "not a member" in str(error), error
dist.barrier()

# asynchronous collectives waited for in another order than they were called: their payloads
# still start in call order on every rank (each after its check), and each result is right
summed = bai.tensor(np.full(3, rank + 1.0))
broadcasted = bai.tensor(np.full(2, float(rank)))
gathered = [bai.tensor(np.zeros(2, np.int64)) for _ in range(size)]
works = [
    dist.all_reduce(summed, async_op=True),
    dist.broadcast(broadcasted, src=size - 1, async_op=True),
    dist.all_gather(gathered, bai.tensor(np.full(2, rank)), async_op=True),
]
while not works[1].is_completed():  # polling alone progresses the queue
    pass
for work in reversed(works):
    work.wait()
check("async all_reduce", summed.data, np.full(3, size * (size + 1) / 2), np.dtype("float64"))
check("async broadcast", broadcasted.data, np.full(2, size - 1.0), np.dtype("float64"))
for source, values in enumerate(gathered):
    check("async all_gather", values.data, np.full(2, source), np.dtype("int64"))

for failure in failures:
    print("FAIL", failure)
print(
    f"rank {rank}/{size}: collectives ok ({checks[0]} checks)" if not failures else "", flush=True
)
sys.exit(1 if failures else 0)

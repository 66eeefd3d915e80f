"""Bytes each rank sends in one training step of each strategy (data parallel, ZeRO-1, ZeRO-2,
ZeRO-3), counted from the collectives the step really called (the debug ledger: op, shape and
dtype of every call), against the textbook formula for ring collectives.

    python -m buildingai launch -n 4 comm_volume.py

A ring all_reduce of B bytes sends 2 (N-1)/N B per rank; a reduce_scatter or an all_gather of a
B-byte flat vector sends (N-1)/N B. Prints the table on rank 0 and fails when a count differs
from the formula by more than the padding and the 8-byte non-finite check."""

import math
import sys

import numpy as np

import buildingai as bai
from buildingai import nn, optim
from buildingai.distributed import (
    ShardedOptimizer,
    all_reduce,
    get_rank,
    get_world_size,
    init_process_group,
    ledger,
    shard,
)

init_process_group(timeout=60, debug=True)
rank, n = get_rank(), get_world_size()


def new_model():
    bai.manual_seed(0)
    return nn.Sequential(nn.Linear(64, 64), nn.Tanh(), nn.Linear(64, 65))


def backward(model):
    x = bai.tensor(np.random.default_rng(rank).standard_normal((4, 64)).astype(np.float32))
    (model(x) ** 2).mean().backward()


def sent_bytes(entries) -> tuple[int, int]:
    """(bytes handed to collectives, bytes a ring sends per rank) of ``entries``."""
    handed = sent = 0
    for entry in entries:
        size = math.prod(entry.shape) * np.dtype(entry.dtype).itemsize
        if entry.op == "all_reduce":
            handed, sent = handed + size, sent + 2 * (n - 1) * size / n
        elif entry.op in ("reduce_scatter", "all_gather"):  # the ledger holds one rank's block
            handed, sent = handed + n * size, sent + (n - 1) * size
    return handed, round(sent)


def measure(step) -> tuple[int, int]:
    step()  # the first step makes optimizer state; the second is counted
    before = ledger()[-1].seq if ledger() else -1
    step()
    return sent_bytes([entry for entry in ledger() if entry.seq > before])


model = new_model()
P = sum(p.data.nbytes for p in model.parameters())
rows = []

plain = optim.Adam(model.parameters(), lr=1e-3)


def data_parallel():
    plain.zero_grad()
    backward(model)
    for param in model.parameters():
        all_reduce(param.grad, op="mean")
    plain.step()


rows.append(("data parallel", measure(data_parallel), 2 * (n - 1) / n * P, "all_reduce"))
for stage, factor in ((1, 3), (2, 2)):
    zero_model = new_model()
    zero = ShardedOptimizer(optim.Adam, zero_model.parameters(), stage=stage, lr=1e-3)

    def zero_step(zero=zero, zero_model=zero_model):
        zero.zero_grad()
        backward(zero_model)
        zero.step()

    how = "all_reduce + all_gather" if stage == 1 else "reduce_scatter + all_gather"
    rows.append((f"ZeRO-{stage}", measure(zero_step), factor * (n - 1) / n * P, how))
fsdp_model = new_model()
sharded = shard(fsdp_model, policy=(nn.Linear,), print_plan=False)
fsdp = optim.Adam(sharded.parameters(), lr=1e-3)


def fsdp_step():
    fsdp.zero_grad()
    backward(fsdp_model)
    sharded.finish_gradients()
    fsdp.step()


rows.append(("ZeRO-3", measure(fsdp_step), 3 * (n - 1) / n * P, "2 all_gather + reduce_scatter"))

failures = []
if rank == 0:
    print(f"{n} ranks, P = {P} bytes of float32 parameters")
    print("| strategy | collectives per step | handed to collectives | sent per rank (ring) "
          "| formula | measured / formula |")  # fmt: skip
    print("|---|---|---|---|---|---|")
for name, (handed, sent), formula, how in rows:
    if rank == 0:
        print(f"| {name} | {how} | {handed} | {sent} | {formula:.0f} | {sent / formula:.4f} |")
    allowance = 3 * (n - 1) / n * 4 * (n - 1) * 2 + 2 * (n - 1) / n * 8  # padding, the check
    if abs(sent - formula) > allowance:
        failures.append(f"{name}: sent {sent} bytes, formula {formula:.0f}")
for failure in failures:
    print("FAIL", failure)
if not failures:
    print(f"rank {rank}/{n}: communication volume ok (as the formula)")
sys.exit(1 if failures else 0)

"""Tensor parallelism: one Linear layer split by output columns across the ranks.

Rank r owns rows r*k..(r+1)*k of the weight (PyTorch layout (out, in)), so it computes k of the
output features. all_gather assembles the full output; in backward each rank differentiates only
its own columns, and the gradient of the input is summed over the ranks with all_reduce. The run
checks the result against one unsplit Linear.

    buildingai launch -n 2 examples/distributed/tensor_parallel.py
"""

from __future__ import annotations

import numpy as np

import buildingai as bai
from buildingai import nn
from buildingai.distributed import all_gather, all_reduce, get_rank, get_world_size
from buildingai.nn import functional as F

IN_FEATURES, OUT_FEATURES, BATCH = 32, 64, 8

rank, world = get_rank(), get_world_size()
if OUT_FEATURES % world:
    raise SystemExit(f"{OUT_FEATURES} output features do not split over {world} ranks")
columns = OUT_FEATURES // world

# the full layer, made identically on every rank (same seed), only to cut the shards and to check
bai.manual_seed(0)
full = nn.Linear(IN_FEATURES, OUT_FEATURES).to(bai.float64)
mine = slice(rank * columns, (rank + 1) * columns)
weight = bai.tensor(full.weight.numpy()[mine], requires_grad=True)  # (k, in)
bias = bai.tensor(full.bias.numpy()[mine], requires_grad=True)  # (k,)

rng = np.random.default_rng(1)
x = bai.tensor(rng.standard_normal((BATCH, IN_FEATURES)), requires_grad=True)  # same on every rank
target = bai.tensor(rng.standard_normal((BATCH, OUT_FEATURES)))

# ----- forward: my columns, then everyone's -------------------------------------------------------
local = F.linear(x, weight, bias)  # (B, k)
pieces = [bai.zeros((BATCH, columns), dtype="float64") for _ in range(world)]
all_gather(pieces, local.detach())
output = bai.cat(pieces, axis=1).requires_grad_()  # (B, out), a leaf: the loss's input
loss = ((output - target) ** 2).mean()

# ----- backward: the loss's gradient, cut to my columns, through my shard ------------------------
loss.backward()
local.backward(output.grad[:, mine])  # fills weight.grad, bias.grad and my part of x.grad
all_reduce(x.grad)  # the input fed every shard: its gradient is the sum over the ranks

# ----- check against the unsplit layer --------------------------------------------------------------
x_full = bai.tensor(x.numpy(), requires_grad=True)
reference = ((full(x_full) - target) ** 2).mean()
reference.backward()
errors = {
    "loss": abs(loss.item() - reference.item()),
    "weight.grad": np.abs(weight.grad.numpy() - full.weight.grad.numpy()[mine]).max(),
    "bias.grad": np.abs(bias.grad.numpy() - full.bias.grad.numpy()[mine]).max(),
    "x.grad": np.abs(x.grad.numpy() - x_full.grad.numpy()).max(),
}
print(f"rank {rank}/{world}: largest differences from one Linear: "
      + ", ".join(f"{name} {value:.1e}" for name, value in errors.items()))  # fmt: skip
assert max(errors.values()) < 1e-12

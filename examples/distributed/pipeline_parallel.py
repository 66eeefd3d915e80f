"""Pipeline parallelism with micro-batches: each rank owns one stage of the model, activations
flow forward from rank to rank with send/recv, gradients flow back the same way (a GPipe
schedule: every micro-batch forward, then every micro-batch backward, then one step).

    buildingai launch -n 2 examples/distributed/pipeline_parallel.py

The last stage computes the loss. The run checks the trained weights against the same model
trained in one process on whole batches.
"""

from __future__ import annotations

import numpy as np

import buildingai as bai
from buildingai import nn, optim
from buildingai.distributed import get_rank, get_world_size, recv, send
from buildingai.nn import functional as F

WIDTH, BATCH, MICRO_BATCHES, STEPS = 16, 32, 4, 5
rank, world = get_rank(), get_world_size()
micro = BATCH // MICRO_BATCHES


def make_stages(count: int) -> list:
    """The whole model as ``count`` stages, the same on every rank (one seed)."""
    bai.manual_seed(0)
    return [nn.Sequential(nn.Linear(WIDTH, WIDTH), nn.Tanh()).to(bai.float64) for _ in range(count)]


def batch(step: int):
    rng = np.random.default_rng(step)
    return rng.standard_normal((BATCH, WIDTH)), rng.standard_normal((BATCH, WIDTH))


stages = make_stages(world)
stage = stages[rank]  # this rank trains only its own stage
optimizer = optim.SGD(stage.parameters(), lr=0.1)
first, last = rank == 0, rank == world - 1

for step in range(STEPS):
    inputs, targets = batch(step)
    optimizer.zero_grad()
    saved = []  # (stage input, stage output) of each micro-batch, for its backward
    # ----- forward, micro-batch by micro-batch ------------------------------------------------------
    for m in range(MICRO_BATCHES):
        rows = slice(m * micro, (m + 1) * micro)
        if first:
            stage_input = bai.tensor(inputs[rows])
        else:
            stage_input = bai.zeros((micro, WIDTH), dtype="float64")
            recv(stage_input, src=rank - 1)
            stage_input.requires_grad_()
        stage_output = stage(stage_input)  # (micro, WIDTH)
        if last:
            # the mean over the whole batch: each micro-batch's loss carries its share
            stage_output = F.mse_loss(stage_output, bai.tensor(targets[rows])) / MICRO_BATCHES
        else:
            send(stage_output.detach(), dst=rank + 1)
        saved.append((stage_input, stage_output))
    # ----- backward, in reverse, gradients flowing to the previous rank -------------------------------
    for stage_input, stage_output in reversed(saved):
        if last:
            stage_output.backward()
        else:
            gradient = bai.zeros(stage_output.shape, dtype="float64")
            recv(gradient, src=rank + 1)
            stage_output.backward(gradient)
        if not first:
            send(stage_input.grad, dst=rank - 1)
    optimizer.step()  # the stage's gradients summed over the micro-batches

# ----- check: the same model trained in one process on whole batches --------------------------------
reference = make_stages(world)
model = nn.Sequential(*reference)
reference_optimizer = optim.SGD(model.parameters(), lr=0.1)
for step in range(STEPS):
    inputs, targets = batch(step)
    reference_optimizer.zero_grad()
    F.mse_loss(model(bai.tensor(inputs)), bai.tensor(targets)).backward()
    reference_optimizer.step()
difference = max(np.abs(a.numpy() - b.numpy()).max()
                 for a, b in zip(stage.parameters(), reference[rank].parameters()))  # fmt: skip
print(f"rank {rank}/{world}: stage {rank} after {STEPS} steps differs from one process by "
      f"{difference:.1e}")  # fmt: skip
assert difference < 1e-12

"""Data-parallel training of 20 steps that checkpoints every 5 and resumes from the last complete
checkpoint, written as a user would for ``buildingai launch --max-restarts``.

argv: CHECKPOINT_FOLDER RESULT_FILE MODE, MODE one of
  none    train without interruption
  once    rank 1 kills itself with SIGKILL at step 7 on the first start only
  always  rank 1 kills itself with SIGKILL at step 7 whenever the job runs on 2 ranks (its slot
          stays gone: the launcher must shrink the job to go on)
Rank 0 writes the final parameters to RESULT_FILE (.npz). The global batch is 8 samples at every
world size, so a run that shrinks sees the same samples in each step."""

import os
import signal
import sys

import numpy as np

import buildingai as bai
from buildingai import nn, optim
from buildingai.data import DataLoader, TensorDataset
from buildingai.distributed import (
    DistributedSampler,
    all_reduce,
    broadcast_parameters,
    elastic,
    get_rank,
    get_world_size,
    init_process_group,
)
from buildingai.nn import functional as F

folder, result, mode = sys.argv[1:4]
init_process_group(timeout=30)
rank, size = get_rank(), get_world_size()
STEPS, EVERY, GLOBAL_BATCH, KILL_AT = 20, 5, 8, 7

rng = np.random.default_rng(0)
inputs = rng.standard_normal((64, 6))
labels = rng.integers(0, 3, 64)
dataset = TensorDataset(bai.tensor(inputs), bai.tensor(labels))
sampler = DistributedSampler(dataset, shuffle=True, seed=11)
loader = DataLoader(dataset, batch_size=GLOBAL_BATCH // size, sampler=sampler)

bai.manual_seed(0)
model = nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 3)).to(bai.float64)
broadcast_parameters(model, src=0)
optimizer = optim.Adam(model.parameters(), lr=0.05)

checkpoints = elastic.CheckpointFolder(folder)
latest = checkpoints.latest()
step = 0
if latest is not None:
    state = latest.load()  # rank 0's file: the replicated state resumes any world size
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    sampler.load_state_dict(state["sampler"])
    step = latest.step
    print(f"rank {rank}/{size}: resumed at step {step} (restart {elastic.restart_count()})")

while step < STEPS:
    for x, y in loader:
        elastic.record_step(step)
        dies = mode == "always" and size == 2 or mode == "once" and elastic.restart_count() == 0
        if rank == 1 and step == KILL_AT and dies:
            os.kill(os.getpid(), signal.SIGKILL)
        optimizer.zero_grad()
        F.cross_entropy(model(x), y).backward()
        for param in model.parameters():
            all_reduce(param.grad, op="mean")
        optimizer.step()
        step += 1
        if step % EVERY == 0:
            checkpoints.save(step, {"model": model.state_dict(), "sampler": sampler.state_dict(),
                                    "optimizer": optimizer.state_dict()})  # fmt: skip
        if step == STEPS:
            break
    else:  # the epoch is over: the next one has a new order
        sampler.set_epoch(sampler.epoch + 1)

if rank == 0:
    arrays = {name: param.numpy() for name, param in model.state_dict().items()}
    np.savez(result + ".partial.npz", **arrays)
    os.replace(result + ".partial.npz", result)
print(f"rank {rank}/{size}: finished {STEPS} steps")

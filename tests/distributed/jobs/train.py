"""Data-parallel training written as in the issue, on any number of processes, checked against
one process training on the combined batch. Prints one "ok" line per rank."""

import sys

import numpy as np

import buildingai as bai
from buildingai import nn, optim
from buildingai.distributed import (
    all_reduce,
    all_reduce_gradients,
    broadcast_parameters,
    get_rank,
    get_world_size,
    init_process_group,
)
from buildingai.nn import functional as F

init_process_group(timeout=30)
rank, size = get_rank(), get_world_size()
COMBINED, STEPS = 8, 4  # the combined batch splits evenly over 1, 2 and 4 ranks


class Classifier(nn.Module):
    """A model whose forward returns the loss of a batch, as the issue's loop calls it."""

    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 16), nn.Tanh(),
                                 nn.Linear(16, 3))  # fmt: skip

    def forward(self, batch):
        images, labels = batch
        return F.cross_entropy(self.net(images), labels)


def combined_batch(step):
    rng = np.random.default_rng(step)
    images = rng.standard_normal((COMBINED, 6)).astype(np.float64)
    labels = rng.integers(0, 3, COMBINED)
    return images, labels


def shard(step):
    images, labels = combined_batch(step)
    per_rank = COMBINED // size
    part = slice(rank * per_rank, (rank + 1) * per_rank)
    return bai.tensor(images[part]), bai.tensor(labels[part])


def new_model():
    bai.manual_seed(rank)  # a different start on every rank: broadcast_parameters fixes it
    model = Classifier().to(bai.float64)
    broadcast_parameters(model, src=0)
    return model


# ----- the loop ---------------------------------------------------------------------------
model = new_model()
optimizer = optim.SGD(model.parameters(), lr=0.5)
for step in range(STEPS):
    batch = shard(step)
    optimizer.zero_grad()
    loss = model(batch)
    loss.backward()
    for param in model.parameters():
        all_reduce(param.grad, op="mean")
    optimizer.step()

# ----- the bucketed helper: gradients reduced during backward -------------------------------------
bucketed = new_model()
bucketed_optimizer = optim.SGD(bucketed.parameters(), lr=0.5)
reducer = all_reduce_gradients(bucketed, bucket_bytes=600)  # small: several buckets
for step in range(STEPS):
    bucketed_optimizer.zero_grad()
    bucketed(shard(step)).backward()
    reducer.wait()
    bucketed_optimizer.step()
reducer.remove()

# ----- one process, the combined batch ------------------------------------------------------------
bai.manual_seed(0)
single = Classifier().to(bai.float64)
single_optimizer = optim.SGD(single.parameters(), lr=0.5)
for step in range(STEPS):
    images, labels = combined_batch(step)
    single_optimizer.zero_grad()
    single((bai.tensor(images), bai.tensor(labels))).backward()
    single_optimizer.step()

failures = []
for (name, expected), got, got_bucketed in zip(single.named_parameters(), model.parameters(),
                                               bucketed.parameters()):  # fmt: skip
    for label, values in (("loop", got), ("bucketed", got_bucketed)):
        if not np.allclose(values.numpy(), expected.numpy(), rtol=1e-10, atol=1e-12):
            error = np.abs(values.numpy() - expected.numpy()).max()
            failures.append(f"rank {rank}: {label} {name} differs by {error:.3g}")
for failure in failures:
    print("FAIL", failure)
if not failures:
    print(f"rank {rank}/{size}: training ok (matches one process on the combined batch)")
sys.exit(1 if failures else 0)

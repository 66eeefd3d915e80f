"""Gradient compression: send fewer bytes per step, written in the training loop.

- fp16: each gradient travels as float16 (half the bytes) and is averaged in float32.
- top-k with error feedback: each rank sends only its k largest gradient entries (values and
  indices); what it did not send is kept and added to its next gradient, so nothing is lost,
  only delayed.

    buildingai launch -n 2 examples/distributed/gradient_compression.py [--ratio 0.05]

It trains the same regression three times (no compression, fp16, top-k) and prints each final
loss beside the bytes each rank sent per step.
"""

from __future__ import annotations

import argparse

import numpy as np

import buildingai as bai
from buildingai import nn, optim
from buildingai.distributed import all_gather, all_reduce, get_rank, get_world_size
from buildingai.nn import functional as F

rank, world = get_rank(), get_world_size()


def plain_mean(param, state) -> int:
    all_reduce(param.grad, op="mean")
    return param.grad.data.nbytes


def fp16_mean(param, state) -> int:
    half = bai.tensor(param.grad.numpy().astype(np.float16))  # (same shape), half the bytes
    all_reduce(half, op="sum")
    param.grad = bai.tensor(half.numpy().astype(np.float32) / world)
    return half.data.nbytes


def top_k_mean(param, state) -> int:
    """Send the k largest entries of (gradient + what was left unsent before)."""
    corrected = param.grad.numpy().reshape(-1) + state.get(id(param), 0.0)  # (n,)
    k = max(1, int(state["ratio"] * corrected.size))
    chosen = np.argpartition(np.abs(corrected), -k)[-k:]  # (k,) indices
    unsent = corrected.copy()
    unsent[chosen] = 0.0
    state[id(param)] = unsent  # error feedback: added to the next step's gradient
    values, indices = bai.tensor(corrected[chosen]), bai.tensor(chosen.astype(np.int64))
    all_values = [bai.zeros_like(values) for _ in range(world)]
    all_indices = [bai.zeros_like(indices) for _ in range(world)]
    all_gather(all_values, values)
    all_gather(all_indices, indices)
    dense = np.zeros_like(corrected)
    for rank_values, rank_indices in zip(all_values, all_indices):
        np.add.at(dense, rank_indices.numpy(), rank_values.numpy())
    param.grad = bai.tensor((dense / world).reshape(param.shape).astype(np.float32))
    return values.data.nbytes + indices.data.nbytes


def train(average, ratio: float, steps: int) -> tuple[float, float]:
    """Final loss on all data, and bytes this rank sent per step."""
    rng = np.random.default_rng(0)
    inputs = rng.standard_normal((512, 64)).astype(np.float32)
    targets = (inputs @ rng.standard_normal((64, 8)) + 0.1).astype(np.float32)
    mine = slice(rank * 512 // world, (rank + 1) * 512 // world)  # this rank's share
    bai.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 128), nn.Tanh(), nn.Linear(128, 8))
    optimizer = optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    state, sent = {"ratio": ratio}, 0
    for _ in range(steps):
        optimizer.zero_grad()
        loss = F.mse_loss(model(bai.tensor(inputs[mine])), bai.tensor(targets[mine]))
        loss.backward()
        for param in model.parameters():
            sent += average(param, state)
        optimizer.step()
    with bai.no_grad():
        final = F.mse_loss(model(bai.tensor(inputs)), bai.tensor(targets)).item()
    return final, sent / max(steps, 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ratio", type=float, default=0.05, help="top-k: fraction sent")
    parser.add_argument("--steps", type=int, default=300)
    args = parser.parse_args()
    untrained, _ = train(plain_mean, args.ratio, 0)
    if rank == 0:
        print(f"before training: loss {untrained:.4f}")
    for name, average in (("none", plain_mean), ("fp16", fp16_mean), ("top-k", top_k_mean)):
        loss, sent = train(average, args.ratio, args.steps)
        if rank == 0:
            print(f"{name:>6}: final loss {loss:.4f}, {sent / 1024:.1f} KiB sent per step per rank")


if __name__ == "__main__":
    main()

"""Data-parallel MNIST: every rank trains a copy of the model on its share of each batch, and the
training loop itself averages the gradients with one all_reduce per parameter.

    python examples/distributed/data_parallel_mnist.py                      # one process
    buildingai launch -n 2 examples/distributed/data_parallel_mnist.py      # two ranks
    buildingai launch -n 2 examples/distributed/data_parallel_mnist.py --bucketed
    ... --synthetic     # MNIST-shaped random data, for a machine without the dataset

The global batch is --batch-size; each of the N ranks takes batch-size / N of it (the
DistributedSampler deals the shares), so 1, 2 or 4 processes train the same model.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import buildingai as bai
from buildingai import nn, optim
from buildingai.data import DataLoader, TensorDataset
from buildingai.distributed import (
    DistributedSampler,
    all_reduce,
    all_reduce_gradients,
    broadcast_parameters,
    get_rank,
    get_world_size,
    init_process_group,
)
from buildingai.nn import functional as F


class Classifier(nn.Module):
    """An MLP whose forward takes a batch (images, labels) and returns its mean loss."""

    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10))

    def forward(self, batch):
        images, labels = batch  # (B, 1, 28, 28), (B,)
        return F.cross_entropy(self.net(images), labels)


def training_set(synthetic: bool):
    if synthetic:
        rng = np.random.default_rng(0)
        images = rng.random((6000, 1, 28, 28), dtype=np.float32)
        return TensorDataset(images, rng.integers(0, 10, 6000))
    from buildingai.data.datasets import MNIST

    return MNIST("train")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch-size", type=int, default=128, help="the global batch")
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument("--bucketed", action="store_true", help="all_reduce_gradients instead")
    parser.add_argument("--synthetic", action="store_true")
    args = parser.parse_args()

    init_process_group()
    rank, world = get_rank(), get_world_size()
    dataset = training_set(args.synthetic)
    sampler = DistributedSampler(dataset, seed=0)  # this rank's share, the same order everywhere
    loader = DataLoader(dataset, batch_size=args.batch_size // world, sampler=sampler)

    bai.manual_seed(0)
    model = Classifier()
    broadcast_parameters(model, src=0)  # one starting point for every rank
    optimizer = optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    reducer = all_reduce_gradients(model, bucket_bytes=1 << 20) if args.bucketed else None

    step, started, epoch = 0, time.perf_counter(), 0
    while step < args.steps:
        sampler.set_epoch(epoch)
        for batch in loader:
            optimizer.zero_grad()
            loss = model(batch)
            loss.backward()
            if reducer is not None:
                reducer.wait()  # the buckets started during backward
            else:
                for param in model.parameters():
                    all_reduce(param.grad, op="mean")
            optimizer.step()
            step += 1
            if rank == 0 and step % 20 == 0:
                print(f"step {step}: loss {loss.item():.4f} (rank 0's share)", flush=True)
            if step == args.steps:
                break
        epoch += 1
    seconds = time.perf_counter() - started
    if rank == 0:
        images_per_second = args.steps * (args.batch_size // world) * world / seconds
        print(f"{world} rank(s): {args.steps} steps in {seconds:.2f} s, "
              f"{images_per_second:.0f} images/s")  # fmt: skip


if __name__ == "__main__":
    main()

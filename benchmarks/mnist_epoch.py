"""Time per epoch of the MNIST MLP (784-256-256-10, Adam, batch 128): BuildingAI and PyTorch
side by side in one run, from the same initial weights, on the same batches in the same order.

Run: ``python -m benchmarks.mnist_epoch [--quick] [--epochs N] [--threads N] [--json FILE]``.
``--quick`` uses synthetic MNIST-shaped data (1,024 images) for tests; the full mode trains on
the real 60,000 MNIST training images. The two frameworks alternate epoch by epoch so that noise
from a shared machine hits both alike; reported: the median epoch time of each and their ratio
(BuildingAI / PyTorch), plus each framework's training loss after its last epoch.

Measured here (2 CPU cores, OpenBLAS 0.3.31, torch 2.13.0 CPU, real MNIST, 2 epochs each): with
``--threads 1`` 2.49 s vs 2.62 s per epoch, ratio 0.95; with the default threads, ratio 0.94.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import numpy as np

from benchmarks.common import environment, format_table

from .common import accelerate

BATCH = 128
SIZES = (784, 256, 256, 10)


def load_data(quick: bool) -> tuple[np.ndarray, np.ndarray]:
    """images (N, 784) float32 in [0, 1], labels (N,) int64."""
    if quick:
        rng = np.random.default_rng(0)
        return rng.random((1024, 784), dtype=np.float32), rng.integers(0, 10, 1024)
    from buildingai.data.datasets import MNIST

    train = MNIST("train")
    return train.images.reshape(-1, 784).astype(np.float32) / 255, train.labels


def initial_weights(seed: int = 0) -> list[tuple[np.ndarray, np.ndarray]]:
    """(weight (out, in), bias (out,)) per layer, PyTorch's default initialisation."""
    rng = np.random.default_rng(seed)
    layers = []
    for fan_in, fan_out in zip(SIZES[:-1], SIZES[1:]):
        bound = 1 / np.sqrt(fan_in)
        layers.append((rng.uniform(-bound, bound, (fan_out, fan_in)).astype(np.float32),
                       rng.uniform(-bound, bound, fan_out).astype(np.float32)))  # fmt: skip
    return layers


def buildingai_trainer(weights):
    import buildingai as bai
    from buildingai import nn, optim
    from buildingai.nn import functional as F

    model = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(),
                          nn.Linear(256, 10))  # fmt: skip
    linears = [m for m in model if isinstance(m, nn.Linear)]
    for layer, (weight, bias) in zip(linears, weights):
        layer.weight.data[...] = weight
        layer.bias.data[...] = bias
    optimizer = optim.Adam(model.parameters(), lr=1e-3)

    def epoch(images, labels, order) -> float:
        loss = None
        for start in range(0, len(order), BATCH):
            batch = order[start : start + BATCH]
            x, y = bai.tensor(images[batch]), bai.tensor(labels[batch])
            loss = F.cross_entropy(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        return loss.item()

    return epoch


def torch_trainer(weights):
    import torch

    model = torch.nn.Sequential(torch.nn.Linear(784, 256), torch.nn.ReLU(),
                                torch.nn.Linear(256, 256), torch.nn.ReLU(),
                                torch.nn.Linear(256, 10))  # fmt: skip
    linears = [m for m in model if isinstance(m, torch.nn.Linear)]
    with torch.no_grad():
        for layer, (weight, bias) in zip(linears, weights):
            layer.weight.copy_(torch.from_numpy(weight))
            layer.bias.copy_(torch.from_numpy(bias))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)

    def epoch(images, labels, order) -> float:
        loss = None
        for start in range(0, len(order), BATCH):
            batch = order[start : start + BATCH]
            x, y = torch.from_numpy(images[batch]), torch.from_numpy(labels[batch])
            loss = torch.nn.functional.cross_entropy(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        return loss.item()

    return epoch


def run(quick: bool = False, epochs: int = 2, threads: int | None = None) -> dict:
    """Train both models ``epochs`` epochs, alternating; returns timings and final losses.
    ``threads`` limits BLAS and torch threads for this call only."""
    if threads is None:
        return _run(quick, epochs)
    import torch
    from threadpoolctl import threadpool_limits

    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        with threadpool_limits(threads):
            return _run(quick, epochs)
    finally:
        torch.set_num_threads(previous)


def _run(quick: bool, epochs: int) -> dict:
    images, labels = load_data(quick)
    weights = initial_weights()
    trainers = {"buildingai": buildingai_trainer(weights), "pytorch": torch_trainer(weights)}
    times: dict[str, list[float]] = {name: [] for name in trainers}
    losses: dict[str, float] = {}
    for epoch in range(epochs):
        order = np.random.default_rng(epoch).permutation(len(labels))
        for name, train_epoch in trainers.items():
            started = time.perf_counter()
            losses[name] = train_epoch(images, labels, order)
            times[name].append(time.perf_counter() - started)
    medians = {name: statistics.median(values) for name, values in times.items()}
    return {
        "data": "synthetic (1024, 784)" if quick else "MNIST train (60000, 784)",
        "epochs": epochs,
        "seconds_per_epoch": medians,
        "all_epoch_seconds": times,
        "final_loss": losses,
        "ratio": medians["buildingai"] / medians["pytorch"],
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="synthetic data, for tests")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--threads", type=int, default=None, help="BLAS and torch threads")
    parser.add_argument("--json", default=None, help="also write the results to this file")
    args = parser.parse_args(argv)
    accelerate()  # buildingai.accel on unless BUILDINGAI_ACCEL=0
    result = run(quick=args.quick, epochs=args.epochs, threads=args.threads)
    print(json.dumps(environment(), indent=1))
    seconds = result["seconds_per_epoch"]
    print(format_table(
        ["framework", "s / epoch (median)", "final loss"],
        [[name, f"{seconds[name]:.3f}", f"{result['final_loss'][name]:.4f}"] for name in seconds],
    ))  # fmt: skip
    print(f"\nratio buildingai / pytorch: {result['ratio']:.2f} ({result['data']})")
    if args.json:
        with open(args.json, "w") as handle:
            json.dump({"environment": environment(), **result}, handle, indent=1)


if __name__ == "__main__":
    main()

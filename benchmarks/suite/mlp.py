"""Workload ``mlp``: 784-256-256-10 with ReLU, cross-entropy and Adam(lr=1e-3), batch 128 —
one full training step (forward, backward, optimizer step)."""

from __future__ import annotations

import numpy as np

import buildingai as bai

from .frameworks import BuildingAIStep, TorchStep, load_buildingai, torch_state_as_numpy
from .numpy_reference import NumpyMLP

ADAM = True  # the cross-check leaves out Adam steps set by round-off gradients
NAME = "mlp"
SIZES = {
    "full": dict(widths=(784, 256, 256, 10), batch=128),
    "quick": dict(widths=(20, 16, 16, 10), batch=8),
}
LR = 1e-3


def sizes(quick: bool) -> dict:
    return SIZES["quick" if quick else "full"]


def torch_model(widths, seed: int = 0):
    import torch

    torch.manual_seed(seed)
    layers = []
    for index, (fan_in, fan_out) in enumerate(zip(widths[:-1], widths[1:])):
        layers.append(torch.nn.Linear(fan_in, fan_out))
        if index < len(widths) - 2:
            layers.append(torch.nn.ReLU())
    return torch.nn.Sequential(*layers)


def buildingai_model(widths):
    layers = []
    for index, (fan_in, fan_out) in enumerate(zip(widths[:-1], widths[1:])):
        layers.append(bai.nn.Linear(fan_in, fan_out))
        if index < len(widths) - 2:
            layers.append(bai.nn.ReLU())
    return bai.nn.Sequential(*layers)


def batch(widths, size: int, seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((size, widths[0])).astype(np.float32)
    target = rng.integers(0, widths[-1], size).astype(np.int64)
    return x, target


def initial_weights(widths) -> dict:
    return torch_state_as_numpy(torch_model(widths))


def steppers(quick: bool) -> dict:
    """The three implementations of one training step, from the same weights and batch."""
    import torch

    config = sizes(quick)
    widths = config["widths"]
    weights = initial_weights(widths)
    x, target = batch(widths, config["batch"])
    ours = load_buildingai(buildingai_model(widths), weights)
    theirs = torch_model(widths)
    theirs.load_state_dict({k: torch.from_numpy(v.copy()) for k, v in weights.items()})
    return {
        "buildingai": BuildingAIStep(ours, bai.optim.Adam(ours.parameters(), lr=LR), x, target),
        "pytorch": TorchStep(theirs, torch.optim.Adam(theirs.parameters(), lr=LR), x, target),
        "numpy": NumpyMLP(weights, x, target, lr=LR),
    }

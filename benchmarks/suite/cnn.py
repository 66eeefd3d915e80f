"""Workload ``cnn``: conv3x3(1->32) ReLU, conv3x3(32->64) ReLU, maxpool 2, flatten,
Linear(9216->128) ReLU, Linear(128->10), cross-entropy, SGD(lr=0.01, momentum=0.9), batch 64 of
1x28x28 images — one full training step."""

from __future__ import annotations

import numpy as np

import buildingai as bai

from .frameworks import BuildingAIStep, TorchStep, load_buildingai, torch_state_as_numpy
from .numpy_reference import NumpyCNN

ADAM = False  # the cross-check leaves out Adam steps set by round-off gradients
NAME = "cnn"
SIZES = {
    "full": dict(image=28, channels=(1, 32, 64), hidden=128, classes=10, batch=64),
    "quick": dict(image=10, channels=(1, 4, 8), hidden=16, classes=10, batch=4),
}
LR, MOMENTUM = 0.01, 0.9


def sizes(quick: bool) -> dict:
    return SIZES["quick" if quick else "full"]


def _flat_features(config) -> int:
    pooled = (config["image"] - 4) // 2
    return config["channels"][2] * pooled * pooled


def torch_model(config, seed: int = 0):
    import torch
    from torch import nn

    torch.manual_seed(seed)
    c0, c1, c2 = config["channels"]
    return nn.Sequential(
        nn.Conv2d(c0, c1, 3),
        nn.ReLU(),
        nn.Conv2d(c1, c2, 3),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(_flat_features(config), config["hidden"]),
        nn.ReLU(),
        nn.Linear(config["hidden"], config["classes"]),
    )


def buildingai_model(config):
    nn = bai.nn
    c0, c1, c2 = config["channels"]
    return nn.Sequential(
        nn.Conv2d(c0, c1, 3),
        nn.ReLU(),
        nn.Conv2d(c1, c2, 3),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(_flat_features(config), config["hidden"]),
        nn.ReLU(),
        nn.Linear(config["hidden"], config["classes"]),
    )


def batch(config, size: int, seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    image = config["image"]
    x = rng.standard_normal((size, config["channels"][0], image, image)).astype(np.float32)
    target = rng.integers(0, config["classes"], size).astype(np.int64)
    return x, target


def initial_weights(config) -> dict:
    return torch_state_as_numpy(torch_model(config))


def steppers(quick: bool) -> dict:
    import torch

    config = sizes(quick)
    weights = initial_weights(config)
    x, target = batch(config, config["batch"])
    ours = load_buildingai(buildingai_model(config), weights)
    theirs = torch_model(config)
    theirs.load_state_dict({k: torch.from_numpy(v.copy()) for k, v in weights.items()})
    return {
        "buildingai": BuildingAIStep(
            ours, bai.optim.SGD(ours.parameters(), lr=LR, momentum=MOMENTUM), x, target
        ),
        "pytorch": TorchStep(
            theirs, torch.optim.SGD(theirs.parameters(), lr=LR, momentum=MOMENTUM), x, target
        ),
        "numpy": NumpyCNN(weights, x, target, lr=LR, momentum=MOMENTUM),
    }

"""Workload ``resnet18``: ResNet-18 for 32x32 images (``resnet18_model.py``, the CIFAR-10 form,
11.2 M parameters, batch norm in training mode) on batches of 32 random 3x32x32 images and 10
classes, cross-entropy, SGD (lr 0.1, momentum 0.9, weight decay 5e-4) — one training step;
reported in images per second.

The model is one source text, written for PyTorch; BuildingAI runs it with its three import
lines changed and nothing else. The cross-check compares the batch norms' running statistics
too (they are in the state dict).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .from_source import SourceStep, library_module, load, load_weights, state_as_numpy

ADAM = False
NAME = "resnet18"
UNIT = "images"
SOURCE = Path(__file__).with_name("resnet18_model.py")
SIZES = {
    "full": dict(image=32, width=64, classes=10, batch=32),
    "quick": dict(image=32, width=4, classes=10, batch=2),  # the pooling needs 32x32 images
}
LR, MOMENTUM, WEIGHT_DECAY = 0.1, 0.9, 5e-4


def sizes(quick: bool) -> dict:
    return SIZES["quick" if quick else "full"]


def items_per_step(config: dict) -> int:
    """Training images in one step's batch."""
    return config["batch"]


def describe(config: dict) -> str:
    return f"{config['image']}x{config['image']} images, width {config['width']}, batch {config['batch']}"


def batch(config: dict, seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    size = (config["batch"], 3, config["image"], config["image"])
    images = rng.standard_normal(size).astype(np.float32)
    return images, rng.integers(0, config["classes"], config["batch"])


def build(library: str, config: dict, weights: dict | None = None, seed: int = 0) -> SourceStep:
    """The model, its optimizer and one step, on ``library``, from ``weights`` (else the
    library's own initialisation, seeded)."""
    module = load(SOURCE, library)
    library_module(library).manual_seed(seed)
    model = module.ResNet18(config["classes"], config["width"])
    if weights is not None:
        load_weights(library, model, weights)
    optimizer = module.make_optimizer(model, LR, MOMENTUM, WEIGHT_DECAY)

    def make_function(net):
        return lambda inputs, targets: module.train_step(net, optimizer, inputs, targets)

    return SourceStep(library, model, optimizer, make_function, batch(config))


def initial_weights(config: dict) -> dict:
    """PyTorch's initialisation of the model: the one source every implementation loads."""
    return state_as_numpy(build("pytorch", config).model)


def steppers(quick: bool) -> dict:
    config = sizes(quick)
    weights = initial_weights(config)
    return {library: build(library, config, weights) for library in ("buildingai", "pytorch")}


# PyTorch's own float32 step differs from a float64 one by up to several percent of a tensor's
# largest value here (batch norm's backward subtracts means of nearly equal terms, 17 times
# over, on random images and labels), and on which tensor the error lands changes with the order
# of every sum. BuildingAI may miss the float64 step by this many times the largest error
# PyTorch's float32 step makes on any tensor: a wrong op still misses by far more. The check
# compares it with PyTorch's float32 step, itself that error away from the float64 one, so each
# tensor may differ from it by one time more (``cross_check_options``). Three: on an AVX2 CPU
# torch.compile's float32 step differed from PyTorch eager's by 3.06 times that error.
FLOAT32_ERROR_FACTOR = 3.0


def cross_check_options(quick: bool) -> dict:
    """The cross-check's per-tensor tolerances against PyTorch's float32 step: one more than
    ``FLOAT32_ERROR_FACTOR`` times PyTorch's largest float32 error after one step, measured
    against the same step in float64."""
    config = sizes(quick)
    weights = initial_weights(config)
    single = build("pytorch", config, weights)
    double = build("pytorch", config, weights)
    double.model.double()
    double.fixed[0] = double.fixed[0].double()
    single.step()
    double.step()
    ours, exact = single.state_dict(), double.state_dict()
    worst = max(
        float(np.max(np.abs(ours[key] - value))) / (float(np.max(np.abs(value))) or 1.0)
        for key, value in exact.items()
    )
    return {"tolerances": {key: (FLOAT32_ERROR_FACTOR + 1) * worst for key in exact}}

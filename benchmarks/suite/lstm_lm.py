"""Workload ``lstm-lm``: a word-level LSTM language model (``lstm_lm_model.py``: vocabulary
10,000 — Penn Treebank's —, embedding and hidden width 256, 2 layers, decoder tied to the
embedding, no dropout) trained by truncated backpropagation through 35 steps on batches of 20
streams, with the hidden state carried from step to step, gradient clipping at 0.25 and SGD
(lr 20) — one training step; reported in training tokens per second.

The model is one source text, written for PyTorch; BuildingAI runs it with its three import
lines changed and nothing else. Dropout is 0: random masks could not be the same in both
libraries, and the cross-check compares a step of each from the same state.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .from_source import SourceStep, library_module, load, load_weights, state_as_numpy

ADAM = False
NAME = "lstm-lm"
UNIT = "tokens"
SOURCE = Path(__file__).with_name("lstm_lm_model.py")
SIZES = {
    "full": dict(vocab=10000, width=256, layers=2, bptt=35, batch=20),
    "quick": dict(vocab=50, width=16, layers=2, bptt=5, batch=3),
}
LR, CLIP = 20.0, 0.25


def sizes(quick: bool) -> dict:
    return SIZES["quick" if quick else "full"]


def items_per_step(config: dict) -> int:
    """Training tokens in one step's batch."""
    return config["batch"] * config["bptt"]


def describe(config: dict) -> str:
    return (
        f"{config['layers']} layers, width {config['width']}, BPTT {config['bptt']}, "
        f"batch {config['batch']}"
    )


def batch(config: dict, seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """``data`` (bptt, batch) token ids and ``targets``, the next tokens, flattened as the
    example's get_batch returns them."""
    rng = np.random.default_rng(seed)
    text = rng.integers(0, config["vocab"], (config["bptt"] + 1, config["batch"]))
    return text[:-1].copy(), text[1:].reshape(-1).copy()


def build(library: str, config: dict, weights: dict | None = None, seed: int = 0) -> SourceStep:
    """The model, its optimizer and one step, on ``library``, from ``weights`` (else the
    library's own initialisation, seeded); the hidden state starts at zero."""
    module = load(SOURCE, library)
    library_module(library).manual_seed(seed)
    width = config["width"]
    model = module.RNNModel(
        config["vocab"], width, width, config["layers"], dropout=0.0, tie_weights=True
    )
    if weights is not None:
        load_weights(library, model, weights)
    optimizer = module.make_optimizer(model, LR)

    def make_function(net):
        def step(data, targets, h, c):
            loss, (h, c) = module.train_step(net, optimizer, data, targets, (h, c), CLIP)
            return loss, h, c

        return step

    zeros = np.zeros((config["layers"], config["batch"], width), np.float32)
    return SourceStep(library, model, optimizer, make_function, batch(config), (zeros, zeros))


def initial_weights(config: dict) -> dict:
    """PyTorch's initialisation of the model: the one source every implementation loads."""
    return state_as_numpy(build("pytorch", config).model)


def steppers(quick: bool) -> dict:
    config = sizes(quick)
    weights = initial_weights(config)
    return {library: build(library, config, weights) for library in ("buildingai", "pytorch")}

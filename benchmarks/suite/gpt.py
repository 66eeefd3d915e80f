"""Workload ``gpt``: a nanoGPT-style character language model (``gpt_model.py``: 4 layers,
4 heads, width 128, context 64, vocabulary 65, no dropout) trained on batches of 16 sequences
with nanoGPT's AdamW (lr 1e-3, betas (0.9, 0.99), weight decay 0.1 on the 2-D weights only)
and gradient clipping at 1.0 — one training step; reported in training tokens per second.

The model is one source text, written for PyTorch; BuildingAI runs it with its three import
lines changed and nothing else. Dropout is 0 (nanoGPT's default): random masks could not be the
same in both libraries, and the cross-check compares a step of each from the same state.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .from_source import SourceStep, library_module, load, load_weights, state_as_numpy

ADAM = True  # the cross-check leaves out Adam steps set by round-off gradients
# Adam's first step is lr * g / (|g| + eps) with eps 1e-8: for |g| up to ~100 eps the step still
# moves with g, by lr * eps / (|g| + eps)**2 per unit of g. Here many gradients are that small
# (the key bias's true gradient is 0; the causal attention leaves some weight entries nearly
# untouched), and float32 sums of a thousand tokens' terms differ between the libraries by a few
# parts in 1e3 of such a gradient: those entries are round-off and left out (and counted).
ADAM_NOISE_GRADIENT = 1e-6
NAME = "gpt"
UNIT = "tokens"
SOURCE = Path(__file__).with_name("gpt_model.py")
SIZES = {
    "full": dict(block_size=64, vocab_size=65, n_layer=4, n_head=4, n_embd=128, batch=16),
    "quick": dict(block_size=8, vocab_size=13, n_layer=2, n_head=2, n_embd=16, batch=2),
}
LR, BETAS, WEIGHT_DECAY, GRAD_CLIP = 1e-3, (0.9, 0.99), 0.1, 1.0


def sizes(quick: bool) -> dict:
    return SIZES["quick" if quick else "full"]


def items_per_step(config: dict) -> int:
    """Training tokens in one step's batch."""
    return config["batch"] * config["block_size"]


def describe(config: dict) -> str:
    return (
        f"{config['n_layer']} layers, width {config['n_embd']}, context {config['block_size']}, "
        f"batch {config['batch']}"
    )


def batch(config: dict, seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """Token ids ``X`` (batch, context) and the next tokens ``Y``, as nanoGPT's get_batch."""
    rng = np.random.default_rng(seed)
    text = rng.integers(0, config["vocab_size"], (config["batch"], config["block_size"] + 1))
    return text[:, :-1].copy(), text[:, 1:].copy()


def _model_config(module, config: dict):
    keys = ("block_size", "vocab_size", "n_layer", "n_head", "n_embd")
    return module.GPTConfig(**{k: config[k] for k in keys}, dropout=0.0, bias=True)


def build(library: str, config: dict, weights: dict | None = None, seed: int = 0) -> SourceStep:
    """The model, its optimizer and one step, on ``library``, from ``weights`` (else the
    source's own initialisation, seeded)."""
    module = load(SOURCE, library)
    library_module(library).manual_seed(seed)
    model = module.GPT(_model_config(module, config))
    if weights is not None:
        load_weights(library, model, weights)
    optimizer = model.configure_optimizers(WEIGHT_DECAY, LR, BETAS, "cpu")

    def make_function(net):
        return lambda X, Y: module.train_step(net, optimizer, X, Y, GRAD_CLIP)

    return SourceStep(library, model, optimizer, make_function, batch(config))


def initial_weights(config: dict) -> dict:
    """PyTorch's initialisation of the model: the one source every implementation loads."""
    return state_as_numpy(build("pytorch", config).model)


def steppers(quick: bool) -> dict:
    config = sizes(quick)
    weights = initial_weights(config)
    return {library: build(library, config, weights) for library in ("buildingai", "pytorch")}

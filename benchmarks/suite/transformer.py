"""Workload ``transformer``: a text classifier — token embeddings (vocabulary 1000) plus learned
positions, a 2-layer pre-LayerNorm Transformer encoder (d_model 128, 4 heads, FFN 512,
tanh-GELU, no dropout) with a final LayerNorm, mean over positions, Linear to 2 classes;
cross-entropy and AdamW(lr=1e-3, weight_decay=0.01); batch 32 of 64 tokens — one training
step."""

from __future__ import annotations

import numpy as np

import buildingai as bai

from .frameworks import BuildingAIStep, TorchStep, load_buildingai, torch_state_as_numpy
from .numpy_reference import NumpyTransformer

ADAM = True  # the cross-check leaves out Adam steps set by round-off gradients
NAME = "transformer"
SIZES = {
    "full": dict(vocab=1000, length=64, width=128, heads=4, ffn=512, layers=2, classes=2, batch=32),
    "quick": dict(vocab=50, length=8, width=16, heads=2, ffn=32, layers=2, classes=2, batch=4),
}
LR, WEIGHT_DECAY = 1e-3, 0.01


def sizes(quick: bool) -> dict:
    return SIZES["quick" if quick else "full"]


def torch_model(config, seed: int = 0, approximate: str = "tanh"):
    import torch
    from torch import nn

    def gelu_tanh(x):
        return nn.functional.gelu(x, approximate=approximate)

    class Classifier(nn.Module):
        def __init__(self):
            super().__init__()
            self.embedding = nn.Embedding(config["vocab"], config["width"])
            self.positions = nn.Embedding(config["length"], config["width"])
            nn.init.normal_(self.positions.weight, std=0.02)
            layer = nn.TransformerEncoderLayer(
                config["width"],
                config["heads"],
                config["ffn"],
                dropout=0.0,
                activation=gelu_tanh,
                batch_first=True,
                norm_first=True,
            )
            self.encoder = nn.TransformerEncoder(
                layer,
                config["layers"],
                norm=nn.LayerNorm(config["width"]),
                enable_nested_tensor=False,
            )
            self.head = nn.Linear(config["width"], config["classes"])

        def forward(self, ids):  # (B, S) -> (B, classes)
            x = self.embedding(ids) + self.positions.weight[: ids.shape[1]]  # (B, S, D)
            return self.head(self.encoder(x).mean(dim=1))

    torch.manual_seed(seed)
    return Classifier()


def buildingai_model(config, approximate: str = "tanh"):
    nn = bai.nn
    from buildingai.nn.embedding import Embedding

    def gelu_tanh(x):
        return bai.gelu(x, approximate=approximate)

    class Classifier(nn.Module):
        def __init__(self):
            super().__init__()
            self.embedding = Embedding(config["vocab"], config["width"])
            self.positions = nn.LearnedPositionalEmbedding(
                config["length"], config["width"], batch_first=True
            )
            layer = nn.TransformerEncoderLayer(
                config["width"],
                config["heads"],
                config["ffn"],
                dropout=0.0,
                activation=gelu_tanh,
                batch_first=True,
                norm_first=True,
            )
            from buildingai.nn.norm import LayerNorm

            self.encoder = nn.TransformerEncoder(
                layer, config["layers"], norm=LayerNorm(config["width"])
            )
            self.head = nn.Linear(config["width"], config["classes"])

        def forward(self, ids):  # (B, S) -> (B, classes)
            x = self.positions(self.embedding(ids))  # (B, S, D)
            return self.head(self.encoder(x).mean(axis=1))

    return Classifier()


def batch(config, size: int, seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    ids = rng.integers(0, config["vocab"], (size, config["length"])).astype(np.int64)
    target = rng.integers(0, config["classes"], size).astype(np.int64)
    return ids, target


def initial_weights(config) -> dict:
    return torch_state_as_numpy(torch_model(config))


def steppers(quick: bool, approximate: str = "tanh") -> dict:
    """The implementations of one step; with ``approximate="none"`` (the exact GELU) there is
    no NumPy bound (NumPy has no erf)."""
    import torch

    config = sizes(quick)
    weights = initial_weights(config)
    ids, target = batch(config, config["batch"])
    ours = load_buildingai(buildingai_model(config, approximate), weights)
    theirs = torch_model(config, approximate=approximate)
    theirs.load_state_dict({k: torch.from_numpy(v.copy()) for k, v in weights.items()})
    options = dict(lr=LR, weight_decay=WEIGHT_DECAY)
    implementations = {
        "buildingai": BuildingAIStep(
            ours, bai.optim.AdamW(ours.parameters(), **options), ids, target
        ),
        "pytorch": TorchStep(
            theirs, torch.optim.AdamW(theirs.parameters(), **options), ids, target
        ),
    }
    if approximate == "tanh":
        implementations["numpy"] = NumpyTransformer(
            weights, ids, target, heads=config["heads"], num_layers=config["layers"], **options
        )
    return implementations

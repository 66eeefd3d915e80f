"""Small models shared by the graph, export and plotting tests."""

from __future__ import annotations

import math

import numpy as np

import buildingai as bai
from buildingai import nn


class MLP(nn.Module):
    def __init__(self, sizes=(12, 16, 16, 4)) -> None:
        super().__init__()
        self.fc1 = nn.Linear(sizes[0], sizes[1])
        self.fc2 = nn.Linear(sizes[1], sizes[2])
        self.fc3 = nn.Linear(sizes[2], sizes[3])

    def forward(self, x):  # (N, 12) -> (N, 4)
        return self.fc3(self.fc2(self.fc1(x).relu()).tanh())


class CNN(nn.Module):
    def __init__(self, pool=None) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.pool = pool if pool is not None else nn.MaxPool2d(2)
        self.conv2 = nn.Conv2d(8, 8, 3, padding=1, stride=1)
        self.avg = nn.AvgPool2d(2)
        self.fc = nn.Linear(32, 5)

    def forward(self, x):  # (N, 3, 8, 8) -> (N, 5)
        x = self.pool(self.bn(self.conv1(x)).relu())
        x = self.avg(self.conv2(x).relu())
        return self.fc(x.reshape(x.shape[0], -1))


class LSTMClassifier(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(20, 8)
        self.lstm = nn.LSTM(8, 16, batch_first=True)
        self.fc = nn.Linear(16, 3)

    def forward(self, tokens):  # (N, T) int64 -> (N, 3)
        out, _ = self.lstm(self.embed(tokens))
        return self.fc(out[:, -1])


class TransformerClassifier(nn.Module):
    """Token embedding, a 2-layer encoder (GELU, layer norm) with a padding mask, mean pool."""

    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(20, 16)
        layer = nn.TransformerEncoderLayer(
            16, 2, 32, dropout=0.1, activation="gelu", batch_first=True
        )
        self.encoder = nn.TransformerEncoder(layer, 2)
        self.fc = nn.Linear(16, 3)

    def forward(self, tokens, padding):  # (N, T) int64, (N, T) bool (True = padding)
        # an additive mask made with ops, so the frozen graph computes it from the input
        additive = bai.where(padding, -math.inf, 0.0)
        hidden = self.encoder(self.embed(tokens), src_key_padding_mask=additive)
        return self.fc(hidden.mean(1))


def padded_tokens(batch: int, length: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    tokens = rng.integers(0, 20, size=(batch, length))
    lengths = rng.integers(1, length + 1, size=batch)
    padding = np.arange(length)[None, :] >= lengths[:, None]
    return tokens, padding

"""The same small nested architecture built in BuildingAI and in PyTorch, for parity tests."""

from __future__ import annotations

from collections import OrderedDict

import numpy as np
import pytest

import buildingai as bai
from buildingai.nn import Identity, Linear, Module, ModuleDict, ModuleList, Sequential

torch = pytest.importorskip("torch")


def _mix(h):
    # A smooth non-linearity written with ops both libraries share (activation layers are
    # tested on their own).
    return h * 0.5 + h * h * 0.1


class Block(Module):
    def __init__(self, width: int) -> None:
        super().__init__()
        self.fc1 = Linear(width, 2 * width)
        self.fc2 = Linear(2 * width, width)
        self.register_buffer("scale", bai.ones(width))
        self.register_buffer("cache", bai.zeros(width), persistent=False)

    def forward(self, x):
        return x + self.fc2(_mix(self.fc1(x))) * self.scale


class Net(Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = Linear(3, 4)
        self.layers = ModuleList([Block(4), Block(4)])
        self.heads = ModuleDict({"main": Linear(4, 2, bias=False)})
        self.tail = Sequential(OrderedDict([("norm", Identity()), ("out", Linear(2, 2))]))
        self.register_buffer("step", bai.tensor(np.array(0, dtype=np.int64)))

    def forward(self, x):
        h = self.embed(x)
        for layer in self.layers:
            h = layer(h)
        return self.tail(self.heads["main"](h))


class TorchBlock(torch.nn.Module):
    def __init__(self, width: int) -> None:
        super().__init__()
        self.fc1 = torch.nn.Linear(width, 2 * width)
        self.fc2 = torch.nn.Linear(2 * width, width)
        self.register_buffer("scale", torch.ones(width))
        self.register_buffer("cache", torch.zeros(width), persistent=False)

    def forward(self, x):
        return x + self.fc2(_mix(self.fc1(x))) * self.scale


class TorchNet(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = torch.nn.Linear(3, 4)
        self.layers = torch.nn.ModuleList([TorchBlock(4), TorchBlock(4)])
        self.heads = torch.nn.ModuleDict({"main": torch.nn.Linear(4, 2, bias=False)})
        self.tail = torch.nn.Sequential(
            OrderedDict([("norm", torch.nn.Identity()), ("out", torch.nn.Linear(2, 2))])
        )
        self.register_buffer("step", torch.tensor(0))

    def forward(self, x):
        h = self.embed(x)
        for layer in self.layers:
            h = layer(h)
        return self.tail(self.heads["main"](h))

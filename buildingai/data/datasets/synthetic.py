"""Small synthetic datasets for tests, tutorials and quick experiments (no download)."""

from __future__ import annotations

import numpy as np

from ...errors import BuildingAIError
from ..dataset import Dataset


class Spirals(Dataset):
    """``classes`` interleaved 2-D spiral arms, ``n`` points in all (a classic that a linear
    model cannot separate). Items: ``(point (2,) float32, label int64)``.

    Arm ``k`` has radius ``r`` from 0 to 1 and angle ``4 r + 2 pi k / classes`` plus
    Gaussian noise of standard deviation ``noise`` (radians). Deterministic for a ``seed``.
    """

    def __init__(self, n: int = 300, classes: int = 3, noise: float = 0.2, seed: int = 0) -> None:
        if n < 1 or classes < 1 or noise < 0:
            raise BuildingAIError(
                f"Spirals needs n >= 1, classes >= 1 and noise >= 0; got n={n}, "
                f"classes={classes}, noise={noise}"
            )
        rng = np.random.default_rng(seed)
        labels = np.arange(n) % classes  # classes of equal size, up to one
        labels.sort()
        # position along its arm of each point: 0 .. 1 within its class
        counts = np.bincount(labels, minlength=classes)
        rank = np.arange(n) - np.concatenate([[0], np.cumsum(counts)[:-1]])[labels]
        radius = rank / np.maximum(counts[labels] - 1, 1)
        angle = 4.0 * radius + 2 * np.pi * labels / classes + rng.normal(0.0, noise, n)
        self.points = np.stack([radius * np.sin(angle), radius * np.cos(angle)], 1).astype(
            np.float32
        )  # (n, 2)
        self.labels = labels.astype(np.int64)  # (n,)

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, index: int):
        return self.points[index], self.labels[index]


class Regression(Dataset):
    """A noisy linear regression problem: ``y = x @ weight + bias + noise``.

    ``x: (n, features)`` standard normal; ``weight: (features, 1)``, ``bias: (1,)`` drawn once
    (standard normal) and kept as attributes, so a fitted model can be compared with them;
    ``noise`` is the standard deviation of the Gaussian noise. Items:
    ``(x (features,) float32, y (1,) float32)``, so batches are ``(B, features)`` and ``(B, 1)``
    like the input and output of ``nn.Linear(features, 1)``.
    """

    def __init__(self, n: int = 1000, features: int = 8, noise: float = 0.1, seed: int = 0) -> None:
        if n < 1 or features < 1 or noise < 0:
            raise BuildingAIError(
                f"Regression needs n >= 1, features >= 1 and noise >= 0; got n={n}, "
                f"features={features}, noise={noise}"
            )
        rng = np.random.default_rng(seed)
        self.weight = rng.standard_normal((features, 1)).astype(np.float32)
        self.bias = rng.standard_normal(1).astype(np.float32)
        self.inputs = rng.standard_normal((n, features)).astype(np.float32)
        clean = self.inputs @ self.weight + self.bias
        self.targets = (clean + rng.normal(0.0, noise, (n, 1))).astype(np.float32)

    def __len__(self) -> int:
        return len(self.targets)

    def __getitem__(self, index: int):
        return self.inputs[index], self.targets[index]

"""Multi-task learning: one shared trunk, two heads (a 4-way classifier and a regressor), per-task
losses with weights, per-task metrics, all in one hand-written loop.

    python examples/multitask.py
    python examples/multitask.py loss_weights.regress=2.0 epochs=5

The data are synthetic, so the example runs anywhere in seconds: inputs x ~ N(0, I) (16
features); the class is the argmax of four fixed random projections of x; the regression target
is ``sin(2 x . u) + 0.5 (x . v)`` plus noise (u, v of unit expected length). Both depend on the same directions of x, which is
what a shared trunk can exploit.

Result observed here (the config as given, 2 shared CPU cores): after 20 epochs, test accuracy
0.952 (0.955-0.972 over the last epochs) and regression MSE 0.042 (the noise variance is 0.01;
at the start it was 0.40), in 17 s.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

import buildingai as bai
from buildingai import nn, optim
from buildingai.data import DataLoader, TensorDataset
from buildingai.nn import functional as F
from buildingai.train import Config, Mean, accuracy

CONFIG = Path(__file__).parent / "configs" / "multitask.yaml"


def make_data(n: int, features: int, classes: int, noise: float, rng) -> tuple:
    """x (n, features) float32, class (n,) int64, target (n, 1) float32; the projections come
    from a fixed stream so train and test sets share them."""
    projections = np.random.default_rng(1234).standard_normal((features, classes + 2))
    projections /= np.sqrt(features)  # unit-variance projections: sin(.) stays learnable
    x = rng.standard_normal((n, features)).astype(np.float32)
    z = x @ projections  # (n, classes + 2)
    label = z[:, :classes].argmax(axis=1).astype(np.int64)
    target = np.sin(2 * z[:, classes]) + 0.5 * z[:, classes + 1] + noise * rng.standard_normal(n)
    return x, label, target[:, None].astype(np.float32)


class TwoHeadNet(nn.Module):
    """x (B, features) -> (class logits (B, classes), regression (B, 1))."""

    def __init__(self, features: int, classes: int, hidden: int) -> None:
        super().__init__()
        self.trunk = nn.Sequential(
            nn.Linear(features, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU()
        )
        self.classify = nn.Linear(hidden, classes)
        self.regress = nn.Linear(hidden, 1)

    def forward(self, x: bai.Tensor) -> tuple[bai.Tensor, bai.Tensor]:
        shared = self.trunk(x)  # (B, hidden)
        return self.classify(shared), self.regress(shared)


def evaluate(model, loader) -> dict[str, float]:
    """Per-task loss and metric on ``loader``."""
    model.eval()
    totals = {name: Mean() for name in ("classify_loss", "accuracy", "regress_mse")}
    with bai.no_grad():
        for x, label, target in loader:
            logits, prediction = model(x)
            totals["classify_loss"].update(F.cross_entropy(logits, label), len(label))
            totals["accuracy"].update(accuracy(logits, label), len(label))
            totals["regress_mse"].update(F.mse_loss(prediction, target), len(label))
    model.train()
    return {name: metric.compute() for name, metric in totals.items()}


def train(config: Config) -> dict[str, float]:
    bai.manual_seed(config.seed)
    rng = np.random.default_rng(config.seed)
    data = config.data
    train_arrays = make_data(data.n_train, data.features, data.classes, data.noise, rng)
    test_arrays = make_data(data.n_test, data.features, data.classes, data.noise, rng)
    train_loader = DataLoader(
        TensorDataset(*map(bai.tensor, train_arrays)), batch_size=config.batch_size,
        shuffle=True, generator=bai.Generator(config.seed),
    )  # fmt: skip
    test_loader = DataLoader(TensorDataset(*map(bai.tensor, test_arrays)), batch_size=1000)

    model = TwoHeadNet(data.features, data.classes, config.model.hidden)
    optimizer = optim.Adam(model.parameters(), lr=config.optim.lr)
    weights = config.loss_weights
    results: dict[str, float] = {}
    for epoch in range(config.epochs):
        running = {"classify": Mean(), "regress": Mean()}
        for x, label, target in train_loader:  # (B, 16), (B,), (B, 1)
            logits, prediction = model(x)  # (B, 4), (B, 1)
            losses = {
                "classify": F.cross_entropy(logits, label),
                "regress": F.mse_loss(prediction, target),
            }
            # One backward pass through the weighted sum: the trunk gets both tasks' gradients.
            total = weights.classify * losses["classify"] + weights.regress * losses["regress"]
            optimizer.zero_grad()
            total.backward()
            optimizer.step()
            for name, value in losses.items():
                running[name].update(value, len(label))
        results = evaluate(model, test_loader)
        print(
            f"epoch {epoch + 1:2d}/{config.epochs}  train loss classify "
            f"{running['classify'].compute():.3f} regress {running['regress'].compute():.3f}  |  "
            f"test accuracy {results['accuracy']:.4f}  regress mse {results['regress_mse']:.4f}"
        )
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("overrides", nargs="*", help="config overrides: key=value")
    parser.add_argument("--config", default=str(CONFIG))
    args = parser.parse_args()
    config = Config.from_yaml(args.config).merge_overrides(args.overrides)
    started = time.perf_counter()
    results = train(config)
    print(f"done in {time.perf_counter() - started:.0f} s: {results}")


if __name__ == "__main__":
    main()

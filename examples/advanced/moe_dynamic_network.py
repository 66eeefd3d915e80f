"""A mixture-of-experts network on a task that is four regression problems in one.

Each sample x = (selector, u, v) belongs to one of four regimes chosen by the selector
(quartiles of a uniform draw in [-2, 2]), and each regime has its own target function of (u, v):

    regime 0: sin(3u)        regime 1: u * v        regime 2: |u| - v        regime 3: cos(2v)

A router sends every sample to 2 of 4 small expert MLPs; only those experts compute on it, and
``dynamic_concat`` mixes their outputs back in batch order with the gate weights. The training
loss is the mean squared error plus 0.01 times the load-balancing loss, optimised with Adam.

The shape contract on ``Model.forward`` is checked while ``BUILDINGAI_CHECK_SHAPES=1`` is set
(or inside ``with shape_checks():``); otherwise it costs nothing.

Observed (seed 0, about 4 s of CPU time on 2 cores): the training MSE falls from 0.85 to
about 0.07 over 400 steps (test MSE 0.08); every expert keeps between about 15% and 40% of the
assignments, with the auxiliary loss between 1.0 and 1.1 (its minimum is 1). The routing table
shows the experts specialising without being told the regimes: regime 0 goes almost only to
experts 2 and 3, regime 3 only to experts 0 and 1.

Run: python examples/advanced/moe_dynamic_network.py
"""

from __future__ import annotations

import time

import numpy as np

import buildingai as bai
from buildingai import nn
from buildingai.nn.moe import MoELayer
from buildingai.nn.shapes import shapes

NUM_EXPERTS, TOP_K = 4, 2
WIDTH, HIDDEN = 32, 32
STEPS, BATCH, AUX_COEF = 400, 256, 0.01


# ----- data ------------------------------------------------------------------------------------
def make_data(count: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """x (count, 3), y (count, 1) and the regime of each sample (count,)."""
    selector = rng.uniform(-2, 2, count)
    u, v = rng.uniform(-1.5, 1.5, count), rng.uniform(-1.5, 1.5, count)
    regime = np.digitize(selector, [-1.0, 0.0, 1.0])  # 0..3
    targets = np.stack([np.sin(3 * u), u * v, np.abs(u) - v, np.cos(2 * v)])  # (4, count)
    y = targets[regime, np.arange(count)]
    x = np.stack([selector, u, v], axis=1)
    return x.astype(np.float32), y[:, None].astype(np.float32), regime


# ----- model -----------------------------------------------------------------------------------
class Model(nn.Module):
    """embed -> mixture of experts (residual) -> head."""

    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Linear(3, WIDTH)
        self.moe = MoELayer(WIDTH, HIDDEN, NUM_EXPERTS, TOP_K)
        self.head = nn.Linear(WIDTH, 1)

    @shapes("x: [batch, 3] -> ([batch, 1], [], [batch, k])")
    def forward(self, x):
        h = self.embed(x).gelu()  # (B, WIDTH)
        mixed, aux_loss, indices = self.moe(h)  # (B, WIDTH), (), (B, TOP_K)
        return self.head(h + mixed), aux_loss, indices


def utilisation(indices: np.ndarray) -> np.ndarray:
    """Fraction of the routing assignments each expert received."""
    return np.bincount(indices.reshape(-1), minlength=NUM_EXPERTS) / indices.size


def main() -> None:
    bai.manual_seed(0)
    rng = np.random.default_rng(0)
    x_train, y_train, _ = make_data(4096, rng)
    x_test, y_test, regime_test = make_data(1024, rng)

    model = Model()
    optimizer = bai.optim.Adam(model.parameters(), lr=3e-3)
    start = time.perf_counter()
    for step in range(STEPS + 1):
        rows = rng.integers(0, len(x_train), BATCH)
        prediction, aux_loss, indices = model(bai.tensor(x_train[rows]))
        mse = ((prediction - bai.tensor(y_train[rows])) ** 2).mean()
        loss = mse + AUX_COEF * aux_loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % 50 == 0:
            shares = " ".join(f"{share:4.0%}" for share in utilisation(indices.numpy()))
            print(
                f"step {step:3d}  mse {mse.item():.4f}  aux {aux_loss.item():.3f}  "
                f"experts [{shares}]"
            )
    print(f"trained in {time.perf_counter() - start:.1f} s")

    # Evaluate, and show which experts each regime is sent to.
    model.eval()
    with bai.no_grad():
        prediction, _, indices = model(bai.tensor(x_test))
    test_mse = float(((prediction.numpy() - y_test) ** 2).mean())
    print(f"test mse {test_mse:.4f}")
    print("share of each regime's assignments per expert:")
    print("          " + " ".join(f"expert{e}" for e in range(NUM_EXPERTS)))
    chosen = indices.numpy()
    for regime in range(4):
        shares = utilisation(chosen[regime_test == regime])
        print(f"regime {regime}  " + " ".join(f"{share:7.0%}" for share in shares))


if __name__ == "__main__":
    main()

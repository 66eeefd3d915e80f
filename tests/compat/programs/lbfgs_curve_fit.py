"""Fit a curve in double precision with L-BFGS (a closure, the strong-Wolfe line search, a
PolynomialLR decay), then fine-tune with SGD under a MultiplicativeLR schedule; the fitted model
is saved to a state dict and loaded into a fresh one, whose predictions must agree.

Double precision, as curve fitting often uses: L-BFGS's line search amplifies float32
round-off over its inner iterations, so float32 runs of two libraries part after a few steps."""

import math

import numpy as np
import torch
from torch import nn
from torch.optim.lr_scheduler import MultiplicativeLR, PolynomialLR


class CurveModel(nn.Module):
    def __init__(self, hidden=16):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(1, hidden), nn.Tanh(), nn.Linear(hidden, 1))
        self.offsets = nn.ParameterDict({"shift": nn.Parameter(torch.zeros(1))})

    def forward(self, x):
        return self.net(x) + self.offsets["shift"]


def make_model(seed):
    model = CurveModel().double()
    rng = np.random.default_rng(seed)
    with torch.no_grad():
        for param in model.parameters():
            param.copy_(torch.from_numpy(rng.uniform(-0.8, 0.8, tuple(param.shape))))
    return model


def main():
    torch.manual_seed(0)
    xs = np.linspace(-2, 2, 40)[:, None]
    x = torch.from_numpy(xs)
    y = torch.sin(1.5 * x) + 0.1 * x**2

    model = make_model(seed=1)
    optimizer = torch.optim.LBFGS(
        model.parameters(), lr=1, max_iter=10, history_size=5, line_search_fn="strong_wolfe"
    )
    scheduler = PolynomialLR(optimizer, total_iters=4, power=2.0)

    def closure():
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        return loss

    lbfgs_losses, lbfgs_rates = [], []
    for _ in range(3):
        lbfgs_losses.append(optimizer.step(closure).item())
        scheduler.step()
        lbfgs_rates.append(scheduler.get_last_lr()[0])

    finetune = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    decay = MultiplicativeLR(finetune, lr_lambda=lambda epoch: 0.5 if epoch % 2 else 0.9)
    sgd_losses = []
    for _ in range(4):
        finetune.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
        finetune.step()
        decay.step()
        sgd_losses.append(loss.item())

    copy = make_model(seed=2)
    copy.load_state_dict(model.state_dict())
    model.eval()
    copy.eval()
    with torch.no_grad():
        grid = torch.linspace(-2, 2, 5, dtype=torch.float64).unsqueeze(1)
        predictions = model(grid).squeeze(1).tolist()
        same = torch.equal(copy(grid), model(grid))
    return {
        "dtype": str(x.dtype).replace("torch.", ""),  # PyTorch prints torch.float64
        "double": x.dtype == torch.float64 and model.net[0].weight.dtype == torch.double,
        "lbfgs losses": lbfgs_losses,
        "lbfgs rates": lbfgs_rates,
        "sgd losses": sgd_losses,
        "sgd rate": decay.get_last_lr()[0],
        "predictions": predictions,
        "copy agrees": same,
        "fitted": math.isfinite(sgd_losses[-1]) and sgd_losses[-1] < lbfgs_losses[0],
        "keys": sorted(model.state_dict()),
    }


if __name__ == "__main__":
    print(main())

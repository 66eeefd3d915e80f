"""Learning-rate schedulers stepped per batch and per epoch, as training scripts do, with the
learning rate read back from the optimizer and from the scheduler."""

import math

import numpy as np
import torch
from torch import nn, optim
from torch.optim.lr_scheduler import (
    CosineAnnealingLR,
    LambdaLR,
    MultiStepLR,
    OneCycleLR,
    ReduceLROnPlateau,
    StepLR,
)


def fitted_model(seed):
    model = nn.Linear(4, 1)
    rng = np.random.default_rng(seed)
    with torch.no_grad():
        model.weight.copy_(torch.from_numpy(rng.normal(size=(1, 4)).astype(np.float32)))
        model.bias.zero_()
    return model


def run(make_scheduler, epochs, per_batch=False, plateau=False):
    rng = np.random.default_rng(11)
    x = torch.from_numpy(rng.normal(size=(32, 4)).astype(np.float32))
    y = x.sum(dim=1, keepdim=True) * 0.5
    model = fitted_model(seed=12)
    optimizer = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    scheduler = make_scheduler(optimizer)
    rates, losses = [], []
    for epoch in range(epochs):
        for start in range(0, 32, 8):
            optimizer.zero_grad()
            loss = ((model(x[start : start + 8]) - y[start : start + 8]) ** 2).mean()
            loss.backward()
            optimizer.step()
            if per_batch:
                scheduler.step()
                rates.append(scheduler.get_last_lr()[0])
        with torch.no_grad():
            epoch_loss = ((model(x) - y) ** 2).mean().item()
        losses.append(epoch_loss)
        if plateau:
            scheduler.step(epoch_loss if epoch < 3 else 1.0)  # then a plateau
        elif not per_batch:
            scheduler.step()
        rates.append(optimizer.param_groups[0]["lr"])
    return rates, losses


def main():
    results = {
        "step": run(lambda opt: StepLR(opt, step_size=2, gamma=0.5), epochs=6),
        "multistep": run(lambda opt: MultiStepLR(opt, milestones=[1, 4], gamma=0.3), epochs=6),
        "cosine": run(lambda opt: CosineAnnealingLR(opt, T_max=5, eta_min=0.001), epochs=6),
        "lambda": run(lambda opt: LambdaLR(opt, lambda epoch: 1 / math.sqrt(epoch + 1)), epochs=5),
        "onecycle": run(
            lambda opt: OneCycleLR(opt, max_lr=0.2, total_steps=12), epochs=3, per_batch=True
        ),
        "plateau": run(
            lambda opt: ReduceLROnPlateau(opt, mode="min", factor=0.5, patience=1),
            epochs=7,
            plateau=True,
        ),
    }
    for name, (rates, losses) in results.items():
        print(f"{name:10s} lr {rates[-1]:.5f}  loss {losses[-1]:.6f}")
    return results


if __name__ == "__main__":
    main()

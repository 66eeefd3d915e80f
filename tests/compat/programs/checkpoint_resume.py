"""Train, save a checkpoint (model and optimizer state_dicts), load it into fresh objects and
resume: the resumed run must continue exactly where the first one stopped."""

import os
import tempfile

import numpy as np
import torch
import torch.nn as nn


def build(seed):
    model = nn.Sequential(nn.Linear(6, 12), nn.GELU(), nn.LayerNorm(12), nn.Linear(12, 2))
    rng = np.random.default_rng(seed)
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, nn.Linear):  # LayerNorm keeps its ones and zeros
                module.weight.copy_(
                    torch.from_numpy(
                        rng.normal(0, 0.3, tuple(module.weight.shape)).astype("float32")
                    )
                )
                module.bias.fill_(0.01)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
    return model, optimizer


def train(model, optimizer, x, y, steps):
    losses = []
    for _ in range(steps):
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


def main():
    rng = np.random.default_rng(7)
    x = torch.tensor(rng.standard_normal((24, 6)), dtype=torch.float32)
    y = torch.tensor(rng.standard_normal((24, 2)), dtype=torch.float32)

    model, optimizer = build(seed=8)
    first = train(model, optimizer, x, y, steps=4)
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "checkpoint.pt")
        torch.save(
            {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "step": 4}, path
        )
        straight_on = train(model, optimizer, x, y, steps=3)

        checkpoint = torch.load(path)
        resumed_model, resumed_optimizer = build(seed=99)  # other weights, overwritten by load
        resumed_model.load_state_dict(checkpoint["model"])
        resumed_optimizer.load_state_dict(checkpoint["optimizer"])
        resumed = train(resumed_model, resumed_optimizer, x, y, steps=3)

    keys = list(model.state_dict().keys())
    print(
        f"step {checkpoint['step']}: straight on {straight_on[-1]:.6f}, resumed {resumed[-1]:.6f}"
    )
    return {
        "first": first,
        "straight_on": straight_on,
        "resumed": resumed,
        "keys": keys,
        "step": checkpoint["step"],
    }


if __name__ == "__main__":
    main()

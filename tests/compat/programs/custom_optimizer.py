"""A custom optimizer written as PyTorch users write one: a torch.optim.Optimizer subclass
with defaults, per-parameter state, a @torch.no_grad() step taking a closure and in-place
tensor methods (AdamW with a lerp'd first moment); checked against torch.optim.AdamW, driven
by a LinearLR warm-up, and saved and restored through state_dict."""

import os
import tempfile

import numpy as np
import torch
import torch.nn as nn


class MyAdamW(torch.optim.Optimizer):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2):
        if lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay)
        super().__init__(params, defaults)

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                grad = p.grad
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = 0
                    state["exp_avg"] = torch.zeros_like(p)
                    state["exp_avg_sq"] = torch.zeros_like(p)
                state["step"] += 1
                exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
                p.mul_(1 - group["lr"] * group["weight_decay"])
                exp_avg.lerp_(grad, 1 - beta1)
                exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
                bias_correction1 = 1 - beta1 ** state["step"]
                bias_correction2 = 1 - beta2 ** state["step"]
                denom = (exp_avg_sq.sqrt() / bias_correction2**0.5).add_(group["eps"])
                p.addcdiv_(exp_avg, denom, value=-group["lr"] / bias_correction1)
        return loss


def build(seed):
    model = nn.Sequential(nn.Linear(5, 8), nn.Tanh(), nn.Linear(8, 1))
    rng = np.random.default_rng(seed)
    with torch.no_grad():
        for param in model.parameters():
            param.copy_(torch.from_numpy(rng.normal(0, 0.4, tuple(param.shape)).astype("float32")))
    return model


def train(model, optimizer, scheduler, x, y, steps):
    losses = []
    for _ in range(steps):

        def closure():
            optimizer.zero_grad()
            loss = nn.functional.mse_loss(model(x), y)
            loss.backward()
            return loss

        losses.append(optimizer.step(closure).item())
        scheduler.step()
    return losses


def main():
    rng = np.random.default_rng(5)
    x = torch.from_numpy(rng.normal(size=(32, 5)).astype("float32"))
    y = torch.from_numpy(rng.normal(size=(32, 1)).astype("float32"))

    runs = {}
    for name, make in (("mine", MyAdamW), ("library", torch.optim.AdamW)):
        model = build(seed=1)
        optimizer = make(model.parameters(), lr=0.02, weight_decay=0.05)
        scheduler = torch.optim.lr_scheduler.LinearLR(optimizer, start_factor=0.25, total_iters=3)
        runs[name] = train(model, optimizer, scheduler, x, y, steps=6)

    def make(seed):
        model = build(seed)
        optimizer = MyAdamW(model.parameters(), lr=0.02)
        scheduler = torch.optim.lr_scheduler.LinearLR(optimizer, start_factor=0.25, total_iters=3)
        return model, optimizer, scheduler

    model, optimizer, scheduler = make(seed=1)
    train(model, optimizer, scheduler, x, y, steps=3)
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "checkpoint.pt")
        torch.save(
            {"model": model.state_dict(), "optimizer": optimizer.state_dict(),
             "scheduler": scheduler.state_dict()},
            path,
        )  # fmt: skip
        straight = train(model, optimizer, scheduler, x, y, steps=3)
        saved = torch.load(path)

    resumed_model, resumed_optimizer, resumed_scheduler = make(seed=2)
    resumed_model.load_state_dict(saved["model"])
    resumed_optimizer.load_state_dict(saved["optimizer"])
    resumed_scheduler.load_state_dict(saved["scheduler"])
    resumed = train(resumed_model, resumed_optimizer, resumed_scheduler, x, y, steps=3)

    state = resumed_optimizer.state[resumed_model[0].weight]
    return {
        "mine": runs["mine"],
        "library": runs["library"],
        "straight": straight,
        "resumed": resumed,
        "state keys": sorted(state),
        "step": int(state["step"]),
        "lr": resumed_optimizer.param_groups[0]["lr"],
    }


if __name__ == "__main__":
    print(main())

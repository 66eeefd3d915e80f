"""A small sub-pixel super-resolution network (reflection padding, instance norm, a learned
scale per stage in a ParameterList, PixelShuffle), trained a few steps with Adam and a
OneCycleLR schedule; random fills and dtype checks as initialisation code writes them."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class SuperResolution(nn.Module):
    def __init__(self, channels=3, features=8, upscale=2):
        super().__init__()
        self.body = nn.Sequential(
            nn.ReflectionPad2d(1),
            nn.Conv2d(channels, features, 3),
            nn.InstanceNorm2d(features, affine=True),
            nn.ReLU(inplace=True),
            nn.ReplicationPad2d(1),
            nn.Conv2d(features, channels * upscale**2, 3),
        )
        self.scales = nn.ParameterList([nn.Parameter(torch.ones(1)) for _ in range(2)])
        self.shuffle = nn.PixelShuffle(upscale)

    def forward(self, x):
        residual = F.interpolate(x, scale_factor=2, mode="nearest")
        out = self.shuffle(self.body(x) * self.scales[0])
        return residual + out * self.scales[1]


def init_weights(model, rng):
    with torch.no_grad():
        for name, param in model.named_parameters():
            if param.dim() > 1:
                values = rng.normal(0, 0.2, tuple(param.shape)).astype("float32")
                param.copy_(torch.from_numpy(values))
            elif name.endswith("bias"):
                param.zero_()


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    rng = np.random.default_rng(3)
    model = SuperResolution().to(device)
    init_weights(model, rng)
    low = torch.from_numpy(rng.uniform(0, 1, (4, 3, 6, 6)).astype("float32")).to(device)
    high = F.interpolate(low, scale_factor=2, mode="bilinear", align_corners=False)

    # what initialisation and checking code asks of tensors; the draws differ by library
    noise = torch.empty(2, 3, device=device).uniform_(-0.5, 0.5)
    gauss = torch.empty(1000).normal_(mean=2.0, std=0.1, generator=torch.Generator())
    counts = torch.zeros(5, dtype=torch.int64).random_(0, 10)
    coin = torch.empty(8).bernoulli_(0.5)
    checks = {
        "noise in range": bool(noise.abs().max() <= 0.5),
        "gauss mean": round(float(gauss.mean()), 1),
        "counts in range": bool(((counts >= 0) & (counts < 10)).all()),
        "coin is 0 or 1": bool(((coin == 0) | (coin == 1)).all()),
        "float": low.is_floating_point(),
        "int is not float": counts.is_floating_point(),
        "float32": low.dtype == torch.float32,
        "half precision": low.dtype in (torch.float16, torch.bfloat16),
        "parameters": sum(p.nelement() for p in model.parameters()),
    }

    eps = torch.finfo(low.dtype).eps
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    scheduler = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=2e-2, total_steps=5)
    losses, rates = [], []
    model.train()
    for _ in range(5):
        optimizer.zero_grad()
        prediction = model(low)
        error = (prediction - high).abs()
        error.masked_fill_(error < 1e-4, 0.0)  # ignore what is already exact
        loss = torch.log(error.mean() + eps)
        loss.backward()
        optimizer.step()
        scheduler.step()
        losses.append(loss.item())
        rates.append(scheduler.get_last_lr()[0])

    model.eval()
    with torch.no_grad():
        output = model(low)
    return {
        "checks": checks,
        "losses": losses,
        "rates": rates,
        "output shape": list(output.shape),
        "output mean": float(output.mean()),
        "scales": [s.item() for s in model.scales],
        "keys": list(model.state_dict().keys()),
    }


if __name__ == "__main__":
    print(main())

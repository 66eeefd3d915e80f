"""A tiny Vision Transformer written with einops (patch embedding and pooling as einops
layers, attention heads split with rearrange), trained with SGD under a CyclicLR schedule and
then a chained warm-down (ConstantLR times ExponentialLR); an RReLU head evaluated in eval
mode, and the peak memory question a training script prints."""

import numpy as np
import torch
import torch.nn as nn
from einops import rearrange, repeat
from einops.layers.torch import Rearrange, Reduce
from torch.utils.data import DataLoader, TensorDataset


class Attention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, dim * 3)
        self.out = nn.Linear(dim, dim)

    def forward(self, x):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        q, k, v = (rearrange(t, "b n (h d) -> b h n d", h=self.heads) for t in (q, k, v))
        scores = q @ k.transpose(-2, -1) * q.shape[-1] ** -0.5
        out = scores.softmax(dim=-1) @ v
        return self.out(rearrange(out, "b h n d -> b n (h d)"))


class TinyViT(nn.Module):
    def __init__(self, image=8, patch=4, channels=1, dim=16, heads=2, classes=3):
        super().__init__()
        patches = (image // patch) ** 2
        self.embed = nn.Sequential(
            Rearrange("b c (h p1) (w p2) -> b (h w) (p1 p2 c)", p1=patch, p2=patch),
            nn.Linear(patch * patch * channels, dim),
        )
        self.cls = nn.Parameter(torch.zeros(1, 1, dim))
        self.position = nn.Parameter(torch.zeros(1, patches + 1, dim))
        self.norm = nn.LayerNorm(dim)
        self.attention = Attention(dim, heads)
        self.pool = Reduce("b n d -> b d", "mean")
        self.head = nn.Sequential(nn.Linear(dim, dim), nn.RReLU(0.1, 0.3), nn.Linear(dim, classes))

    def forward(self, images):
        x = self.embed(images)
        cls = repeat(self.cls, "1 1 d -> b 1 d", b=x.shape[0])
        x = torch.cat([cls, x], dim=1) + self.position
        x = x + self.attention(self.norm(x))
        return self.head(self.pool(x))


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    rng = np.random.default_rng(11)
    model = TinyViT()
    with torch.no_grad():
        for param in model.parameters():
            param.copy_(torch.from_numpy(rng.normal(0, 0.2, tuple(param.shape))).float())
    model.to(device)
    images = torch.from_numpy(rng.normal(size=(12, 1, 8, 8)).astype(np.float32))
    labels = torch.from_numpy(rng.integers(0, 3, size=12))
    loader = DataLoader(TensorDataset(images, labels), batch_size=4, shuffle=False)

    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    cyclic = torch.optim.lr_scheduler.CyclicLR(
        optimizer, base_lr=0.005, max_lr=0.05, step_size_up=2, mode="triangular2"
    )
    if torch.cuda.is_available():
        torch.cuda.reset_peak_memory_stats()
    losses, rates, momenta = [], [], []
    model.eval()  # RReLU's mean slope, so that both libraries compute the same numbers
    for _ in range(2):
        for inputs, targets in loader:
            inputs, targets = inputs.to(device), targets.to(device)
            optimizer.zero_grad()
            loss = nn.functional.cross_entropy(model(inputs), targets)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=2.0)
            optimizer.step()
            cyclic.step()
            losses.append(loss.item())
            rates.append(cyclic.get_last_lr()[0])
            momenta.append(optimizer.param_groups[0]["momentum"])

    warm_down = torch.optim.lr_scheduler.ChainedScheduler(
        [
            torch.optim.lr_scheduler.ConstantLR(optimizer, factor=0.5, total_iters=2),
            torch.optim.lr_scheduler.ExponentialLR(optimizer, gamma=0.8),
        ]
    )
    chained = []
    for _ in range(4):
        optimizer.step()
        warm_down.step()
        chained.append(warm_down.get_last_lr()[0])
    saved = warm_down.state_dict()

    with torch.no_grad():
        logits = model(images.to(device))
        accuracy = (logits.argmax(dim=1) == labels.to(device)).float().mean().item()
    peak = torch.cuda.max_memory_allocated() if torch.cuda.is_available() else 0
    print(f"accuracy {accuracy:.2f}, peak GPU memory {peak / 2**20:.1f} MiB")
    return {
        "losses": losses,
        "rates": rates,
        "momenta": momenta,
        "chained": chained,
        "saved last lr": saved["_last_lr"],
        "logits": logits.cpu().numpy().round(5).tolist(),
        "accuracy": accuracy,
        "peak is a count": isinstance(peak, int),
    }


if __name__ == "__main__":
    main()

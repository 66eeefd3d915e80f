"""Parameter updates through ``.data``, in the styles of older and research PyTorch code: a
DCGAN-style ``weights_init`` applied with ``model.apply`` (``m.weight.data.normal_``,
``m.bias.data.fill_``), a hand-written SGD step (``p.data.add_(p.grad, alpha=-lr)``), WGAN
weight clipping (``p.data.clamp_``), a DQN-style soft target update (``target.data.copy_``)
and ``p.data -= lr * p.grad``."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


def weights_init(m):
    classname = m.__class__.__name__
    if classname.find("Linear") != -1:
        m.weight.data.normal_(0.0, 0.02)
        m.bias.data.fill_(0.1)


def build():
    return nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 3))


def load_numpy_weights(model, seed):
    rng = np.random.default_rng(seed)
    for p in model.parameters():
        p.data.copy_(torch.from_numpy(rng.normal(0, 0.3, tuple(p.shape)).astype("float32")))


def soft_update(target, source, tau):
    for target_param, param in zip(target.parameters(), source.parameters()):
        target_param.data.copy_(tau * param.data + (1.0 - tau) * target_param.data)


def main():
    rng = np.random.default_rng(3)
    x = torch.from_numpy(rng.normal(size=(20, 6)).astype("float32"))
    y = torch.from_numpy(rng.integers(0, 3, size=20))

    initialised = build()
    initialised.apply(weights_init)
    biases = [initialised[0].bias.data.sum().item(), initialised[2].bias.data.sum().item()]
    weight_std = initialised[0].weight.data.std().item()

    model, target = build(), build()
    load_numpy_weights(model, seed=1)
    load_numpy_weights(target, seed=2)
    lr, losses = 0.1, []
    for step in range(6):
        loss = F.cross_entropy(model(x), y)
        model.zero_grad()
        loss.backward()
        for p in model.parameters():
            if step % 2 == 0:
                p.data.add_(p.grad, alpha=-lr)
            else:
                p.data -= lr * p.grad
            p.data.clamp_(-0.5, 0.5)
        soft_update(target, model, tau=0.25)
        losses.append(loss.item())

    with torch.no_grad():
        target_loss = F.cross_entropy(target(x), y).item()
    first = model[0].weight
    return {
        "biases": biases,
        "init std below 0.05": weight_std < 0.05,
        "losses": losses,
        "target loss": target_loss,
        "clamped": float(first.data.abs().max().item()) <= 0.5,
        "still a leaf": first.is_leaf and first.requires_grad and first.grad_fn is None,
        "data requires grad": first.data.requires_grad,
    }


if __name__ == "__main__":
    print(main())

"""A classifier wrapped in torch.compile: trained in train() mode, evaluated under no_grad() in
eval() mode on batches of two sizes (the last one smaller), a compiled metric function, and the
compiled model's state dict (keys prefixed "_orig_mod.") loaded back into a plain model."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

BACKEND = "aot_eager"  # traced, without generating C++ kernels


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(8, 32, bias=False)  # BatchNorm follows
        self.bn = nn.BatchNorm1d(32)
        self.fc2 = nn.Linear(32, 4)

    def forward(self, x):
        return self.fc2(F.relu(self.bn(self.fc1(x))))


def init_weights(model, seed):
    rng = np.random.default_rng(seed)
    with torch.no_grad():
        for name, param in model.named_parameters():
            if name.startswith("bn"):
                continue
            param.copy_(
                torch.from_numpy(rng.uniform(-0.4, 0.4, tuple(param.shape)).astype(np.float32))
            )


@torch.compile(backend=BACKEND)
def accuracy(logits, labels):
    return (logits.argmax(dim=1) == labels).float().mean()


def main():
    torch.manual_seed(0)
    rng = np.random.default_rng(3)
    x = torch.from_numpy(rng.standard_normal((40, 8)).astype(np.float32))
    y = torch.from_numpy((x.numpy()[:, :4] * [1.0, -1.0, 0.5, 2.0]).argmax(axis=1))
    model = Classifier()
    init_weights(model, seed=4)
    model = torch.compile(model, backend=BACKEND)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    criterion = nn.CrossEntropyLoss()

    losses, evaluations = [], []
    for epoch in range(3):
        model.train()
        for start in range(0, 32, 8):
            optimizer.zero_grad()
            loss = criterion(model(x[start : start + 8]), y[start : start + 8])
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        model.eval()
        with torch.no_grad():
            for start in (16, 32):  # 16 rows, then the last 8
                logits = model(x[start : start + 16])
                evaluations.append(
                    [accuracy(logits, y[start : start + 16]).item(), logits.sum().item()]
                )
        print(f"epoch {epoch}: loss {losses[-1]:.4f}, accuracy {evaluations[-1][0]:.3f}")

    state = model.state_dict()
    plain = Classifier()
    plain.load_state_dict(model._orig_mod.state_dict())
    plain.eval()
    with torch.no_grad():
        same = torch.allclose(plain(x), model(x))
    return {
        "losses": losses,
        "evaluations": evaluations,
        "keys": list(state.keys()),
        "running_var": state["_orig_mod.bn.running_var"].numpy().tolist(),
        "same_after_loading": same,
        "training": model.training,
    }


if __name__ == "__main__":
    main()

"""A classifier trained by a plain script: main() builds the data, the model and the optimizer,
and runs the loop (no argparse; the settings are constants at the top)."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

EPOCHS = 3
BATCH_SIZE = 16
LEARNING_RATE = 0.1


def init_weights(model, seed):
    """The same starting weights in any library: drawn with NumPy, copied in place."""
    rng = np.random.default_rng(seed)
    with torch.no_grad():
        for _, param in model.named_parameters():
            values = rng.uniform(-0.5, 0.5, size=tuple(param.shape)).astype(np.float32)
            param.copy_(torch.from_numpy(values))


class MLP(nn.Module):
    def __init__(self, in_features, hidden, classes):
        super().__init__()
        self.fc1 = nn.Linear(in_features, hidden)
        self.fc2 = nn.Linear(hidden, hidden)
        self.out = nn.Linear(hidden, classes)

    def forward(self, x):
        x = F.relu(self.fc1(x))
        x = torch.tanh(self.fc2(x))
        return self.out(x)


def make_data(seed, count=96, features=10, classes=3):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((count, features)).astype(np.float32)
    y = (x[:, :classes] * np.arange(1, classes + 1)).argmax(axis=1)
    return torch.tensor(x), torch.tensor(y, dtype=torch.long)


def main():
    torch.manual_seed(0)
    x, y = make_data(seed=1)
    model = MLP(10, 32, 3)
    init_weights(model, seed=2)
    optimizer = torch.optim.SGD(
        model.parameters(), lr=LEARNING_RATE, momentum=0.9, weight_decay=1e-4
    )
    criterion = nn.CrossEntropyLoss()
    losses = []
    for epoch in range(EPOCHS):
        model.train()
        for start in range(0, len(x), BATCH_SIZE):
            inputs, targets = x[start : start + BATCH_SIZE], y[start : start + BATCH_SIZE]
            optimizer.zero_grad()
            loss = criterion(model(inputs), targets)
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        print(f"epoch {epoch}: loss {losses[-1]:.4f}")
    logits = model(x)
    _, predicted = logits.max(1)
    accuracy = (predicted == y).float().mean().item()
    print(f"accuracy {accuracy:.3f}")
    return {"losses": losses, "accuracy": accuracy, "logits": logits.detach().numpy().tolist()}


if __name__ == "__main__":
    main()

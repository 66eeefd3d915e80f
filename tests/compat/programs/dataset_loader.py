"""A Dataset subclass read through DataLoaders, a Subset for validation, and Adam."""

import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset, Subset, TensorDataset


class NoisySine(Dataset):
    """Points of a sine wave with noise: (x, y) pairs as 1-element float tensors."""

    def __init__(self, count, seed):
        rng = np.random.default_rng(seed)
        self.x = rng.uniform(-3, 3, size=(count, 1)).astype(np.float32)
        self.y = (np.sin(self.x) + 0.05 * rng.standard_normal((count, 1))).astype(np.float32)

    def __len__(self):
        return len(self.x)

    def __getitem__(self, index):
        return torch.from_numpy(self.x[index]), torch.from_numpy(self.y[index])


def init_weights(model, seed):
    rng = np.random.default_rng(seed)
    with torch.no_grad():
        for param in model.parameters():
            param.copy_(
                torch.tensor(rng.normal(0, 0.4, size=tuple(param.shape)), dtype=torch.float32)
            )


def main():
    dataset = NoisySine(120, seed=3)
    train_set = Subset(dataset, list(range(100)))
    valid_set = Subset(dataset, list(range(100, 120)))
    train_loader = DataLoader(train_set, batch_size=20, shuffle=False, drop_last=True)
    valid_loader = DataLoader(valid_set, batch_size=8)

    model = nn.Sequential(
        nn.Linear(1, 16), nn.Tanh(), nn.Linear(16, 16), nn.Tanh(), nn.Linear(16, 1)
    )
    init_weights(model, seed=4)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01, betas=(0.9, 0.99))
    loss_fn = nn.MSELoss()
    history = []
    for _ in range(4):
        running = 0.0
        for inputs, targets in train_loader:
            prediction = model(inputs)
            loss = loss_fn(prediction, targets)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            running += loss.item()
        history.append(running / len(train_loader))

    valid_loss, sizes = 0.0, []
    with torch.no_grad():
        for inputs, targets in valid_loader:
            sizes.append(inputs.shape[0])
            valid_loss += loss_fn(model(inputs), targets).item() * inputs.size(0)
    valid_loss /= len(valid_set)

    features = torch.tensor(dataset.x[:6])
    pairs = TensorDataset(features, model(features).detach())
    first_x, first_y = pairs[0]
    print(f"train {history[-1]:.5f}  valid {valid_loss:.5f}  batches {sizes}")
    return {
        "history": history,
        "valid": valid_loss,
        "sizes": sizes,
        "batches": len(train_loader),
        "first": [first_x.item(), first_y.item()],
        "length": len(pairs),
    }


if __name__ == "__main__":
    main()

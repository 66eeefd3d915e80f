"""A small convolutional classifier: the device picked from what is available, cuDNN flags set
as tutorials do, training in train() mode and evaluation under no_grad() in eval() mode."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim


def pick_device():
    if torch.cuda.is_available():
        torch.backends.cudnn.benchmark = True
        return torch.device("cuda")
    if torch.backends.mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 4, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(4)
        self.conv2 = nn.Conv2d(4, 8, 3)
        self.fc1 = nn.Linear(8 * 2 * 2, 16)
        self.fc2 = nn.Linear(16, 4)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 2)
        x = F.relu(self.conv2(x))
        x = torch.flatten(x, 1)
        x = F.relu(self.fc1(x))
        return F.log_softmax(self.fc2(x), dim=1)


def init_weights(model, seed):
    rng = np.random.default_rng(seed)
    with torch.no_grad():
        for name, param in model.named_parameters():
            if name.startswith("bn"):
                continue  # BatchNorm keeps its ones and zeros
            scale = 1.0 / np.sqrt(np.prod(param.shape[1:])) if param.dim() > 1 else 0.1
            param.copy_(
                torch.from_numpy(
                    rng.uniform(-scale, scale, size=tuple(param.shape)).astype(np.float32)
                )
            )


def evaluate(model, device, images, labels):
    model.eval()
    test_loss, correct = 0.0, 0
    with torch.no_grad():
        data, target = images.to(device), labels.to(device)
        output = model(data)
        test_loss += F.nll_loss(output, target, reduction="sum").item()
        pred = output.argmax(dim=1, keepdim=True)
        correct += pred.eq(target.view_as(pred)).sum().item()
    return test_loss / len(images), correct


def main():
    torch.manual_seed(1)
    torch.cuda.manual_seed_all(1)
    device = pick_device()
    rng = np.random.default_rng(5)
    images = torch.from_numpy(rng.standard_normal((32, 1, 8, 8)).astype(np.float32))
    labels = torch.from_numpy(
        (images.numpy()[:, 0, :4, :4].mean(axis=(1, 2)) > 0).astype(np.int64)
        + 2 * (images.numpy()[:, 0, 4:, 4:].mean(axis=(1, 2)) > 0)
    )
    model = Net().to(device)
    init_weights(model, seed=6)
    optimizer = optim.SGD(model.parameters(), lr=0.05, momentum=0.5)
    losses = []
    for step in range(6):
        model.train()
        data, target = (
            images[step % 2 * 16 :][:16].to(device),
            labels[step % 2 * 16 :][:16].to(device),
        )
        optimizer.zero_grad()
        loss = F.nll_loss(model(data), target)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    test_loss, correct = evaluate(model, device, images, labels)
    running_mean = model.bn1.running_mean.cpu().numpy().tolist()
    print(f"{device}: loss {losses[-1]:.4f}, test loss {test_loss:.4f}, {correct}/32 correct")
    return {
        "device": str(device),
        "losses": losses,
        "test_loss": test_loss,
        "correct": correct,
        "running_mean": running_mean,
        "is_cuda": images.to(device).is_cuda,
    }


if __name__ == "__main__":
    main()

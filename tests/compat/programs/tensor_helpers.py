"""The small conveniences programs lean on: squeeze of a named dim, view_as, roll, the *_like
factories, randperm, inference_mode, DataParallel on one device, seeding and cuDNN flags."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.parallel  # imported by the classic ImageNet script, used only on GPUs
from torch.utils.data import TensorDataset, random_split


def seed_everything(seed):
    np.random.seed(seed)
    torch.manual_seed(seed)
    torch.cuda.manual_seed_all(seed)
    torch.backends.cudnn.deterministic = True
    torch.backends.cudnn.benchmark = False


@torch.inference_mode()
def predict(model, x):
    return model(x)


@torch.no_grad()
def total(x):
    return x.sum()


def main():
    seed_everything(0)
    x = torch.from_numpy(np.arange(24, dtype=np.float32).reshape(2, 3, 4, 1))
    squeezed = {
        "dim0": list(x.squeeze(0).shape),  # size 2: left as it is
        "dim3": list(x.squeeze(3).shape),
        "keyword": list(torch.squeeze(x, dim=-1).shape),
        "tuple": list(x.squeeze((0, 3)).shape),
    }
    flat = x.view(6, 4)
    rolled = torch.roll(flat, shifts=(1, -1), dims=(0, 1))
    like = [tuple(f(flat).shape) for f in (torch.randn_like, torch.rand_like, torch.empty_like)]
    ints = torch.randint_like(flat, 3, 7)
    perm = torch.randperm(10)
    weights = torch.full_like(flat, 0.5)

    model = nn.Linear(4, 2)
    with torch.no_grad():
        model.weight.copy_(torch.from_numpy(np.linspace(-1, 1, 8, dtype=np.float32).reshape(2, 4)))
        model.bias.fill_(0.25)
    parallel = nn.DataParallel(model) if torch.cuda.device_count() <= 1 else model
    out = predict(parallel, flat)
    with torch.inference_mode():
        again = model(flat)

    dataset = TensorDataset(flat, torch.arange(6))
    train_part, valid_part = random_split(dataset, [4, 2])
    summary = {
        "squeezed": squeezed,
        "rolled": rolled.tolist(),
        "like": [list(shape) for shape in like],
        "int_range": [float(ints.min()) >= 3, float(ints.max()) <= 6, ints.dtype == flat.dtype],
        "perm": sorted(perm.tolist()),
        "weights": weights.view_as(flat).sum().item(),
        "out": out.tolist(),
        "same": bool((out == again).all()),
        "requires_grad": [out.requires_grad, again.requires_grad],
        "total": total(flat).item(),
        "splits": [len(train_part), len(valid_part)],
        "keys": list(parallel.state_dict().keys()),
        "is_cuda": flat.is_cuda,
    }
    print(summary["squeezed"], summary["splits"], summary["keys"])
    return summary


if __name__ == "__main__":
    main()

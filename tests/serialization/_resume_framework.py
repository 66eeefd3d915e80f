"""Train a small model with the framework's own parts, optionally resuming from a checkpoint.

Usage: python _resume_framework.py EPOCHS OUT [CHECKPOINT]

nn.Dropout, DataLoader(shuffle=True), Adam with weight decay and a clipping hook, and a cosine
schedule: every source of randomness and every piece of state a resume must restore (the loader's
own state too: its seed is drawn once, on its first iteration).
"""

import sys

import numpy as np

import buildingai as bai
from buildingai import nn
from buildingai.data import DataLoader, TensorDataset
from buildingai.optim import Adam, clip_grad_hook
from buildingai.optim.schedulers import CosineAnnealingLR

epochs, out_path = int(sys.argv[1]), sys.argv[2]
resume_from = sys.argv[3] if len(sys.argv) > 3 else None

bai.manual_seed(0)
rng = np.random.default_rng(1)
data = TensorDataset(
    bai.tensor(rng.standard_normal((48, 6)).astype("float32")),
    bai.tensor(rng.standard_normal((48, 1)).astype("float32")),
)
model = nn.Sequential(nn.Linear(6, 32), nn.ReLU(), nn.Dropout(0.3), nn.Linear(32, 1))
optimizer = Adam(model.parameters(), lr=0.01, weight_decay=0.01)
optimizer.register_step_pre_hook(clip_grad_hook(0.5))
schedule = CosineAnnealingLR(optimizer, T_max=10)
loader = DataLoader(data, batch_size=8, shuffle=True)

start = 0
if resume_from is not None:
    bai.manual_seed(12345)  # deliberately disturbed: the checkpoint must restore every stream
    np.random.seed(7)
    checkpoint = bai.load(resume_from)
    model.load_state_dict(checkpoint["model"])
    optimizer.load_state_dict(checkpoint["optimizer"])
    schedule.load_state_dict(checkpoint["schedule"])
    loader.load_state_dict(checkpoint["loader"])
    bai.set_rng_state(checkpoint["rng"])
    start = checkpoint["epoch"]

for _epoch in range(start, start + epochs):
    model.train()
    for x, y in loader:
        loss = ((model(x) - y) ** 2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    schedule.step()

bai.save(
    {
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "schedule": schedule.state_dict(),
        "loader": loader.state_dict(),
        "rng": bai.get_rng_state(),
        "epoch": start + epochs,
    },
    out_path,
)

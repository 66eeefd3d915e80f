"""Resume the Adam run that jobs/sharded_optimizer.py saved at step 5 (at any world size) on this
world size, train steps 5 to 9, and compare with the saved run's weights after step 10.

    python -m buildingai launch -n 4 sharded_resume.py CHECKPOINT_DIR
"""

import glob
import os
import sys

import numpy as np

import buildingai as bai
from buildingai import nn, optim
from buildingai.distributed import ShardedOptimizer, get_rank, get_world_size, init_process_group
from buildingai.nn import functional as F

init_process_group(timeout=60)
rank, size = get_rank(), get_world_size()
directory = sys.argv[1]
COMBINED = 8


def batch(step):
    """This rank's part of the combined batch of ``step`` (as jobs/sharded_optimizer.py)."""
    rng = np.random.default_rng(step)
    images = rng.standard_normal((COMBINED, 6))
    labels = rng.integers(0, 3, COMBINED)
    part = slice(rank * COMBINED // size, (rank + 1) * COMBINED // size)
    return bai.tensor(images[part]), bai.tensor(labels[part])


model = nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 3)).to(bai.float64)
model.load_state_dict(bai.load(os.path.join(directory, "model-5.bai")))
optimizer = ShardedOptimizer(optim.Adam, model.parameters(), lr=0.01, weight_decay=0.01)
saved = [bai.load(path) for path in sorted(glob.glob(os.path.join(directory, "optimizer-*.bai")))]
optimizer.load_state_dict(saved)
for step in range(5, 10):
    optimizer.zero_grad()
    images, labels = batch(step)
    F.cross_entropy(model(images), labels).backward()
    optimizer.step()

expected = bai.load(os.path.join(directory, "model-10.bai"))
failures = []
for name, param in model.named_parameters():
    want = np.asarray(
        expected[name].numpy() if hasattr(expected[name], "numpy") else expected[name]
    )
    if not np.allclose(param.numpy(), want, rtol=1e-10, atol=1e-12):
        failures.append(f"rank {rank}: {name} differs by {np.abs(param.numpy() - want).max():.3g}")
for failure in failures:
    print("FAIL", failure)
if not failures:
    print(f"rank {rank}/{size}: resumed {len(saved)} ranks' optimizer state ok")
sys.exit(1 if failures else 0)

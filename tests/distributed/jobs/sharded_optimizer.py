"""ShardedOptimizer (ZeRO stages 1 and 2) against data-parallel training with the same optimizer,
on any number of processes: every optimizer of buildingai.optim, clipping by the global norm,
gradient accumulation, parameter groups, GradScaler, and the optimizer-state bytes per rank.

    python -m buildingai launch -n 2 sharded_optimizer.py [CHECKPOINT_DIR]

With CHECKPOINT_DIR, each rank saves its optimizer state after step 5 of an Adam run, and rank 0
the model at step 5 and 10 (jobs/sharded_resume.py resumes it at another world size). Prints one
"ok" line per rank."""

import math
import os
import sys

import numpy as np

import buildingai as bai
from buildingai import nn, optim
from buildingai.amp import GradScaler, autocast
from buildingai.distributed import (
    ShardedOptimizer,
    all_reduce,
    get_rank,
    get_world_size,
    init_process_group,
)
from buildingai.nn import functional as F

init_process_group(timeout=60)
rank, size = get_rank(), get_world_size()
COMBINED, STEPS = 8, 10


def new_model(dtype=bai.float64):
    bai.manual_seed(0)  # the same weights on every rank
    return nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 3)).to(dtype)


def batch(step, dtype=np.float64):
    """This rank's part of the combined batch of ``step`` (the same data at any world size)."""
    rng = np.random.default_rng(step)
    images = rng.standard_normal((COMBINED, 6)).astype(dtype)
    labels = rng.integers(0, 3, COMBINED)
    part = slice(rank * COMBINED // size, (rank + 1) * COMBINED // size)
    return bai.tensor(images[part]), bai.tensor(labels[part])


def backward(model, step, micro_batches=1, scaler=None):
    images, labels = batch(step)
    for chunk in np.array_split(np.arange(images.shape[0]), micro_batches):
        loss = F.cross_entropy(model(images[chunk.tolist()]), labels[chunk.tolist()])
        loss = loss * (1.0 / micro_batches)
        (scaler.scale(loss) if scaler else loss).backward()


def data_parallel(model, optimizer, steps=STEPS, clip=None, micro_batches=1):
    for step in range(steps):
        optimizer.zero_grad()
        backward(model, step, micro_batches)
        for param in model.parameters():
            all_reduce(param.grad, op="mean")
        if clip:
            optim.clip_grad_norm_(model.parameters(), clip)
        optimizer.step()


def sharded(model, optimizer, steps=STEPS, clip=None, micro_batches=1, first=0):
    for step in range(first, first + steps):
        optimizer.zero_grad()
        backward(model, step, micro_batches)
        optimizer.reduce_gradients()
        if clip:
            optimizer.clip_grad_norm_(clip)
        optimizer.step()


failures = []


def compare(label, expected, got, rtol=1e-10, atol=1e-12):
    for (name, want), have in zip(expected.named_parameters(), got.parameters()):
        if not np.allclose(have.numpy(), want.numpy(), rtol=rtol, atol=atol):
            error = np.abs(have.numpy() - want.numpy()).max()
            failures.append(f"rank {rank}: {label} {name} differs by {error:.3g}")


OPTIMIZERS = [
    (optim.SGD, {"lr": 0.1, "momentum": 0.9, "weight_decay": 0.01, "nesterov": True}),
    (optim.Adam, {"lr": 0.01, "weight_decay": 0.01, "amsgrad": True}),
    (optim.AdamW, {"lr": 0.01}),
    (optim.Adagrad, {"lr": 0.1}),
    (optim.Adadelta, {"lr": 1.0}),
    (optim.RMSprop, {"lr": 0.01, "momentum": 0.5, "centered": True}),
    (optim.Lion, {"lr": 0.001}),
]
for optimizer_class, settings in OPTIMIZERS:
    for stage in (1, 2) if optimizer_class is optim.Adam else (2,):
        reference = new_model()
        data_parallel(reference, optimizer_class(reference.parameters(), **settings))
        model = new_model()
        sharded(model, ShardedOptimizer(optimizer_class, model.parameters(), stage=stage,
                                        **settings))  # fmt: skip
        compare(f"{optimizer_class.__name__} stage {stage}", reference, model)

# ----- clipping by the global norm, two micro-batches, two parameter groups -----------------------
reference = new_model()
groups = [{"params": list(reference[0].parameters()), "lr": 0.02},
          {"params": list(reference[2].parameters())}]  # fmt: skip
data_parallel(reference, optim.Adam(groups, lr=0.01), clip=0.05, micro_batches=2)
model = new_model()
groups = [{"params": list(model[0].parameters()), "lr": 0.02},
          {"params": list(model[2].parameters())}]  # fmt: skip
sharded(model, ShardedOptimizer(optim.Adam, groups, lr=0.01), clip=0.05, micro_batches=2)
compare("clipped, accumulated, grouped", reference, model)

# ----- mixed precision: autocast float16 and GradScaler (a scale so large the first steps skip) ---
losses = {}
for label in ("data parallel", "sharded"):
    model = new_model(bai.float32)
    if label == "sharded":
        optimizer = ShardedOptimizer(optim.Adam, model.parameters(), lr=0.01)
    else:
        optimizer = optim.Adam(model.parameters(), lr=0.01)
    scaler = GradScaler(init_scale=2.0**40, growth_interval=3)
    scales = []
    for step in range(STEPS):
        optimizer.zero_grad()
        images, labels = batch(step, np.float32)
        with autocast(dtype="float16"), np.errstate(over="ignore", invalid="ignore"):
            loss = F.cross_entropy(model(images), labels)
            scaler.scale(loss).backward()  # overflows to inf while the scale is too large
        if label == "sharded":
            optimizer.reduce_gradients()  # before the scaler reads the pieces' gradients
        else:
            for param in model.parameters():
                all_reduce(param.grad, op="mean")
        scaler.step(optimizer)
        scaler.update()
        scales.append(scaler.get_scale())
    losses[label] = (model, scales)
(reference, reference_scales), (model, scales) = losses["data parallel"], losses["sharded"]
if scales != reference_scales or scales[0] == 2.0**40:
    failures.append(f"rank {rank}: GradScaler scales {scales} != {reference_scales}")
compare("autocast + GradScaler", reference, model, rtol=1e-5, atol=1e-6)

# ----- optimizer-state bytes per rank: 1/N of unsharded, plus padding -----------------------------
reference = new_model()
unsharded = optim.Adam(reference.parameters(), lr=0.01)
data_parallel(reference, unsharded, steps=1)
unsharded_bytes = sum(v.nbytes for s in unsharded.state.values() for v in s.values()
                      if hasattr(v, "nbytes"))  # fmt: skip
model = new_model()
optimizer = ShardedOptimizer(optim.Adam, model.parameters(), lr=0.01)
sharded(model, optimizer, steps=1)
numel = sum(p.data.size for p in model.parameters())
padding_bytes = 2 * 8 * (math.ceil(numel / size) * size - numel)  # two moments, float64
if optimizer.state_bytes() * size != unsharded_bytes + padding_bytes:
    failures.append(f"rank {rank}: state bytes {optimizer.state_bytes()} x {size} != "
                    f"{unsharded_bytes} + {padding_bytes} padding")  # fmt: skip
print(f"rank {rank}/{size}: Adam state {optimizer.state_bytes()} bytes "
      f"(unsharded {unsharded_bytes} bytes, {numel} parameters)")  # fmt: skip

# ----- a checkpoint at step 5 for jobs/sharded_resume.py ------------------------------------------
if len(sys.argv) > 1:
    directory = sys.argv[1]
    model = new_model()
    optimizer = ShardedOptimizer(optim.Adam, model.parameters(), lr=0.01, weight_decay=0.01)
    sharded(model, optimizer, steps=5)
    bai.save(optimizer.state_dict(), os.path.join(directory, f"optimizer-{rank}.bai"))
    if rank == 0:
        bai.save(model.state_dict(), os.path.join(directory, "model-5.bai"))
    sharded(model, optimizer, steps=5, first=5)
    if rank == 0:
        bai.save(model.state_dict(), os.path.join(directory, "model-10.bai"))

for failure in failures:
    print("FAIL", failure)
if not failures:
    print(f"rank {rank}/{size}: sharded optimizer ok (matches data parallel)")
sys.exit(1 if failures else 0)

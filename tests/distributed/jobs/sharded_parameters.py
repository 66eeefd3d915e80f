"""Sharded parameters (ZeRO stage 3) train a small Transformer language model on any number of
processes, equal to unsharded training on one process over the combined batch, under a per-rank
memory limit that the unsharded parameters and Adam state alone exceed.

    python -m buildingai launch -n 4 sharded_parameters.py

Memory is what ``buildingai.memory`` counts (every tensor's buffer, gathered parameters and
flat gradients included) plus the optimizer's state arrays. Prints one "ok" line per rank."""

import sys

import numpy as np

import buildingai as bai
from buildingai import memory, nn, optim
from buildingai.distributed import get_rank, get_world_size, init_process_group, shard
from buildingai.nn import functional as F

init_process_group(timeout=60)
rank, size = get_rank(), get_world_size()
VOCAB, WIDTH, LAYERS, SEQUENCE, COMBINED, STEPS = 40, 96, 4, 8, 8, 10
LIMIT = 6_000_000  # bytes per rank at 4 ranks; the unsharded parameters and Adam state: 7.37 MB


class TinyLM(nn.Module):
    """Embedding, four Transformer encoder layers, a final norm and the output projection."""

    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(VOCAB, WIDTH)
        self.layers = nn.ModuleList([
            nn.TransformerEncoderLayer(WIDTH, 4, 2 * WIDTH, dropout=0.0, batch_first=True)
            for _ in range(LAYERS)
        ])  # fmt: skip
        self.norm = nn.LayerNorm(WIDTH)
        self.head = nn.Linear(WIDTH, VOCAB)

    def forward(self, tokens):  # (batch, sequence) -> (batch, sequence, vocab)
        x = self.embed(tokens)
        for layer in self.layers:
            x = layer(x)
        return self.head(self.norm(x))


def new_model():
    bai.manual_seed(0)  # the same weights on every rank
    return TinyLM().to(bai.float64)


def tokens(step, part=slice(None)):
    rng = np.random.default_rng(step)
    text = rng.integers(0, VOCAB, (COMBINED, SEQUENCE + 1))[part]
    return bai.tensor(text[:, :-1]), bai.tensor(text[:, 1:].reshape(-1))


def loss_of(model, step, part=slice(None)):
    inputs, targets = tokens(step, part)
    return F.cross_entropy(model(inputs).reshape(-1, VOCAB), targets)


def state_bytes(optimizer):
    return sum(v.nbytes for s in optimizer.state.values() for v in s.values()
               if hasattr(v, "nbytes"))  # fmt: skip


# ----- sharded, on this rank's part of each batch -------------------------------------------------
memory.start_tracking()
model = new_model()
sharded = shard(model, policy=(nn.TransformerEncoderLayer,))
optimizer = optim.Adam(sharded.parameters(), lr=0.01)
memory.reset_peak()
part = slice(rank * COMBINED // size, (rank + 1) * COMBINED // size)
for step in range(STEPS):
    optimizer.zero_grad()
    loss_of(model, step, part).backward()
    sharded.finish_gradients()
    sharded.clip_grad_norm_(1.0)
    optimizer.step()
peak = memory.stats()["peak"] + state_bytes(optimizer)
memory.stop_tracking()
trained = sharded.full_state_dict()

# ----- unsharded, one process, the combined batch -------------------------------------------------
single = new_model()
single_optimizer = optim.Adam(single.parameters(), lr=0.01)
unsharded_bytes = sum(p.data.nbytes for p in single.parameters())
for step in range(STEPS):
    single_optimizer.zero_grad()
    loss_of(single, step).backward()
    optim.clip_grad_norm_(single.parameters(), 1.0)
    single_optimizer.step()
unsharded_bytes += state_bytes(single_optimizer)

failures = []
for name, expected in single.state_dict().items():
    error = np.abs(trained[name].numpy() - expected.numpy()).max()
    if not error <= 1e-9:
        failures.append(f"rank {rank}: {name} differs by {error:.3g}")
if unsharded_bytes <= LIMIT:
    failures.append(f"the unsharded parameters and Adam state ({unsharded_bytes}) fit {LIMIT}")
if size >= 4 and peak > LIMIT:
    failures.append(f"rank {rank}: peak {peak} bytes is over the limit of {LIMIT}")
print(f"rank {rank}/{size}: peak {peak} bytes (limit {LIMIT}; unsharded parameters and Adam "
      f"state {unsharded_bytes} bytes)")  # fmt: skip
for failure in failures:
    print("FAIL", failure)
if not failures:
    print(f"rank {rank}/{size}: sharded parameters ok (match one process on the combined batch)")
sys.exit(1 if failures else 0)

"""``DistributedSampler``: each rank visits its own share of the dataset, the same shares on every
run for a given seed and epoch, and can resume mid-epoch from a state dict."""

from __future__ import annotations

from collections.abc import Iterator, Sized

import numpy as np

from ..data.sampler import Sampler
from .errors import DistributedError
from .group import get_rank, get_world_size


class DistributedSampler(Sampler):
    """Indices for one rank: a permutation of the dataset (seeded by ``seed + epoch``, identical
    on every rank) padded by repeating its start to a multiple of ``num_replicas`` (or cut, with
    ``drop_last``), and every ``num_replicas``-th item of it from ``rank`` on.

    Call ``set_epoch(epoch)`` before each epoch for a new order. ``state_dict()`` records the
    epoch and how many indices this rank's iterator has handed out (a DataLoader that prefetches
    has taken the indices of the batches in flight too); ``load_state_dict`` makes the next
    iteration continue from there (the interrupted epoch's remaining indices), also at another
    number of replicas when the indices handed out split evenly over them.
    """

    def __init__(self, dataset: Sized, num_replicas: int | None = None, rank: int | None = None,
                 shuffle: bool = True, seed: int = 0, drop_last: bool = False) -> None:  # fmt: skip
        self.num_replicas = get_world_size() if num_replicas is None else int(num_replicas)
        self.rank = get_rank() if rank is None else int(rank)
        if not 0 <= self.rank < self.num_replicas:
            raise DistributedError(
                f"[DistributedSampler] rank {self.rank} is outside 0..{self.num_replicas - 1}"
            )
        self.dataset, self.shuffle, self.seed, self.drop_last = dataset, shuffle, seed, drop_last
        self.epoch = 0
        self.start = 0  # indices of this epoch already handed out before a resume
        self.handed_out = 0

    def __len__(self) -> int:
        total = len(self.dataset)
        if self.drop_last:
            return total // self.num_replicas
        return -(-total // self.num_replicas)

    def set_epoch(self, epoch: int) -> None:
        self.epoch, self.start = int(epoch), 0

    def indices(self) -> np.ndarray:
        """All of this rank's indices for the current epoch, in order."""
        total = len(self.dataset)
        if self.shuffle:
            order = np.random.default_rng([self.seed, self.epoch]).permutation(total)
        else:
            order = np.arange(total)
        wanted = len(self) * self.num_replicas
        if wanted > total:  # pad by wrapping around, so every rank has the same count
            order = np.resize(order, wanted)
        return order[self.rank : wanted : self.num_replicas]

    def __iter__(self) -> Iterator[int]:
        mine = self.indices()
        start, self.start = self.start, 0
        self.handed_out = start
        for index in mine[start:]:
            self.handed_out += 1
            yield int(index)

    def state_dict(self) -> dict:
        return {"epoch": self.epoch, "seed": self.seed, "position": self.handed_out,
                "num_replicas": self.num_replicas, "rank": self.rank}  # fmt: skip

    def load_state_dict(self, state: dict) -> None:
        """Continue from ``state``. A state saved with another number of replicas resumes too
        when the indices all ranks had handed out (``position * num_replicas``) split evenly
        over this sampler's replicas: the ranks then continue from the same place in the
        epoch's permutation, so a global batch keeps its samples (exactly so when the dataset
        needs no padding at either size)."""
        position = state["position"]
        if state["num_replicas"] != self.num_replicas:
            consumed = position * state["num_replicas"]
            if consumed % self.num_replicas:
                raise DistributedError(
                    f"[DistributedSampler] the state was saved with {state['num_replicas']} "
                    f"replicas after {consumed} indices in all, which {self.num_replicas} "
                    "replicas cannot split evenly",
                    help="resume from a checkpoint taken where the global batch count divides "
                    "evenly, or with the same number of processes",
                )
            position = min(consumed // self.num_replicas, len(self))
        self.epoch, self.seed, self.start = state["epoch"], state["seed"], position
        self.handed_out = self.start

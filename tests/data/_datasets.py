"""Small datasets used by the DataLoader tests (module level, so spawn-based workers can import
them too)."""

from __future__ import annotations

import os
import random
import time

import numpy as np

import buildingai as bai
from buildingai.data import Dataset, IterableDataset, get_worker_info


class Indexed(Dataset):
    """Item i is ``(float32 array full of i, shape (2, 3)), i)``."""

    def __init__(self, n: int = 20) -> None:
        self.n = n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, index: int):
        return np.full((2, 3), index, dtype=np.float32), index


class SlowFirstWorker(Indexed):
    """Even items are slow, so worker 0 finishes last although its batches come first."""

    def __getitem__(self, index: int):
        if index % 2 == 0:
            time.sleep(0.02)
        return super().__getitem__(index)


class RandomDraws(Dataset):
    """Each item records the worker and draws from every global random stream."""

    def __len__(self) -> int:
        return 8

    def __getitem__(self, index: int):
        info = get_worker_info()
        return {
            "index": index,
            "worker": -1 if info is None else info.id,
            "seed": -1 if info is None else info.seed,
            "numpy": np.random.random_sample(),
            "python": random.random(),
            "buildingai": float(bai.rand(1).item()),
        }


class Failing(Indexed):
    def __getitem__(self, index: int):
        if index == 7:
            raise ValueError(f"item {index} is corrupt")
        return super().__getitem__(index)


class KillsItself(Indexed):
    def __getitem__(self, index: int):
        if index == 5:
            os.kill(os.getpid(), 9)
        return super().__getitem__(index)


class Sleeps(Indexed):
    def __init__(self, n: int = 20, seconds: float = 30.0) -> None:
        super().__init__(n)
        self.seconds = seconds

    def __getitem__(self, index: int):
        time.sleep(self.seconds)
        return super().__getitem__(index)


class Large(Dataset):
    """1 MB float32 items."""

    def __len__(self) -> int:
        return 16

    def __getitem__(self, index: int):
        return np.full((512, 512), index, dtype=np.float32), str(index)


class Stream(IterableDataset):
    """0 .. n-1, split between workers by ``get_worker_info``."""

    def __init__(self, n: int = 10) -> None:
        self.n = n

    def __len__(self) -> int:
        return self.n

    def __iter__(self):
        info = get_worker_info()
        start, step = (0, 1) if info is None else (info.id, info.num_workers)
        for value in range(start, self.n, step):
            yield np.int64(value)

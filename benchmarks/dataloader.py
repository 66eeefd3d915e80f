"""DataLoader throughput: batches per second with 0, 1 and 2 workers on MNIST-sized images
(60,000 x 28 x 28 uint8, synthetic) with augmentation (RandomCrop(28, padding=2),
RandomHorizontalFlip, Normalize), batch 128, against ``torch.utils.data.DataLoader`` on the same
NumPy dataset and the same transforms, in the same run.

Run: ``python -m benchmarks.dataloader [--quick]``.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

from buildingai.data import DataLoader, Dataset
from buildingai.data.transforms import (
    Compose,
    Normalize,
    RandomCrop,
    RandomHorizontalFlip,
    ToTensor,
)

from .common import accelerate, environment


class AugmentedImages(Dataset):
    """``(image (1, 28, 28) float32, label int64)`` with the augmentation applied per item."""

    def __init__(self, count: int) -> None:
        rng = np.random.default_rng(0)
        self.images = rng.integers(0, 256, (count, 28, 28), dtype=np.uint8)
        self.labels = rng.integers(0, 10, count).astype(np.int64)
        self.transform = Compose(
            [ToTensor(), RandomCrop(28, padding=2), RandomHorizontalFlip(), Normalize(0.13, 0.31)]
        )

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, index: int):
        return self.transform(self.images[index]), self.labels[index]


def _rate(make_loader, batches: int) -> float:
    """Batches per second over one pass of ``batches`` batches (worker start-up included)."""
    loader = make_loader()
    start = time.perf_counter()
    seen = 0
    for _ in loader:
        seen += 1
        if seen == batches:
            break
    elapsed = time.perf_counter() - start
    del loader
    return seen / elapsed


def run(quick: bool = False) -> dict:
    count = 4096 if quick else 60000
    batches = 8 if quick else count // 128
    dataset = AugmentedImages(count)
    results: dict[str, dict[str, float]] = {}
    try:
        import torch
        import torch.utils.data as torch_data
    except ImportError:  # pragma: no cover - torch is a benchmark extra
        torch = None
    for workers in (0, 1, 2):
        ours = _rate(
            lambda w=workers: iter(
                DataLoader(dataset, batch_size=128, shuffle=True, num_workers=w)
            ),
            batches,
        )
        row = {"buildingai": ours}
        if torch is not None:
            row["torch"] = _rate(
                lambda w=workers: iter(
                    torch_data.DataLoader(dataset, batch_size=128, shuffle=True, num_workers=w)
                ),
                batches,
            )
        results[f"{workers} workers"] = row
    return {"environment": environment(), "batches_per_second": results, "batches": batches}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="a small run for tests")
    args = parser.parse_args()
    accelerate()  # buildingai.accel on unless BUILDINGAI_ACCEL=0
    report = run(quick=args.quick)
    print(f"{'':<10} {'buildingai':>12} {'torch':>12}   (batches/s, batch 128)")
    for name, row in report["batches_per_second"].items():
        torch_rate = row.get("torch", float("nan"))
        print(f"{name:<10} {row['buildingai']:>12.1f} {torch_rate:>12.1f}")
    print(json.dumps(report["environment"], indent=1))


if __name__ == "__main__":
    main()

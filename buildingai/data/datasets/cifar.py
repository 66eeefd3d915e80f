"""CIFAR-10: 32 x 32 colour images in 10 classes (50,000 train, 10,000 test), from the official
*binary* version (no pickle is ever loaded)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

from ...errors import BuildingAIError
from ..dataset import Dataset
from ..sources import SourceFailed, dataset_dir, download, load_cached, verify_sha256
from ._formats import read_cifar_batches, read_tar_members

ARCHIVE = "cifar-10-binary.tar.gz"
ARCHIVE_URL = "https://www.cs.toronto.edu/~kriz/cifar-10-binary.tar.gz"
ARCHIVE_SHA256 = "c4a38c50a1bc5f3a1c5537f2155ab9d68f9f25eb1ed8d9ddda3db29a59bca1dd"
BATCHES = {
    "train": [f"data_batch_{number}.bin" for number in range(1, 6)],
    "test": ["test_batch.bin"],
}


class CIFAR10(Dataset):
    """CIFAR-10 (Krizhevsky, 2009), labels: airplane, automobile, bird, cat, deer, dog, frog,
    horse, ship, truck.

    Sources, tried in order (cached as ``$BUILDINGAI_HOME/datasets/cifar10/cifar10-<split>.npz``):

    1. a local folder (``root``, default ``$BUILDINGAI_HOME/datasets/cifar10/raw``) holding the
       extracted binary batches (``data_batch_1.bin`` ... ``test_batch.bin``, directly or in
       ``cifar-10-batches-bin/``; their record format is checked), or ``cifar-10-binary.tar.gz``
       (SHA-256 checked);
    2. the official archive from the University of Toronto (170 MB, SHA-256 checked).

    Each record of a batch file is 1 label byte and 3072 pixel bytes (red, green, blue planes).
    License: the dataset's authors publish it for research use without a formal license; cite
    "Learning Multiple Layers of Features from Tiny Images", A. Krizhevsky, 2009.
    """

    classes = [
        "airplane", "automobile", "bird", "cat", "deer",
        "dog", "frog", "horse", "ship", "truck",
    ]  # fmt: skip

    def __init__(
        self,
        split: str = "train",
        root: str | Path | None = None,
        transform: Callable | None = None,
        target_transform: Callable | None = None,
        download: bool = True,
    ) -> None:
        if split not in BATCHES:
            raise BuildingAIError(f"CIFAR10 split must be 'train' or 'test', got {split!r}")
        self.split = split
        self.transform, self.target_transform = transform, target_transform
        self.root = Path(root) if root is not None else dataset_dir("cifar10") / "raw"
        arrays = load_cached(
            f"CIFAR10 ({split})",
            dataset_dir("cifar10") / f"cifar10-{split}.npz",
            [
                (f"local folder {self.root}", self._from_folder),
                (f"official archive {ARCHIVE_URL}", self._from_url if download else None),
            ],
            how_to_supply=f"put {ARCHIVE} (or its extracted cifar-10-batches-bin folder) in "
            f"{self.root} or pass root=<that folder>; download it from {ARCHIVE_URL}",
        )
        self.images = arrays["images"]  # (N, 3, 32, 32) uint8
        self.labels = arrays["labels"].astype(np.int64)

    def _arrays(self, blobs: list[bytes]) -> dict[str, np.ndarray]:
        images, labels = read_cifar_batches(blobs)
        return {"images": images, "labels": labels}

    def _from_folder(self) -> dict[str, np.ndarray]:
        names = BATCHES[self.split]
        for folder in (self.root, self.root / "cifar-10-batches-bin"):
            if all((folder / name).is_file() for name in names):
                return self._arrays([(folder / name).read_bytes() for name in names])
        archive = self.root / ARCHIVE
        if archive.is_file():
            data = verify_sha256(archive.read_bytes(), ARCHIVE_SHA256, str(archive))
            members = read_tar_members(data, names)
            return self._arrays([members[name] for name in names])
        raise SourceFailed(f"neither {names} nor {ARCHIVE} found")

    def _from_url(self) -> dict[str, np.ndarray]:
        data = verify_sha256(download(ARCHIVE_URL, timeout=30), ARCHIVE_SHA256, ARCHIVE_URL)
        self.root.mkdir(parents=True, exist_ok=True)
        (self.root / ARCHIVE).write_bytes(data)
        members = read_tar_members(data, BATCHES[self.split])
        return self._arrays([members[name] for name in BATCHES[self.split]])

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, index: int):
        """``(image, label)``: without a transform, image is float32 ``(3, 32, 32)`` in [0, 1];
        a transform receives the raw ``(32, 32, 3)`` uint8 image (height, width, channels, as
        ``ToTensor`` expects). label is an int64 scalar."""
        image, label = self.images[index], self.labels[index]
        if self.transform is None:
            image = np.multiply(image, np.float32(1 / 255), dtype=np.float32)
        else:
            image = self.transform(image.transpose(1, 2, 0))
        if self.target_transform is not None:
            label = self.target_transform(label)
        return image, label

    def __repr__(self) -> str:
        return f"CIFAR10(split={self.split!r}, items={len(self)})"

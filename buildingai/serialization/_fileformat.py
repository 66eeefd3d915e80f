"""The checkpoint file on disk: reading it, recognising what it is, and checking it is intact.

A checkpoint is a plain safetensors file::

    8 bytes    N, the header length (little-endian uint64)
    N bytes    JSON header: {"__metadata__": {str: str}, name: {"dtype", "shape", "data_offsets"}}
    the rest   the tensor bytes, packed

with four metadata entries of its own: ``buildingai.format`` ("checkpoint"),
``buildingai.version`` ("1"), ``buildingai.structure`` (the JSON tree of ``_structure``) and
``buildingai.sha256`` (the checksum below).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import struct
import zipfile
from collections.abc import Iterable

from ..errors import CheckpointError

FORMAT_KEY, FORMAT_VALUE = "buildingai.format", "checkpoint"
VERSION_KEY, VERSION = "buildingai.version", 1
STRUCTURE_KEY = "buildingai.structure"
CHECKSUM_KEY = "buildingai.sha256"
OWN_KEYS = (FORMAT_KEY, VERSION_KEY, STRUCTURE_KEY, CHECKSUM_KEY)
MAX_HEADER_BYTES = 100_000_000  # the limit safetensors itself enforces

EXPECTED = "expected a BuildingAI checkpoint (a safetensors file written by buildingai.save)"
CONVERT_PICKLE = (
    "convert it once, in an environment you trust, to safetensors: "
    "import torch; from safetensors.torch import save_file; "
    "save_file(torch.load(path, weights_only=True), 'model.safetensors') "
    "(a flat dict of tensors); buildingai.load('model.safetensors') then reads it"
)
EARLIER = "use an earlier checkpoint or a backup"


def checksum(metadata: dict[str, str], tensors: Iterable[tuple[str, str, tuple, object]]) -> str:
    """SHA-256 over what a checkpoint means, independent of the byte layout safetensors picks.

    Covers the metadata (all entries but the checksum itself, as sorted JSON), then for each
    tensor in name order a JSON line ``[name, dtype code, shape, byte count]`` and its raw
    little-endian bytes. ``tensors`` yields ``(name, dtype code, shape, buffer)``.
    """
    digest = hashlib.sha256()
    described = {key: value for key, value in metadata.items() if key != CHECKSUM_KEY}
    digest.update(json.dumps(described, sort_keys=True).encode())
    for name, code, shape, buffer in sorted(tensors, key=lambda entry: entry[0]):
        view = memoryview(buffer).cast("B")
        digest.update(json.dumps([name, code, list(shape), view.nbytes]).encode())
        digest.update(view)
    return digest.hexdigest()


def read_bytes(path: str) -> bytes:
    """The whole file, or a CheckpointError saying why it cannot be read."""
    if not os.path.exists(path):
        folder = os.path.dirname(os.path.abspath(path))
        where = "" if os.path.isdir(folder) else f" (the folder {folder!r} does not exist either)"
        raise CheckpointError(
            f"no checkpoint at {path!r}: the file does not exist{where}; {EXPECTED}",
            help="check the path; checkpoints are written by buildingai.save(obj, path)",
        )
    if os.path.isdir(path):
        raise CheckpointError(f"{path!r} is a directory, not a checkpoint file; {EXPECTED}")
    try:
        with open(path, "rb") as file:
            return file.read()
    except OSError as exc:
        raise CheckpointError(f"cannot read checkpoint {path!r}: {exc}") from exc


def read_header(path: str, data: bytes) -> tuple[dict, int]:
    """Parse the safetensors header; returns (header dict, offset of the tensor bytes).

    Anything that is not a whole safetensors file is named: empty, truncated, a pickle or
    PyTorch file, a zip or NumPy file, text, or unknown bytes.
    """
    size = len(data)
    if size == 0:
        raise CheckpointError(
            f"{path!r} is empty (0 bytes); {EXPECTED}",
            help="it was cut off while being written, probably by a program that does not write "
            f"atomically; {EARLIER}",
        )
    looks_like_safetensors = size > 8 and data[8:9] == b"{"
    if not looks_like_safetensors:
        raise _not_a_checkpoint(path, data)
    header_length = struct.unpack("<Q", data[:8])[0]
    if header_length > MAX_HEADER_BYTES:
        raise _header_length_damage(path, data, header_length) or CheckpointError(
            f"{path!r} is corrupted: its first 8 bytes give a header of {header_length} bytes, "
            f"more than the {MAX_HEADER_BYTES} safetensors allows; {EXPECTED}",
            help=EARLIER,
        )
    if 8 + header_length > size:
        raise _header_length_damage(path, data, header_length) or CheckpointError(
            f"{path!r} is truncated: its JSON header should be {header_length} bytes, but the "
            f"file ends {size - 8} bytes in (file size {size} bytes); {EXPECTED}",
            help=f"the file was cut off (an interrupted copy, a full disk?); {EARLIER}",
        )
    try:
        header = json.loads(data[8 : 8 + header_length])
    except (ValueError, RecursionError) as exc:
        raise _header_length_damage(path, data, header_length) or CheckpointError(
            f"{path!r} is corrupted: its safetensors header is not valid JSON ({exc}); {EXPECTED}",
            help=EARLIER,
        ) from None
    if not isinstance(header, dict):
        raise CheckpointError(
            f"{path!r} is corrupted: its safetensors header is a {type(header).__name__}, not a "
            f"JSON object; {EXPECTED}",
            help=EARLIER,
        )
    available, needed = size - 8 - header_length, _described_bytes(header)
    if needed is not None and available > needed:  # too many bytes: no truncation does that
        damage = _header_length_damage(path, data, header_length, only_if_consistent=True)
        if damage is not None:
            raise damage
    _check_payload_length(path, header, available, size)
    return header, 8 + header_length


def _header_length_damage(
    path: str, data: bytes, header_length: int, only_if_consistent: bool = False
) -> CheckpointError | None:
    """The error for a header length (the first 8 bytes) that disagrees with a JSON header that
    is itself whole, or None when the header really is incomplete (a truncated file).

    safetensors pads its JSON header with spaces up to the declared length, so tensor bytes right
    after the JSON, before the declared end, mean the length field was overwritten. The real
    length is the one that leaves exactly the tensor bytes the header describes;
    ``only_if_consistent`` answers None when no such length exists.
    """
    parsed = _leading_json_object(data[8 : 8 + MAX_HEADER_BYTES])
    if parsed is None:
        return None
    header, json_length = parsed
    if 8 + header_length > len(data) and data[8 + json_length :].strip(b" ") == b"":
        return None  # cut off in the padding or right after the JSON: truncated
    real_length = None
    needed = _described_bytes(header)
    if needed is not None:
        padded = len(data) - 8 - needed
        if padded >= json_length and data[8 + json_length : 8 + padded].strip(b" ") == b"":
            real_length = padded
    if real_length is None:
        if only_if_consistent:
            return None
        real_length = json_length
    if real_length == header_length:
        return None
    return CheckpointError(
        f"{path!r} is corrupted: its first 8 bytes give a header of {header_length} bytes, "
        f"but its JSON header is whole and {real_length} bytes long (file size "
        f"{len(data)} bytes): the length field was overwritten; {EXPECTED}",
        help=f"{EARLIER}; failing that, the rest of the file may be intact: write "
        f"struct.pack('<Q', {real_length}) over the first 8 bytes of a copy and load the copy "
        "(its SHA-256 checksum says whether the tensors are intact)",
    )


def _leading_json_object(data: bytes) -> tuple[dict, int] | None:
    """The JSON object at the start of ``data`` and its length in bytes, or None if there is no
    whole one. Growing windows keep a large file's tensor bytes from being decoded as text."""
    window = 1 << 16
    while True:
        text = data[:window].decode("utf-8", errors="replace")
        try:
            value, end = json.JSONDecoder().raw_decode(text)
        except (ValueError, RecursionError):
            if window >= len(data):
                return None
            window *= 16
            continue
        if not isinstance(value, dict):
            return None
        return value, len(text[:end].encode("utf-8"))


def _described_bytes(header: dict) -> int | None:
    """The tensor bytes a header describes (the largest end offset), or None if malformed."""
    try:
        return max(
            (int(entry["data_offsets"][1]) for name, entry in header.items() if name != "__metadata__"),
            default=0,
        )  # fmt: skip
    except (TypeError, KeyError, IndexError, ValueError):
        return None


def _check_payload_length(path: str, header: dict, available: int, size: int) -> None:
    """Compare the tensor bytes the header describes with the bytes the file holds."""
    needed = _described_bytes(header)
    if needed is None:
        raise CheckpointError(
            f"{path!r} is corrupted: a tensor entry of its header has no valid 'data_offsets'; "
            f"{EXPECTED}",
            help=EARLIER,
        )
    if available < needed:
        raise CheckpointError(
            f"{path!r} is truncated: its header describes {needed} bytes of tensor data but only "
            f"{available} follow (the file is {size} bytes, {size - available + needed} expected)",
            help="the file was cut off (an interrupted copy, a full disk?); files written by "
            "buildingai.save are replaced atomically, so the previous checkpoint in that folder "
            f"is intact; {EARLIER}",
        )
    if available > needed:
        raise CheckpointError(
            f"{path!r} is corrupted: {available - needed} unexpected bytes follow the "
            f"{needed} bytes of tensor data its header describes; {EXPECTED}",
            help=EARLIER,
        )


def _not_a_checkpoint(path: str, data: bytes) -> CheckpointError:
    """Say what the file looks like instead, and how to get a checkpoint from it."""
    head = data[:4096]
    if head[:1] == b"\x80" and head[1:2] in (b"\x02", b"\x03", b"\x04", b"\x05"):
        return CheckpointError(
            f"{path!r} looks like a pickle/PyTorch file (a Python pickle, protocol {head[1]}, as "
            "written by pickle.dump or torch.save); BuildingAI never loads pickle, because "
            f"unpickling can run arbitrary code; {EXPECTED}",
            help=CONVERT_PICKLE,
        )
    if data.endswith(b".") and head[:1] in (b"(", b"]", b"}", b"c", b"K", b"X", b"V"):
        # Protocols 0 and 1 have no magic number: an opcode that opens a value and the STOP
        # opcode '.' at the end are the best sign.
        return CheckpointError(
            f"{path!r} looks like a pickle/PyTorch file (a Python pickle of protocol 0 or 1); "
            f"BuildingAI never loads pickle, because unpickling can run arbitrary code; {EXPECTED}",
            help=CONVERT_PICKLE,
        )
    if head[:4] == b"PK\x03\x04":
        return _zip_file(path, data)
    if head[:6] == b"\x93NUMPY":
        return CheckpointError(
            f"{path!r} is a NumPy .npy file, not a checkpoint; {EXPECTED}",
            help="array = numpy.load(path, allow_pickle=False); then buildingai.save({...}, path)",
        )
    if head[:4] == b"\x89HDF":
        return CheckpointError(
            f"{path!r} is an HDF5 file (Keras/h5py), not a checkpoint; {EXPECTED}",
            help="read its arrays with h5py and save them with buildingai.save",
        )
    if b"\x00" not in head:
        text = head.decode("utf-8", errors="replace")
        printable = sum(ch.isprintable() or ch in "\n\r\t" for ch in text)
        if printable >= 0.95 * len(text):
            preview = text[:40].replace("\n", "\\n")
            return CheckpointError(
                f"{path!r} is a text file (it begins {preview!r}), not a checkpoint; {EXPECTED}",
                help="check the path: buildingai.load reads files written by buildingai.save",
            )
    if len(data) <= 8:
        return CheckpointError(
            f"{path!r} is only {len(data)} bytes, too short for a checkpoint: it is truncated or "
            f"not a checkpoint; {EXPECTED}",
            help=EARLIER,
        )
    return CheckpointError(
        f"{path!r} is not a checkpoint: it does not have the safetensors layout (8-byte header "
        f"length, then a JSON header starting with '{{'); it begins {data[:16]!r}; {EXPECTED}",
        help="check the path; if a checkpoint's first bytes were overwritten, " + EARLIER,
    )


def _zip_file(path: str, data: bytes) -> CheckpointError:
    try:  # reading a zip's table of contents runs no code
        names = zipfile.ZipFile(io.BytesIO(data)).namelist()
    except (zipfile.BadZipFile, OSError, ValueError):
        names = []
    if any(name.endswith("data.pkl") for name in names):
        return CheckpointError(
            f"{path!r} looks like a pickle/PyTorch file (a torch.save zip archive holding "
            "data.pkl); BuildingAI never loads pickle, because unpickling can run arbitrary code; "
            f"{EXPECTED}",
            help=CONVERT_PICKLE,
        )
    if names and all(name.endswith(".npy") for name in names):
        return CheckpointError(
            f"{path!r} is a NumPy .npz archive, not a checkpoint; {EXPECTED}",
            help="arrays = dict(numpy.load(path, allow_pickle=False)); "
            "buildingai.save(arrays, 'arrays.ckpt')",
        )
    return CheckpointError(
        f"{path!r} is a zip archive, not a checkpoint; {EXPECTED}",
        help="check the path: buildingai.load reads files written by buildingai.save",
    )

"""Files that are not intact checkpoints: each raises CheckpointError saying what the file is and
what was expected."""

from __future__ import annotations

import json
import pickle
import struct
import zipfile

import numpy as np
import pytest

import buildingai as bai
from buildingai.errors import CheckpointError
from buildingai.serialization import _fileformat, load, save

EXPECTED = "expected a BuildingAI checkpoint"


@pytest.fixture
def checkpoint(tmp_path):
    """A small checkpoint with tensors, arrays and a nested structure; returns (path, bytes)."""
    path = tmp_path / "good.bai"
    save({"w": bai.randn(3, 2), "steps": np.arange(3), "meta": {"epoch": 2, "name": "run"}}, path)
    return path, path.read_bytes()


def header_length(data: bytes) -> int:
    return struct.unpack("<Q", data[:8])[0]


def write(tmp_path, data: bytes, name: str = "bad.bai"):
    path = tmp_path / name
    path.write_bytes(data)
    return path


def test_the_fixture_loads(checkpoint):
    path, _ = checkpoint
    assert load(path)["meta"] == {"epoch": 2, "name": "run"}


def test_flipped_payload_byte_fails_the_checksum(tmp_path, checkpoint):
    _, data = checkpoint
    corrupted = bytearray(data)
    corrupted[-5] ^= 0x10  # a bit in the last tensor's bytes: still a valid safetensors file
    path = write(tmp_path, bytes(corrupted))
    with pytest.raises(CheckpointError, match="is corrupted: the SHA-256 checksum") as info:
        load(path)
    assert "help: the file was damaged or modified after it was written" in str(info.value)


def test_flipped_structure_fails_the_checksum(tmp_path, checkpoint):
    _, data = checkpoint
    corrupted = data.replace(
        b'\\"epoch\\",2', b'\\"epoch\\",3'
    )  # still valid JSON, still valid safetensors
    assert corrupted != data
    with pytest.raises(CheckpointError, match="SHA-256 checksum .* does not match"):
        load(write(tmp_path, corrupted))


@pytest.mark.parametrize("mask", [0x01, 0x80], ids=["low bit", "high bit"])
def test_every_single_bit_flip_anywhere_is_detected(tmp_path, checkpoint, mask):
    _, data = checkpoint
    path = tmp_path / "flipped.bai"
    for position in range(len(data)):
        corrupted = bytearray(data)
        corrupted[position] ^= mask
        path.write_bytes(bytes(corrupted))
        with pytest.raises(CheckpointError):
            load(path)


@pytest.mark.parametrize("keep", ["0", "5", "8", "9", "mid header", "header", "mid payload", "-1"])
def test_truncated_files(tmp_path, checkpoint, keep):
    _, data = checkpoint
    length = header_length(data)
    cut = {
        "0": 0,
        "5": 5,
        "8": 8,
        "9": 9,
        "mid header": 8 + length // 2,
        "header": 8 + length,
        "mid payload": 8 + length + (len(data) - 8 - length) // 2,
        "-1": len(data) - 1,
    }[keep]
    messages = {
        "0": "is empty \\(0 bytes\\)",
        "5": "only 5 bytes, too short for a checkpoint: it is truncated",
        "8": "only 8 bytes, too short for a checkpoint: it is truncated",
    }
    expected = messages.get(keep, "is truncated")
    with pytest.raises(CheckpointError, match=expected) as info:
        load(write(tmp_path, data[:cut]))
    assert EXPECTED in str(info.value) or "previous checkpoint" in str(info.value)


def test_truncated_payload_message_gives_sizes(tmp_path, checkpoint):
    _, data = checkpoint
    with pytest.raises(CheckpointError) as info:
        load(write(tmp_path, data[:-10]))
    message = str(info.value)
    assert f"the file is {len(data) - 10} bytes, {len(data)} expected" in message
    assert "replaced atomically" in message


def test_extra_bytes_after_the_payload(tmp_path, checkpoint):
    _, data = checkpoint
    with pytest.raises(CheckpointError, match="is corrupted: 3 unexpected bytes follow"):
        load(write(tmp_path, data + b"abc"))


def test_header_length_out_of_range(tmp_path, checkpoint):
    _, data = checkpoint
    huge = struct.pack("<Q", 2**40) + data[8:]
    with pytest.raises(CheckpointError, match="header of 1099511627776 bytes"):
        load(write(tmp_path, huge))


@pytest.mark.parametrize("change", [1000, 8, 1, -8, -1], ids=lambda c: f"{c:+d}")
def test_overwritten_header_length_is_corrupted_not_truncated(tmp_path, checkpoint, change):
    _, data = checkpoint
    length = header_length(data)
    damaged = struct.pack("<Q", length + change) + data[8:]
    path = write(tmp_path, damaged)
    with pytest.raises(CheckpointError) as info:
        load(path)
    message = str(info.value)
    assert "is corrupted" in message and "truncated" not in message
    assert repr(str(path)) in message
    assert f"header of {length + change} bytes" in message
    assert f"JSON header is whole and {length} bytes long" in message
    assert "help: use an earlier checkpoint or a backup" in message
    # the repair the message offers gives back the checkpoint, and the checksum vouches for it
    repaired = write(tmp_path, struct.pack("<Q", length) + damaged[8:], "repaired.bai")
    assert load(repaired)["meta"] == {"epoch": 2, "name": "run"}


def test_header_length_past_the_limit_names_the_real_length(tmp_path, checkpoint):
    _, data = checkpoint
    damaged = struct.pack("<Q", 2**40) + data[8:]
    with pytest.raises(CheckpointError, match="is corrupted") as info:
        load(write(tmp_path, damaged))
    assert f"struct.pack('<Q', {header_length(data)})" in str(info.value)


def test_cut_in_the_header_padding_is_still_truncated(tmp_path, checkpoint):
    _, data = checkpoint
    length = header_length(data)
    json_end = len(data[8 : 8 + length].rstrip(b" ")) + 8
    with pytest.raises(CheckpointError, match="is truncated"):
        load(write(tmp_path, data[:json_end]))


@pytest.mark.parametrize("protocol", range(pickle.HIGHEST_PROTOCOL + 1))
def test_pickle_files_are_refused(tmp_path, protocol):
    path = tmp_path / "model.pkl"
    with open(path, "wb") as file:
        pickle.dump({"weights": [1.0, 2.0], "step": 3}, file, protocol=protocol)
    with pytest.raises(CheckpointError, match="looks like a pickle/PyTorch file") as info:
        load(path)
    message = str(info.value)
    assert "BuildingAI never loads pickle" in message and EXPECTED in message
    assert "help: convert it once" in message and "safetensors" in message


@pytest.mark.parametrize("zip_format", [True, False], ids=["zip", "legacy"])
def test_torch_save_files_are_refused(tmp_path, zip_format):
    torch = pytest.importorskip("torch")
    path = tmp_path / "model.pt"
    torch.save({"w": torch.ones(2)}, path, _use_new_zipfile_serialization=zip_format)
    with pytest.raises(CheckpointError, match="looks like a pickle/PyTorch file") as info:
        load(path)
    assert ("data.pkl" in str(info.value)) == zip_format
    assert "torch.load(path, weights_only=True)" in str(info.value)


def test_loading_never_unpickles(tmp_path, monkeypatch):
    path = tmp_path / "evil.pkl"
    path.write_bytes(pickle.dumps({"a": 1}))

    def forbidden(*args, **kwargs):
        raise AssertionError("pickle was used")

    monkeypatch.setattr(pickle, "loads", forbidden)
    monkeypatch.setattr(pickle, "load", forbidden)
    monkeypatch.setattr(pickle, "Unpickler", forbidden)
    with pytest.raises(CheckpointError):
        load(path)


def test_text_file(tmp_path):
    path = write(tmp_path, b"epoch,loss\n1,0.53\n2,0.41\n" * 20, "log.csv")
    with pytest.raises(
        CheckpointError, match="is a text file \\(it begins 'epoch,loss\\\\\\\\n1,0.53"
    ) as info:
        load(path)
    assert EXPECTED in str(info.value)


def test_json_text_file(tmp_path):
    path = write(tmp_path, json.dumps({"weights": [1, 2, 3]}).encode(), "config.json")
    with pytest.raises(CheckpointError, match="is a text file"):
        load(path)


def test_random_bytes(tmp_path):
    data = np.random.default_rng(0).integers(0, 256, 1000, dtype=np.uint8).tobytes()
    data = data[:8] + b"\x00" + data[9:]  # not '{' at offset 8
    with pytest.raises(CheckpointError, match="does not have the safetensors layout") as info:
        load(write(tmp_path, data))
    assert EXPECTED in str(info.value)


def test_numpy_files(tmp_path):
    np.save(tmp_path / "a.npy", np.arange(3))
    with pytest.raises(CheckpointError, match="is a NumPy .npy file"):
        load(tmp_path / "a.npy")
    np.savez(tmp_path / "b.npz", x=np.arange(3))
    with pytest.raises(CheckpointError, match="is a NumPy .npz archive") as info:
        load(tmp_path / "b.npz")
    assert "allow_pickle=False" in str(info.value)


def test_other_zip_and_hdf5(tmp_path):
    with zipfile.ZipFile(tmp_path / "c.zip", "w") as archive:
        archive.writestr("readme.txt", "hello")
    with pytest.raises(CheckpointError, match="is a zip archive, not a checkpoint"):
        load(tmp_path / "c.zip")
    with pytest.raises(CheckpointError, match="is an HDF5 file"):
        load(write(tmp_path, b"\x89HDF\r\n\x1a\n" + bytes(100), "w.h5"))


def test_missing_file_and_directory(tmp_path):
    with pytest.raises(
        CheckpointError, match="no checkpoint at .*nothing.bai.*does not exist"
    ) as info:
        load(tmp_path / "nothing.bai")
    assert "help: check the path" in str(info.value)
    with pytest.raises(CheckpointError, match="the folder .* does not exist either"):
        load(tmp_path / "missing" / "c.bai")
    with pytest.raises(CheckpointError, match="is a directory, not a checkpoint file"):
        load(tmp_path)


def _craft(tmp_path, metadata: dict, arrays: dict | None = None):
    """A safetensors file with hand-written metadata and a valid checksum."""
    safetensors_numpy = pytest.importorskip("safetensors.numpy")
    arrays = arrays or {}
    metadata = {
        _fileformat.FORMAT_KEY: "checkpoint",
        _fileformat.VERSION_KEY: "1",
        **metadata,
    }
    entries = [(n, "F32", a.shape, a.reshape(-1).view(np.uint8)) for n, a in arrays.items()]
    metadata[_fileformat.CHECKSUM_KEY] = _fileformat.checksum(metadata, entries)
    path = tmp_path / "crafted.bai"
    safetensors_numpy.save_file(arrays, str(path), metadata=metadata)
    return path


def test_newer_format_version(tmp_path):
    path = _craft(tmp_path, {_fileformat.VERSION_KEY: "2", _fileformat.STRUCTURE_KEY: "null"})
    with pytest.raises(
        CheckpointError, match="format version 2; this BuildingAI reads versions up to 1"
    ):
        load(path)


@pytest.mark.parametrize(
    ("structure", "what"),
    [
        ({"type": "tensor", "key": "nope"}, "refers to array 'nope', which the file does not hold"),
        ({"type": "pickle", "value": "cos\nsystem\n"}, "unknown entry"),
        (
            {"type": "dict", "items": [["a", {"type": "list", "items": 3}]]},
            r"obj\['a'\]: malformed list",
        ),
        ({"type": "dict", "items": [[[1], 2]]}, "dict key \\[1\\] is neither"),
        ({"type": "int", "value": "12x"}, "unknown entry"),
        ([1, 2], "unexpected value \\[1, 2\\]"),
    ],
)
def test_damaged_structure_with_valid_checksum(tmp_path, structure, what):
    path = _craft(tmp_path, {_fileformat.STRUCTURE_KEY: json.dumps(structure)})
    with pytest.raises(CheckpointError, match=f"structure is damaged at .*{what}"):
        load(path)


def test_missing_checksum_is_corruption(tmp_path):
    safetensors_numpy = pytest.importorskip("safetensors.numpy")
    path = tmp_path / "c.bai"
    metadata = {"buildingai.format": "checkpoint", "buildingai.version": "1",
                "buildingai.structure": "1"}  # fmt: skip
    safetensors_numpy.save_file({}, str(path), metadata=metadata)
    with pytest.raises(CheckpointError, match="checksum"):
        load(path)

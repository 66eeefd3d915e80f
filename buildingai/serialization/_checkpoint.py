"""``save`` and ``load``: checkpoints as safetensors plus JSON, written atomically, never pickle."""

from __future__ import annotations

import json
import os

import numpy as np

from ..autograd.tensor import Tensor
from ..backend import device as _device
from ..errors import CheckpointError
from . import _fileformat as fileformat
from ._atomic import write_atomically
from ._structure import DTYPE_CODES, Decoder, Encoder, numpy_dtype


def save(obj, path: str | os.PathLike) -> None:
    """Write ``obj`` to ``path`` as one checkpoint file, atomically.

    ``obj`` is a tree of dicts (str or int keys), lists, tuples, Tensors, NumPy arrays, NumPy
    scalars, Python ints (any size), floats (NaN and infinities too), bools, strings and None, e.g.
    ``{"model": model.state_dict(), "optimizer": opt.state_dict(), "rng": get_rng_state(),
    "step": 10}``. Arrays and tensors go into a safetensors payload, named after their key path
    (``model.fc1.weight``; a flat state dict keeps its own keys, so other safetensors readers see
    them as usual); the rest of the tree is JSON in the safetensors metadata.

    What comes back from ``load``: the same tree, with tuples as tuples and dict key order kept;
    dict subclasses (``OrderedDict``) come back as ``dict`` and list/tuple subclasses as their base
    type. Tensors come back as Tensors with their dtype and ``requires_grad`` (not their ``.grad``
    or graph), arrays as NumPy arrays (a CuPy array comes back on the host), non-contiguous arrays
    as contiguous copies. An object that appears twice (tied weights) is stored once and comes back
    as one shared object.

    The new file is written next to ``path`` under a temporary name, fsynced and renamed over
    ``path``: a crash mid-save leaves the previous checkpoint intact.

    Raises:
        CheckpointError: an unsupported value (naming its key path, e.g.
            ``obj['optimizer']['state'][0]``), an unsupported dtype, or a failed write.
    """
    path = os.fspath(path)
    safetensors_numpy = _safetensors().numpy
    encoder = Encoder()
    try:
        structure = encoder.encode(obj)
    except RecursionError:
        raise CheckpointError(
            "cannot save: the object is nested too deeply to be written as JSON",
            help="flatten the structure, or store long sequences of numbers as arrays",
        ) from None
    metadata = {
        fileformat.FORMAT_KEY: fileformat.FORMAT_VALUE,
        fileformat.VERSION_KEY: str(fileformat.VERSION),
        fileformat.STRUCTURE_KEY: json.dumps(structure, allow_nan=False, separators=(",", ":")),
    }
    metadata[fileformat.CHECKSUM_KEY] = fileformat.checksum(
        metadata,
        [
            (name, DTYPE_CODES[array.dtype.name], array.shape, _raw_bytes(array))
            for name, array in encoder.arrays.items()
        ],
    )

    try:
        # One contiguous buffer (header + payload): the file's full size is held in memory once
        # more while saving.
        data = safetensors_numpy.save(encoder.arrays, metadata=metadata)
    except Exception as exc:  # safetensors reports its own failures as SafetensorError
        raise CheckpointError(f"cannot save to {path!r}: safetensors failed: {exc}") from exc
    write_atomically(path, lambda file: file.write(data))


def load(path: str | os.PathLike, map_location: str | _device.Device | None = None):
    """Read a checkpoint written by ``save`` and rebuild the object.

    Args:
        path: the checkpoint file.
        map_location: where tensors are placed: None or "cpu" for the CPU, or a device such as
            "cuda" / "cuda:1". NumPy arrays stay NumPy arrays on the host.

    A safetensors file written by another program (for example a PyTorch state dict saved with
    ``safetensors.torch.save_file``) has no BuildingAI metadata; it loads as a flat ``dict`` of
    name -> Tensor (in the order the safetensors reader lists them), ready for ``load_state_dict``.

    Nothing in the file is executed: the structure is JSON, decoded into plain containers only.

    Raises:
        CheckpointError: a missing, empty, truncated or corrupted file (the checksum recorded at
            save time is verified), a pickle or ``torch.save`` file, or any other kind of file;
            the message says what the file is and what was expected.
        DeviceError: ``map_location`` names a device that cannot be used (e.g. "cuda" without
            CuPy or a GPU).
    """
    device = _placement(map_location)
    path = os.fspath(path)
    data = fileformat.read_bytes(path)
    header, _ = fileformat.read_header(path, data)
    metadata = header.get("__metadata__") or {}
    if not isinstance(metadata, dict):
        raise CheckpointError(f"{path!r} is corrupted: its '__metadata__' is not a JSON object")
    try:
        entries = _safetensors().deserialize(data)
    except Exception as exc:  # SafetensorError: offsets, dtypes or sizes that do not add up
        raise CheckpointError(
            f"{path!r} is corrupted: the safetensors reader rejects it ({exc}); "
            f"{fileformat.EXPECTED}",
            help=fileformat.EARLIER,
        ) from None
    del data  # the tensors own copies of their bytes now
    if not any(key in fileformat.OWN_KEYS for key in metadata):
        # A plain safetensors file from another program: a flat dict of tensors. (One of our own
        # keys is enough to treat the file as ours: a damaged key must not turn it into this.)
        return {name: _tensor(_array(path, entry), device) for name, entry in entries}

    if metadata.get(fileformat.FORMAT_KEY) == fileformat.FORMAT_VALUE:
        _check_version(path, metadata)
    recorded = metadata.get(fileformat.CHECKSUM_KEY)
    computed = fileformat.checksum(
        metadata, [(name, e["dtype"], e["shape"], e["data"]) for name, e in entries]
    )
    if recorded != computed:
        raise CheckpointError(
            f"{path!r} is corrupted: the SHA-256 checksum of its contents ({computed[:16]}...) "
            f"does not match the one recorded when it was saved ({str(recorded)[:16]}...)",
            help="the file was damaged or modified after it was written; " + fileformat.EARLIER,
        )
    arrays = {name: _array(path, entry) for name, entry in entries}
    try:
        structure = json.loads(metadata[fileformat.STRUCTURE_KEY])
        return Decoder(arrays, device).decode(structure)
    except (KeyError, ValueError, RecursionError) as exc:
        raise CheckpointError(
            f"{path!r} has a checksum but no readable structure ({type(exc).__name__}: {exc})",
            help="re-create the checkpoint with buildingai.save",
        ) from None


def _placement(map_location) -> _device.Device | None:
    """The device tensors go to; check it can be used before reading anything."""
    if map_location is None:
        return None
    device = _device.Device(map_location)
    if device.type == "cuda":
        _device.cupy_module()  # raises DeviceError when CuPy or a GPU is missing
    return device


def _array(path: str, entry: dict) -> np.ndarray:
    """A writable NumPy array over the bytes safetensors read (no further copy)."""
    dtype = numpy_dtype(entry["dtype"], path)
    return np.frombuffer(entry["data"], dtype=dtype).reshape(entry["shape"])


def _tensor(array: np.ndarray, device: _device.Device | None) -> Tensor:
    if device is not None and device.type != "cpu":
        array = _device.to_device(array, device)
    return Tensor(array)


def _raw_bytes(array: np.ndarray) -> np.ndarray:
    """The array's bytes as a flat uint8 view (works for bfloat16 and 0-d arrays alike)."""
    return array.reshape(-1).view(np.uint8)


def _check_version(path: str, metadata: dict) -> None:
    version = metadata.get(fileformat.VERSION_KEY, "")
    if not version.isdigit():
        raise CheckpointError(
            f"{path!r} is corrupted: its format version {version!r} is not a number"
        )
    if int(version) > fileformat.VERSION:
        raise CheckpointError(
            f"{path!r} was written in checkpoint format version {version}; this BuildingAI reads "
            f"versions up to {fileformat.VERSION}",
            help="upgrade buildingai to load it",
        )


def _safetensors():
    try:
        import safetensors
        import safetensors.numpy
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise CheckpointError(
            "checkpoints need the safetensors package, which is not installed",
            help="pip install safetensors",
        ) from exc
    return safetensors

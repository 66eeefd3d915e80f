"""The nested checkpoint object as JSON plus a flat table of arrays, and back.

``encode`` walks ``obj`` once: every Tensor and array becomes an entry of the array table (named
after its key path, so a flat state dict keeps its own names), everything else becomes JSON. Each
JSON value is either a plain JSON literal (null, true/false, a string, an int up to 2**53 or a
finite float) or an object tagged with ``"type"``:

    {"type": "dict", "items": [[key, value], ...]}     keys are strings or ints, order kept
    {"type": "list", "items": [...]}
    {"type": "tuple", "items": [...]}
    {"type": "tensor", "key": name, "requires_grad": bool, "device": "cpu"}
    {"type": "array", "key": name}                     a NumPy (or CuPy) array
    {"type": "numpy_scalar", "key": name}              e.g. np.float32(1.5), stored 0-d
    {"type": "int", "value": "340282366920938463463374607431768211455"}
    {"type": "float", "value": "nan" | "inf" | "-inf"}

Ints beyond 2**53 are written as decimal strings because many JSON readers turn every number into
a float64; PCG64 generator states are 128-bit integers and must survive exactly.
``decode`` accepts exactly these forms and builds only dicts, lists, tuples, Tensors, arrays and
Python scalars: a checkpoint cannot make it run code.
"""

from __future__ import annotations

import math
import sys

import numpy as np

from ..autograd.tensor import Tensor
from ..backend import device as _device
from ..backend.dtypes import is_floating
from ..backend.random import Generator
from ..errors import CheckpointError

# NumPy dtype name -> safetensors dtype code (the ones both sides know).
DTYPE_CODES = {
    "bool": "BOOL",
    "int8": "I8",
    "uint8": "U8",
    "int16": "I16",
    "uint16": "U16",
    "int32": "I32",
    "uint32": "U32",
    "int64": "I64",
    "uint64": "U64",
    "float16": "F16",
    "float32": "F32",
    "float64": "F64",
    "complex64": "C64",
    "bfloat16": "BF16",  # the rest need ml_dtypes
    "float8_e4m3fn": "F8_E4M3",
    "float8_e4m3fnuz": "F8_E4M3FNUZ",
    "float8_e5m2": "F8_E5M2",
    "float8_e5m2fnuz": "F8_E5M2FNUZ",
    "float8_e8m0fnu": "F8_E8M0",
}
DTYPES_BY_CODE = {code: name for name, code in DTYPE_CODES.items()}
ML_DTYPES_NAMES = {"bfloat16", "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz",
                   "float8_e8m0fnu"}  # fmt: skip

LARGEST_EXACT_JSON_INT = 2**53  # float64 holds every integer up to here

SUPPORTED = (
    "dicts (string or int keys), lists, tuples, buildingai Tensors, NumPy arrays, NumPy scalars, "
    "Python ints, floats, bools, strings and None"
)


def format_path(path: tuple) -> str:
    """``('optimizer', 'state', 0)`` -> ``obj['optimizer']['state'][0]``."""
    return "obj" + "".join(f"[{key!r}]" for key in path)


def numpy_dtype(code: str, path: str) -> np.dtype:
    """The NumPy dtype of a safetensors dtype code; bfloat16 and float8 come from ml_dtypes."""
    name = DTYPES_BY_CODE.get(code)
    if name is None:
        raise CheckpointError(
            f"{path!r} holds a tensor of safetensors dtype {code!r}, which BuildingAI cannot read",
            help=f"readable dtypes: {sorted(DTYPES_BY_CODE)}",
        )
    if name not in ML_DTYPES_NAMES:
        return np.dtype(name)
    try:
        import ml_dtypes
    except ImportError as exc:
        raise CheckpointError(
            f"{path!r} holds {name} tensors, which need the ml_dtypes package",
            help="pip install 'buildingai[bf16]'",
        ) from exc
    if not hasattr(ml_dtypes, name):
        raise CheckpointError(
            f"{path!r} holds {name} tensors, which this ml_dtypes ({ml_dtypes.__version__}) lacks",
            help="pip install --upgrade ml_dtypes",
        )
    return np.dtype(getattr(ml_dtypes, name))


class Encoder:
    """Turn ``obj`` into (JSON structure, {name: contiguous little-endian host array})."""

    def __init__(self) -> None:
        self.arrays: dict[str, np.ndarray] = {}
        self._seen: dict[int, tuple[object, dict]] = {}  # id -> (object kept alive, its node)
        self._open: set[int] = set()  # containers on the current path, to catch cycles

    def encode(self, value, path: tuple = ()):
        kind = type(value)
        if value is None or kind is bool or kind is str:
            return value
        if kind is int:
            if abs(value) <= LARGEST_EXACT_JSON_INT:
                return value
            return {"type": "int", "value": str(value)}
        if kind is float:
            return value if math.isfinite(value) else {"type": "float", "value": repr(value)}
        if isinstance(value, Tensor):
            return self._array_node(value, path, "tensor")
        if _device.is_array(value):
            if isinstance(value, np.ndarray) and type(value) is not np.ndarray:
                raise CheckpointError(
                    f"cannot save {format_path(path)}: {type(value).__qualname__} is an ndarray "
                    "subclass whose extra state (a mask, ...) a checkpoint would lose",
                    help="save np.asarray(value) and what else it needs (e.g. value.mask) explicitly",
                )
            return self._array_node(value, path, "array")
        if isinstance(value, np.generic):
            return self._array_node(value, path, "numpy_scalar")
        if isinstance(value, (dict, list, tuple)):
            return self._container_node(value, path)
        raise self._unsupported(value, path)

    def _container_node(self, value, path: tuple) -> dict:
        if id(value) in self._open:
            raise CheckpointError(
                f"cannot save {format_path(path)}: it contains itself (a reference cycle)",
                help="checkpoints hold trees of values; break the cycle before saving",
            )
        self._open.add(id(value))
        try:
            if isinstance(value, dict):
                items = []
                for key, item in value.items():
                    if type(key) not in (str, int):
                        raise CheckpointError(
                            f"cannot save {format_path(path)}: dict key {key!r} is a "
                            f"{type(key).__name__}, but checkpoint keys must be str or int",
                            help="convert the keys, e.g. {str(k): v for k, v in d.items()}",
                        )
                    items.append([key, self.encode(item, (*path, key))])
                return {"type": "dict", "items": items}
            kind = "tuple" if isinstance(value, tuple) else "list"
            items = [self.encode(item, (*path, index)) for index, item in enumerate(value)]
            return {"type": kind, "items": items}
        finally:
            self._open.discard(id(value))

    def _array_node(self, value, path: tuple, kind: str) -> dict:
        seen = self._seen.get(id(value))
        if seen is not None:  # the same object twice (tied weights): stored once, shared on load
            return seen[1]
        if kind == "tensor":
            array, device = value.array, str(value.device)
        elif kind == "array":
            array, device = value, str(_device.device_of(value))
        else:
            array, device = np.asarray(value), "cpu"
        if array.dtype.name not in DTYPE_CODES:
            raise CheckpointError(
                f"cannot save {format_path(path)}: dtype {array.dtype} is not supported by "
                "safetensors",
                help=f"convert it first (e.g. .astype('float64')); supported: {sorted(DTYPE_CODES)}",
            )
        host = _device.to_device(array, _device.CPU)
        if not host.flags.c_contiguous:  # safetensors reads raw memory: it needs C order
            host = host.copy(order="C")  # (np.ascontiguousarray would turn 0-d into 1-d)
        if host.dtype.byteorder == ">" or (host.dtype.byteorder == "=" and sys.byteorder == "big"):
            host = host.astype(host.dtype.newbyteorder("<"))  # safetensors is little-endian
        name = self._unique_name(path)
        self.arrays[name] = host
        node = {"type": kind, "key": name}
        if kind == "tensor":
            node["requires_grad"] = bool(value.requires_grad)
            node["device"] = device
        self._seen[id(value)] = (value, node)
        return node

    def _unique_name(self, path: tuple) -> str:
        # Key paths joined with '.' give a flat state dict its own names ("fc1.weight"), so other
        # safetensors readers see familiar keys. A clash ({"a.b": x, "a": {"b": y}}) gets a suffix.
        base = ".".join(str(key) for key in path) or "obj"
        name, count = base, 1
        while name in self.arrays:
            count += 1
            name = f"{base}#{count}"
        return name

    @staticmethod
    def _unsupported(value, path: tuple) -> CheckpointError:
        where = format_path(path)
        kind = type(value)
        if isinstance(value, Generator):
            return CheckpointError(
                f"cannot save {where}: a Generator object is not data",
                help="save generator.get_state() and restore it with generator.set_state(state)",
            )
        if callable(value) and not hasattr(value, "state_dict"):
            return CheckpointError(
                f"cannot save {where}: {value!r} is a {kind.__name__}; checkpoints never hold code",
                help=f"checkpoints hold only {SUPPORTED}",
            )
        fix = (
            "save its .state_dict() instead"
            if hasattr(value, "state_dict")
            else f"convert it to plain data; checkpoints hold only {SUPPORTED}"
        )
        return CheckpointError(
            f"cannot save {where}: objects of type {kind.__module__}.{kind.__qualname__} are not "
            "supported",
            help=fix,
        )


class Decoder:
    """Rebuild the object from its JSON structure and the arrays read from the file."""

    def __init__(self, arrays: dict[str, np.ndarray], device: _device.Device | None) -> None:
        self.arrays = arrays
        self.device = device
        self._built: dict[str, object] = {}  # one object per stored array: ties come back tied

    def decode(self, node, path: tuple = ()):
        if node is None or type(node) in (bool, str, int, float):
            return node
        if type(node) is not dict or not isinstance(node.get("type"), str):
            raise self._bad(path, f"unexpected value {node!r}")
        kind = node["type"]
        if kind == "dict":
            result = {}
            for key, item in self._items(node, path, pairs=True):
                result[self._key(key, path)] = self.decode(item, (*path, key))
            return result
        if kind in ("list", "tuple"):
            items = [
                self.decode(item, (*path, i)) for i, item in enumerate(self._items(node, path))
            ]
            return items if kind == "list" else tuple(items)
        if kind in ("tensor", "array", "numpy_scalar"):
            return self._array(node, kind, path)
        if kind == "int" and isinstance(node.get("value"), str):
            try:
                return int(node["value"])
            except ValueError:
                pass
        if kind == "float" and node.get("value") in ("nan", "inf", "-inf"):
            return float(node["value"])
        raise self._bad(path, f"unknown entry {node!r}")

    def _items(self, node: dict, path: tuple, pairs: bool = False) -> list:
        items = node.get("items")
        if not isinstance(items, list) or (
            pairs and not all(isinstance(p, list) and len(p) == 2 for p in items)
        ):
            raise self._bad(path, f"malformed {node['type']}")
        return items

    def _key(self, key, path: tuple):
        if type(key) not in (str, int):
            raise self._bad(path, f"dict key {key!r} is neither a string nor an int")
        return key

    def _array(self, node: dict, kind: str, path: tuple):
        name = node.get("key")
        if name not in self.arrays:
            raise self._bad(path, f"it refers to array {name!r}, which the file does not hold")
        cache_key = f"{kind}:{name}"
        if cache_key in self._built:
            return self._built[cache_key]
        array = self.arrays[name]
        if kind == "numpy_scalar":
            value = array[()] if array.ndim == 0 else array
        elif kind == "array":
            value = array
        else:
            if self.device is not None and self.device.type != "cpu":
                array = _device.to_device(array, self.device)
            requires_grad = node.get("requires_grad", False) is True
            if requires_grad and not is_floating(array.dtype):
                raise self._bad(path, f"a {array.dtype} tensor cannot require gradients")
            value = Tensor(array, requires_grad=requires_grad)
        self._built[cache_key] = value
        return value

    @staticmethod
    def _bad(path: tuple, what: str) -> CheckpointError:
        return CheckpointError(
            f"the checkpoint's structure is damaged at {format_path(path)}: {what}",
            help="the file passed its checksum, so it was written this way; "
            "re-create it with buildingai.save",
        )

"""Devices and the array-namespace seam.

A tensor's device is read off its array: a ``numpy.ndarray`` lives on the CPU, a ``cupy.ndarray``
on a CUDA GPU. Ops never branch on the device; they receive ``xp`` (``numpy`` or ``cupy``) from
``array_namespace`` and write their math once against it.
"""

from __future__ import annotations

import numpy as np

from ..errors import DeviceError

_cupy = None  # the cupy module once a CUDA device has been used
ARRAY_TYPES: tuple[type, ...] = (np.ndarray,)


class Device:
    """A place where arrays live: ``Device("cpu")`` or ``Device("cuda:0")``."""

    __slots__ = ("type", "index")

    def __init__(self, spec: str | Device = "cpu", index: int | None = None) -> None:
        if isinstance(spec, Device):
            self.type, self.index = spec.type, spec.index
            return
        if not isinstance(spec, str):
            raise DeviceError(
                f"a device is named by a string such as 'cpu' or 'cuda:0', got {spec!r}"
            )
        kind, _, number = spec.partition(":")
        if kind not in ("cpu", "cuda"):
            raise DeviceError(f"unknown device {spec!r}", help="use 'cpu', 'cuda' or 'cuda:N'")
        if number:
            if not number.isdigit():
                raise DeviceError(
                    f"bad device index in {spec!r}", help="use 'cuda:0', 'cuda:1', ..."
                )
            index = int(number)
        self.type = kind
        self.index = (index or 0) if kind == "cuda" else None

    def __eq__(self, other) -> bool:
        if isinstance(other, str):
            other = Device(other)
        return isinstance(other, Device) and (self.type, self.index) == (other.type, other.index)

    def __hash__(self) -> int:
        return hash((self.type, self.index))

    def __repr__(self) -> str:
        return f"device({str(self)!r})"

    def __str__(self) -> str:
        return self.type if self.index is None else f"{self.type}:{self.index}"


CPU = Device("cpu")


def cupy_module():
    """Import CuPy and check that a GPU is visible; raise ``DeviceError`` saying what is missing."""
    global _cupy, ARRAY_TYPES
    if _cupy is not None:
        return _cupy
    try:
        import cupy
    except ImportError as exc:
        raise DeviceError(
            "the 'cuda' device needs CuPy, which is not installed",
            help="pip install 'buildingai[gpu]' on a machine with an NVIDIA GPU, or use device='cpu'",
        ) from exc
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:  # CUDA driver missing or broken
        raise DeviceError(
            f"CuPy is installed but no CUDA GPU can be used: {exc}",
            help="check the NVIDIA driver (nvidia-smi), or use device='cpu'",
        ) from exc
    if count == 0:
        raise DeviceError("CuPy is installed but no CUDA GPU is visible", help="use device='cpu'")
    _cupy = cupy
    ARRAY_TYPES = (np.ndarray, cupy.ndarray)
    return cupy


def cuda_is_available() -> bool:
    """True when CuPy is installed and at least one GPU is visible."""
    try:
        cupy_module()
    except DeviceError:
        return False
    return True


def array_namespace(array):
    """``numpy`` for a host array, ``cupy`` for a device array: the ``xp`` every op computes with."""
    if type(array) is np.ndarray or _cupy is None:
        return np
    return _cupy if isinstance(array, _cupy.ndarray) else np


def strided_view(xp, array, shape: tuple, strides: tuple):
    """A view of ``array`` with the given shape and byte strides (elements may overlap),
    read-only on the host. CuPy's ``as_strided`` has no ``writeable`` flag: its views are left
    writable, and no caller writes to them."""
    if xp is np:
        return np.lib.stride_tricks.as_strided(array, shape, strides, writeable=False)
    return xp.lib.stride_tricks.as_strided(array, shape, strides)


def device_of(array) -> Device:
    """The device an array lives on."""
    if _cupy is not None and isinstance(array, _cupy.ndarray):
        return Device("cuda", array.device.id)
    return CPU


def is_read_only(array) -> bool:
    """Whether ``array`` may not be written (a NumPy broadcast view, a frozen constant). CuPy
    arrays carry no such flag: they are always writable."""
    return not getattr(array.flags, "writeable", True)


def is_array(value) -> bool:
    """True for a backend array (numpy or cupy ndarray)."""
    return isinstance(value, ARRAY_TYPES)


def to_device(array, device: Device):
    """Copy ``array`` to ``device`` (no copy when it is already there)."""
    if device.type == "cpu":
        if type(array) is np.ndarray:
            return array
        return array.get() if hasattr(array, "get") else np.asarray(array)
    cupy = cupy_module()
    with cupy.cuda.Device(device.index):
        return cupy.asarray(array)

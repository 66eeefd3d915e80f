"""``buildingai.cuda``: the questions PyTorch programs ask ``torch.cuda`` before and while
using a GPU, answered from CuPy (BuildingAI's GPU backend).

Without CuPy or a visible GPU, ``is_available()`` is False and ``device_count()`` 0, so
``"cuda" if buildingai.cuda.is_available() else "cpu"`` picks the CPU; the seeding functions and
``empty_cache`` then do nothing, as in PyTorch, and the functions about one device raise a
``DeviceError`` naming what is missing. ``buildingai.cuda.amp`` holds ``autocast`` and
``GradScaler`` under PyTorch's older spelling.
"""

from __future__ import annotations

import numpy as np

from ..backend import device as _device
from ..backend.random import default_generator
from .peak_memory import (
    max_memory_allocated,
    max_memory_reserved,
    reset_max_memory_allocated,
    reset_peak_memory_stats,
)


def is_available() -> bool:
    """True when CuPy is installed and at least one NVIDIA GPU is visible."""
    return _device.cuda_is_available()


def device_count() -> int:
    """How many GPUs this process can use (0 without CuPy or a GPU)."""
    if not is_available():
        return 0
    return int(_device.cupy_module().cuda.runtime.getDeviceCount())


def is_initialized() -> bool:
    """True once a GPU has been used (CuPy loaded and a device found)."""
    return _device._cupy is not None


def _index(device) -> int:
    """The GPU number of ``device`` (an int, ``"cuda:1"``, a ``Device``, or None: the current
    one)."""
    if device is None:
        return current_device()
    if isinstance(device, int):
        return device
    return _device.Device(device).index or 0


def current_device() -> int:
    """The number of the GPU that new GPU arrays go to."""
    return int(_device.cupy_module().cuda.runtime.getDevice())


def set_device(device) -> None:
    """Make ``device`` (an int, ``"cuda:N"`` or a ``Device``) the current GPU."""
    _device.cupy_module().cuda.runtime.setDevice(_index(device))


def get_device_name(device=None) -> str:
    """The GPU's product name, e.g. ``"NVIDIA H100 80GB HBM3"``."""
    name = _device.cupy_module().cuda.runtime.getDeviceProperties(_index(device))["name"]
    return name.decode() if isinstance(name, bytes) else str(name)


def get_device_capability(device=None) -> tuple[int, int]:
    """The GPU's compute capability ``(major, minor)``, e.g. ``(9, 0)``."""
    properties = _device.cupy_module().cuda.runtime.getDeviceProperties(_index(device))
    return int(properties["major"]), int(properties["minor"])


def is_bf16_supported() -> bool:
    """True on a GPU that computes in bfloat16 (compute capability 8.0 and later)."""
    return is_available() and get_device_capability()[0] >= 8


def synchronize(device=None) -> None:
    """Wait until every kernel queued on the GPU has finished (for timing)."""
    cupy = _device.cupy_module()
    with cupy.cuda.Device(_index(device)):
        cupy.cuda.Device().synchronize()


def empty_cache() -> None:
    """Return the GPU memory CuPy's pool holds but no array uses to the driver; nothing to do
    before the GPU is first used."""
    if is_initialized():
        _device._cupy.get_default_memory_pool().free_all_blocks()


def memory_allocated(device=None) -> int:
    """Bytes of GPU memory that live arrays use (0 before the GPU is first used)."""
    if not is_initialized():
        return 0
    return int(_device._cupy.get_default_memory_pool().used_bytes())


def memory_reserved(device=None) -> int:
    """Bytes of GPU memory CuPy's pool holds, used or cached (0 before first use)."""
    if not is_initialized():
        return 0
    return int(_device._cupy.get_default_memory_pool().total_bytes())


def manual_seed(seed: int) -> None:
    """Restart the default generator's GPU stream from ``seed``; does nothing without a GPU, as
    in PyTorch. ``buildingai.manual_seed`` already seeds the GPU stream too."""
    if is_available():
        default_generator.manual_seed_cuda(int(seed))


def manual_seed_all(seed: int) -> None:
    """``manual_seed``: BuildingAI's default generator has one GPU stream for the process."""
    manual_seed(seed)


def seed() -> None:
    """Restart the GPU stream from fresh OS entropy (nothing without a GPU)."""
    manual_seed(int(np.random.SeedSequence().entropy % 2**63))


seed_all = seed


def initial_seed() -> int:
    """The seed the default generator started from."""
    return int(default_generator.initial_seed)


__all__ = [
    "current_device",
    "device_count",
    "empty_cache",
    "get_device_capability",
    "get_device_name",
    "initial_seed",
    "is_available",
    "is_bf16_supported",
    "is_initialized",
    "manual_seed",
    "manual_seed_all",
    "max_memory_allocated",
    "max_memory_reserved",
    "memory_allocated",
    "memory_reserved",
    "reset_max_memory_allocated",
    "reset_peak_memory_stats",
    "seed",
    "seed_all",
    "set_device",
    "synchronize",
]

"""The floor everything stands on: devices, the array namespace, dtypes and randomness."""

from .device import (
    CPU,
    Device,
    array_namespace,
    cuda_is_available,
    cupy_module,
    device_of,
    is_array,
    to_device,
)
from .dtypes import as_dtype, is_floating
from .memory import allocator_settings, retain_freed_memory
from .random import Generator, default_generator, manual_seed, resolve_generator
from .threads import get_num_threads, set_num_threads

"""Acceleration: every faster kernel, registered beside the op record it speeds up.

The op records in ``buildingai.ops`` are the reference: the clearest correct code for each op.
This package holds what makes them fast (compiled numba twins, LLVM register tiles, direct
convolutions, CUDA twins, product routing onto a BLAS of BuildingAI's own, one thread pool,
fused optimizer updates), each registered against its op with the condition under which it
applies (``registry.py``), and each tested against the record.

One switch for all of it: ``buildingai.accel.enable()`` / ``disable()`` / ``status()``, and
``BUILDINGAI_ACCEL=1|0`` for the value at start-up. Nothing here loads a library, starts a thread
or changes a setting until acceleration is enabled.
"""

from .registry import (
    ENV_VAR,
    Kernel,
    disable,
    enable,
    enabled,
    is_enabled,
    kernel,
    on_enable,
    register,
    register_switch,
    registered,
    set_enabled,
    status,
)

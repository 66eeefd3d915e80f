"""``y = alpha * x + beta * y`` in one pass: level-1 BLAS from the OpenBLAS that NumPy links.

An optimizer update is a chain of such scaled sums (a moment average, the parameter step). With
NumPy ufuncs each costs three passes over memory (``x * alpha`` into scratch, ``y *= beta``,
``y += scratch``); OpenBLAS's ``axpby`` reads ``x`` and ``y`` once and writes ``y`` once.
Large vectors also run on OpenBLAS's own threads, which idle after a step's GEMMs anyway.

The library is the one NumPy already loaded (wheels bundle ``scipy-openblas``, whose symbols
carry a ``scipy_`` prefix and a ``64_`` suffix for 64-bit integers); nothing is compiled or
installed. Where it is not found (NumPy built on MKL or Accelerate, CuPy arrays, strided or
mixed-dtype operands), :func:`axpby` computes the same thing with array operations, so callers
never branch. Results agree with the ufunc form to rounding (BLAS may fuse the multiply-add).

The binding is part of acceleration: with ``buildingai.accel`` off every scaled sum runs as
array operations and no library is looked up. Its own switch: ``vector_blas.set_enabled(False)``
(or ``BUILDINGAI_VECTOR_BLAS=0`` in the environment before BuildingAI is imported) does the same
while acceleration is on; ``status()`` says whether the binding is in use and which library it
found. In one pool on acceleration's own BLAS copy (``accel/products.py``) the sums run there.
"""

from __future__ import annotations

import ctypes
import functools
import glob
import os
import sys

import numpy as np

from ..backend.switches import env_switch
from ..backend.threads import blas_called
from ..backend.threads import own_blas as on_own_blas
from . import own_blas, registry

ENV_VAR = "BUILDINGAI_VECTOR_BLAS"
VECTOR_BLAS = registry.register_switch(
    "blas.vector",
    description="scaled sums (the optimizers' axpby) of large NumPy arrays through OpenBLAS",
)
VECTOR_BLAS.switched_on = env_switch(ENV_VAR, default=True)
# Below this many elements the ctypes call and its pointer lookups cost more than the passes saved.
MIN_SIZE = 1 << 15
_kernels: dict | None = None  # dtype -> (axpby, axpy); {} when the library has none
_library: str | None = None  # the path the kernels were bound from


def set_enabled(enabled: bool) -> bool:
    """Use BLAS (True, the default unless ``BUILDINGAI_VECTOR_BLAS=0``) or array operations
    only (False: for comparisons and debugging), process-wide. Returns the previous setting."""
    return registry.set_enabled(VECTOR_BLAS.name, enabled)


def available() -> bool:
    """Whether the BLAS kernels run: acceleration is on, the binding is switched on, and the
    kernels were found."""
    return VECTOR_BLAS.active and bool(_load())


def status() -> dict:
    """``{"active", "detail", "switch"}``: whether scaled sums of at least ``MIN_SIZE`` NumPy
    elements run through BLAS, why not or from which library, and how to turn it on or off."""
    switch = f"buildingai.accel.vector_blas.set_enabled(bool) or {ENV_VAR}=0/1"
    if not registry.is_enabled():
        detail = (
            f"acceleration off (buildingai.accel.enable() or {registry.ENV_VAR}=1): "
            "scaled sums run as array operations"
        )
    elif not VECTOR_BLAS.switched_on:
        detail = "switched off: scaled sums run as array operations"
    elif not _load():
        detail = "no OpenBLAS with axpby found: scaled sums run as array operations"
    else:
        detail = f"OpenBLAS axpby from {_library}"
    active = VECTOR_BLAS.active and bool(_kernels)
    return {"active": active, "detail": detail, "switch": switch}


def axpby(xp, alpha: float, x, beta: float, y, scratch=None) -> None:
    """``y = alpha * x + beta * y`` in place; x and y have one shape (and dtype, for BLAS).
    ``beta=0`` overwrites y, whatever it held (nan and inf included), as BLAS does. x and y
    must not partly overlap (BLAS reads and writes them in chunks, on several threads).

    ``scratch`` (optional, y's shape) spares the array fallback a temporary; it may be ``x``
    itself when the caller no longer needs x.
    """
    own = on_own_blas()  # one pool on the own BLAS copy: its one-thread copy, NumPy's asleep
    useful = VECTOR_BLAS.active and xp is np and y.size >= MIN_SIZE
    kernels = (_own() if own else _load()) if useful else None
    if kernels:
        pair = kernels.get(y.dtype)
        if (
            pair is not None
            and x.dtype == y.dtype
            and x.size == y.size
            and x.flags.c_contiguous
            and y.flags.c_contiguous
            and y.flags.writeable
        ):
            if own:
                own_blas.hold_at_one_thread(own_blas.library())
            if beta == 1.0:
                pair[1](y.size, alpha, x.ctypes.data, 1, y.ctypes.data, 1)
            else:
                pair[0](y.size, alpha, x.ctypes.data, 1, beta, y.ctypes.data, 1)
            if not own:
                blas_called()
            return
    if beta == 0.0:
        xp.multiply(x, alpha, out=y)
        return
    if scratch is None:
        scratch = xp.multiply(x, alpha)
    else:
        xp.multiply(x, alpha, out=scratch)
    if beta != 1.0:
        y *= beta
    y += scratch


def _load() -> dict:
    global _kernels, _library
    if _kernels is None:  # threads racing here each bind the same functions: harmless
        found: dict = {}
        for path in _openblas_paths():
            try:
                found = _bind(ctypes.CDLL(path))
            except OSError:
                continue
            if found:
                _library = path
                break
        _kernels = found
    return _kernels


@functools.cache
def _own() -> dict:
    """The kernels of BuildingAI's own OpenBLAS (``own_blas.py``), held at one thread."""
    library = own_blas.library()
    return {} if library is None else _bind(library)


def _openblas_paths() -> list[str]:
    """The OpenBLAS a NumPy wheel bundles next to the package, then (Linux) any other loaded
    into the process: NumPy's own comes first, so its thread pool is the one that works."""
    root = os.path.dirname(os.path.dirname(np.__file__))
    paths: list[str] = []
    for pattern in ("numpy.libs/*openblas*", "numpy/.dylibs/*openblas*"):
        paths.extend(sorted(glob.glob(os.path.join(root, pattern))))
    if sys.platform.startswith("linux"):
        try:
            with open("/proc/self/maps") as maps:
                for line in maps:
                    path = line.rsplit(" ", 1)[-1].strip()
                    if "openblas" in os.path.basename(path).lower() and path not in paths:
                        paths.append(path)
        except OSError:
            pass
    return paths


# (symbol prefix, suffix, BLAS integer): scipy-openblas64, then a plain OpenBLAS build
_NAMINGS = (
    ("scipy_cblas_", "64_", ctypes.c_int64),
    ("cblas_", "64_", ctypes.c_int64),
    ("scipy_cblas_", "", None),
    ("cblas_", "", None),
)


def _bind(library) -> dict:
    for prefix, suffix, integer in _NAMINGS:
        if not hasattr(library, f"{prefix}saxpby{suffix}"):
            continue
        integer = integer or _plain_integer(library, prefix)
        kernels = {}
        for dtype, letter, real in (
            (np.float32, "s", ctypes.c_float),
            (np.float64, "d", ctypes.c_double),
        ):
            axpby_fn = getattr(library, f"{prefix}{letter}axpby{suffix}")
            axpy_fn = getattr(library, f"{prefix}{letter}axpy{suffix}")
            pointer = ctypes.c_void_p
            axpby_fn.argtypes = (integer, real, pointer, integer, real, pointer, integer)
            axpy_fn.argtypes = (integer, real, pointer, integer, pointer, integer)
            axpby_fn.restype = axpy_fn.restype = None
            kernels[np.dtype(dtype)] = (axpby_fn, axpy_fn)
        return kernels
    return {}


def _plain_integer(library, prefix: str):
    """The integer width of unsuffixed symbols: 64-bit when the build says USE64BITINT."""
    config = getattr(library, prefix.replace("cblas_", "openblas_") + "get_config", None)
    if config is None:
        return ctypes.c_int32
    config.restype = ctypes.c_char_p
    return ctypes.c_int64 if b"USE64BITINT" in (config() or b"") else ctypes.c_int32

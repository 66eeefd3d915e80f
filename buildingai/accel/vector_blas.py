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

Beside ``axpby``: ``add_scaled`` (``x.add_(y, alpha=a)``'s update as one ``axpy`` pass) and
``sum_of_squares`` (a gradient norm's sum as one ``dot`` pass, without the squares' temporary),
each returning None or False where BLAS does not take the call, so that the caller's array
operations run.
"""

from __future__ import annotations

import ctypes
import functools
import glob
import os
import sys
from typing import NamedTuple

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
    kernels = _kernels_for(xp, y, x)
    if kernels is not None and y.flags.writeable:
        if beta == 1.0:
            kernels.axpy(y.size, alpha, x.ctypes.data, 1, y.ctypes.data, 1)
        else:
            kernels.axpby(y.size, alpha, x.ctypes.data, 1, beta, y.ctypes.data, 1)
        _called()
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


def add_scaled(xp, alpha: float, x, y) -> bool:
    """``y += alpha * x`` in place as one BLAS ``axpy`` pass (one rounding per entry where the
    BLAS fuses the multiply-add, as PyTorch's ``add_`` with ``alpha`` does) and True; False,
    having done nothing, where BLAS does not take the call (``axpby``'s conditions): the caller
    then makes its own passes."""
    kernels = _kernels_for(xp, y, x)
    if kernels is None or not y.flags.writeable or np.may_share_memory(x, y):
        return False
    kernels.axpy(y.size, alpha, x.ctypes.data, 1, y.ctypes.data, 1)
    _called()
    return True


def sum_of_squares(xp, x) -> float | None:
    """The sum of the squares of ``x``'s entries as a Python float, in one BLAS ``dot`` of x
    with itself: one read of x and no squared temporary (a gradient norm). None where BLAS does
    not take the call (``axpby``'s conditions). BLAS sums in x's dtype, in several running sums
    at once: for float32 the relative error grows with the length (about 1e-5 at a few million
    entries), below that of PyTorch's own float32 norm."""
    kernels = _kernels_for(xp, x, x)
    if kernels is None:
        return None
    total = kernels.dot(x.size, x.ctypes.data, 1, x.ctypes.data, 1)
    _called()
    return float(total)


def _kernels_for(xp, y, x):
    """The BLAS kernels of ``y``'s dtype for a level-1 call on x and y: where the binding is
    active, both are C-contiguous NumPy arrays of one dtype and size, and of at least
    ``MIN_SIZE`` entries; on the own copy in one pool (held at one thread, NumPy's threads
    asleep), else on NumPy's. None where they do not apply."""
    if not (VECTOR_BLAS.active and xp is np and y.size >= MIN_SIZE):
        return None
    if x.dtype != y.dtype or x.size != y.size:
        return None
    if not (x.flags.c_contiguous and y.flags.c_contiguous):
        return None
    own = on_own_blas()
    kernels = (_own() if own else _load()).get(y.dtype)
    if kernels is not None and own:
        own_blas.hold_at_one_thread()
    return kernels


def _called() -> None:
    """Note a call on NumPy's BLAS, whose threads it may wake (the own copy has none)."""
    if not on_own_blas():
        blas_called()


class _Kernels(NamedTuple):
    """One dtype's level-1 BLAS routines, bound through ctypes."""

    axpby: object
    axpy: object
    dot: object


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


def _own() -> dict:
    """The kernels of BuildingAI's own BLAS (``own_blas.py``: MKL or OpenBLAS), held at one
    thread."""
    return _bound(own_blas.library())


@functools.cache
def _bound(library) -> dict:
    return {} if library is None else _bind(library.handle)


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


# (symbol prefix, suffix, BLAS integer): scipy-openblas64, MKL's 64-bit CBLAS, then a plain
# OpenBLAS build
_NAMINGS = (
    ("scipy_cblas_", "64_", ctypes.c_int64),
    ("cblas_", "_64", ctypes.c_int64),
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
            dot_fn = getattr(library, f"{prefix}{letter}dot{suffix}")
            pointer = ctypes.c_void_p
            axpby_fn.argtypes = (integer, real, pointer, integer, real, pointer, integer)
            axpy_fn.argtypes = (integer, real, pointer, integer, pointer, integer)
            dot_fn.argtypes = (integer, pointer, integer, pointer, integer)
            axpby_fn.restype = axpy_fn.restype = None
            dot_fn.restype = real
            kernels[np.dtype(dtype)] = _Kernels(axpby_fn, axpy_fn, dot_fn)
        return kernels
    return {}


def _plain_integer(library, prefix: str):
    """The integer width of unsuffixed symbols: 64-bit when the build says USE64BITINT."""
    config = getattr(library, prefix.replace("cblas_", "openblas_") + "get_config", None)
    if config is None:
        return ctypes.c_int32
    config.restype = ctypes.c_char_p
    return ctypes.c_int64 if b"USE64BITINT" in (config() or b"") else ctypes.c_int32

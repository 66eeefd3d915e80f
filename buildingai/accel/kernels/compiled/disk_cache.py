"""Keeping kernels made per geometry in numba's on-disk cache.

A register tile is a numba intrinsic made for one set of sizes (``flat_tile(rows, vectors,
...)``), and the parallel loop that runs it is a closure over it. Numba caches such a closure
under a hash of the values it closes over, and an intrinsic pickles with an identifier drawn at
random in each process: the key never matched, so every process compiled its convolution loops
anew (the first ResNet-18 training step of a process took 26 s, nearly all of it compiling).

``keyed(intrinsic, name, *sizes)`` gives an intrinsic an identifier made of its name, its sizes,
the vector width and a digest of the sources its code is built from, so the next process finds
the compiled loop on disk. The digest makes a new key after any edit of those sources: a loop's
own file is checked by numba itself, but not the files its intrinsic's code generator calls.
"""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path

# The files an intrinsic's code comes from: the tile builders and their IR blocks.
_SOURCES = ("tile_ir.py", "register_tile.py", "flat_tile.py", "broadcast_tile.py")
_SOURCES += ("panel_tile.py", "attention.py", "disk_cache.py")


@functools.cache
def source_digest() -> str:
    """A short digest of the tile sources (``_SOURCES``) and the vector width they build."""
    from .tile_ir import LANES

    folder = Path(__file__).parent
    digest = hashlib.sha256(str(LANES).encode())
    for name in _SOURCES:
        digest.update((folder / name).read_bytes())
    return digest.hexdigest()[:16]


def keyed(intrinsic, name: str, *sizes):
    """``intrinsic``, given the identifier ``buildingai.<name>(<sizes>)@<digest>`` (once, before
    anything reads it): the same in every process for the same code, so loops that close over
    it are found in numba's cache. ``sizes`` must be every value the intrinsic's code depends on
    besides the sources."""
    arguments = ", ".join(repr(size) for size in sizes)
    intrinsic._set_uuid(f"buildingai.{name}({arguments})@{source_digest()}")
    return intrinsic

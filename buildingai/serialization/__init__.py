"""Checkpoints: ``save(obj, path)`` and ``load(path, map_location=None)``.

A checkpoint is one safetensors file: the arrays in its payload, the rest of the object as JSON in
its metadata, and a SHA-256 checksum verified on load. There is no pickle path, so loading a file
never runs code from it; writes are atomic, so a crash mid-save keeps the previous checkpoint.
``get_rng_state`` / ``set_rng_state`` capture every random stream for an exact resume.
See docs/design_notes/checkpoints.md.
"""

from ..backend.random import get_rng_state, set_rng_state
from ._atomic import remove_stale_temporaries
from ._checkpoint import load, save

__all__ = ["save", "load", "get_rng_state", "set_rng_state", "remove_stale_temporaries"]

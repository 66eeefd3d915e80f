"""``skip_init``: build a module without initialising its parameters
(``torch.nn.utils.skip_init``), for when custom initialisation follows or the default one is
slow."""

from __future__ import annotations

import inspect

from ...errors import ArgumentError
from .. import init
from ..module import Module

__all__ = ["skip_init"]


def skip_init(module_cls: type, *args, **kwargs) -> Module:
    """``module_cls(*args, **kwargs)`` with its parameters and buffers left as allocated
    (uninitialised, as ``buildingai.empty``) where it fills them with ``nn.init`` functions,
    which inside this call check their arguments but neither draw nor write.

    As in PyTorch, the class must take a ``device`` argument, and its constructor must not
    compute with its parameters beyond initialising them; values it sets otherwise (e.g. a
    norm layer's ones) are kept. ``device`` (default ``"cpu"``) is passed on.
    """
    if not (isinstance(module_cls, type) and issubclass(module_cls, Module)):
        raise ArgumentError(f"[skip_init] expected a Module class, got {module_cls!r}")
    if "device" not in inspect.signature(module_cls).parameters:
        raise ArgumentError(
            f"[skip_init] {module_cls.__name__} must take a 'device' argument to skip "
            "initialization",
            help="add device=None to its __init__ and pass it to the parameters it creates",
        )
    kwargs.setdefault("device", "cpu")
    with init.fills_skipped():
        return module_cls(*args, **kwargs)

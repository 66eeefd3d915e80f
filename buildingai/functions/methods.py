"""The Tensor's math methods, attached in one visible place.

Each family module of ``buildingai.functions`` ends with a ``TENSOR_METHODS`` table mapping a
method name to its public function; ``x.exp()`` is exactly ``buildingai.exp(x)``.
"""

from __future__ import annotations

import importlib
import pkgutil

from ..autograd.tensor import Tensor


def attach_tensor_methods() -> list[str]:
    """Set every family's ``TENSOR_METHODS`` on ``Tensor``; return the names attached."""
    from .. import functions

    attached = []
    for info in pkgutil.iter_modules(functions.__path__):
        if info.name.startswith("_") or info.name == "methods":
            continue
        module = importlib.import_module(f"{functions.__name__}.{info.name}")
        for name, function in getattr(module, "TENSOR_METHODS", {}).items():
            if name in attached:
                raise RuntimeError(f"Tensor method {name!r} is defined by two families")
            setattr(Tensor, name, function)
            attached.append(name)
    return attached

"""The Tensor's math methods, attached in one visible place.

Each family module of ``buildingai.functions`` ends with a ``TENSOR_METHODS`` table mapping a
method name to its public function; ``x.exp()`` is exactly ``buildingai.exp(x)``.
"""

from __future__ import annotations

import importlib
import pkgutil

from ..autograd.tensor import Tensor


def attach_tensor_methods(package: str, folders: list[str]) -> list[str]:
    """Set the ``TENSOR_METHODS`` of every family module of ``package`` (found in ``folders``)
    on ``Tensor``; return the names attached."""
    attached = []
    for info in pkgutil.iter_modules(folders):
        if info.name.startswith("_") or info.name == "methods":
            continue
        module = importlib.import_module(f"{package}.{info.name}")
        for name, function in getattr(module, "TENSOR_METHODS", {}).items():
            if name in attached:
                raise RuntimeError(f"Tensor method {name!r} is defined by two families")
            setattr(Tensor, name, function)
            attached.append(name)
    return attached

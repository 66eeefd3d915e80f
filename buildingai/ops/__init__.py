"""The primitive op table: one record per op (forward, backward, check, ONNX mapping).

Records are grouped by family, one module each (``families.py`` holds the family base classes
with their shared ``infer`` and ``cost``); the array kernels they call live in ``kernels/``.
``all_ops()`` lists every record, for tools that need the whole table (exporters, coverage
tests).
"""

from .base import Op


def all_ops() -> list[Op]:
    """Every primitive op record, from every family module."""
    import importlib
    import pkgutil

    records: dict[str, Op] = {}
    for info in pkgutil.iter_modules(__path__):
        if info.name == "kernels":  # array kernels the records call: no records there
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        for value in vars(module).values():
            if isinstance(value, Op):
                records[value.name] = value
    return sorted(records.values(), key=lambda op: op.name)

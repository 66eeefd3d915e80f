"""ParameterList and ParameterDict: parameters held in a list or a dict, registered with the
module so that ``parameters()``, ``state_dict()`` (keys ``"0"``, ``"1"``, ... or the dict's
keys), ``to()`` and the optimizers find them, as in PyTorch.

A plain Tensor put in either is wrapped as a ``Parameter`` (sharing its memory); other values
(numbers, modules) are kept as they are, as PyTorch does.
"""

from __future__ import annotations

import operator
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from ..autograd.tensor import Tensor
from .module import Module
from .parameter import Parameter


def _as_parameter(value: Any) -> Any:
    if isinstance(value, Tensor) and not isinstance(value, Parameter):
        return Parameter(value)
    return value


def _describe(value: Any) -> str:
    """One line of the repr: ``Parameter containing: [float32 of size 3x4]``."""
    if isinstance(value, Tensor):
        kind = "Parameter" if isinstance(value, Parameter) else "Tensor"
        size = "x".join(str(extent) for extent in value.shape)
        device = "" if value.device.type == "cpu" else f" ({value.device})"
        return f"{kind} containing: [{value.dtype} of size {size}{device}]"
    return f"Object of type: {type(value).__name__}"


class ParameterList(Module):
    """A list of parameters: ``ParameterList([Parameter(...), ...])``, indexed, iterated,
    appended to and extended like a list. Entry ``i`` is registered under the name ``str(i)``.
    It has no forward and cannot be called."""

    def __init__(self, values: Iterable[Any] | None = None) -> None:
        super().__init__()
        self._size = 0
        if values is not None:
            self += values

    def _name(self, index) -> str:
        index = operator.index(index)
        if not -len(self) <= index < len(self):
            raise IndexError(f"index {index} is out of range for a ParameterList of {len(self)}")
        return str(index % len(self))

    def __getitem__(self, index):
        if isinstance(index, slice):
            return type(self)(self[position] for position in range(*index.indices(len(self))))
        return getattr(self, self._name(index))

    def __setitem__(self, index: int, value: Any) -> None:
        setattr(self, self._name(index), _as_parameter(value))

    def __len__(self) -> int:
        return self._size

    def __iter__(self) -> Iterator[Any]:
        return iter([self[position] for position in range(len(self))])

    def __iadd__(self, values: Iterable[Any]) -> ParameterList:
        return self.extend(values)

    def append(self, value: Any) -> ParameterList:
        """Add ``value`` at the end. Returns self."""
        self._size += 1
        self[self._size - 1] = value
        return self

    def extend(self, values: Iterable[Any]) -> ParameterList:
        """Add every value of ``values`` at the end. Returns self."""
        if not isinstance(values, Iterable) or isinstance(values, Tensor):
            raise TypeError(
                f"ParameterList.extend needs an iterable of values, got {type(values).__name__}"
                + ("; use append() for a single tensor" if isinstance(values, Tensor) else "")
            )
        for value in values:
            self.append(value)
        return self

    def extra_repr(self) -> str:
        return "\n".join(f"  ({index}): {_describe(value)}" for index, value in enumerate(self))

    def __call__(self, *args, **kwargs):
        raise RuntimeError("ParameterList should not be called: index it or iterate over it")


class ParameterDict(Module):
    """An ordered dict of parameters with string keys: ``ParameterDict({"left": ...})``.
    Each entry is registered under its key (which must not contain a dot). A plain ``dict``
    given to the constructor or ``update`` is added in sorted key order, an ``OrderedDict``,
    a ParameterDict or ``(key, value)`` pairs in their own order, as in PyTorch."""

    def __init__(self, parameters: Any = None) -> None:
        super().__init__()
        self._keys: dict[str, None] = {}
        if parameters is not None:
            self.update(parameters)

    @staticmethod
    def _check_key(key) -> str:
        if not isinstance(key, str):
            raise TypeError(
                f"ParameterDict keys must be strings, got {type(key).__name__} ({key!r})"
            )
        return key

    def __getitem__(self, key: str) -> Any:
        self._check_key(key)
        if key not in self._keys:
            raise KeyError(key)
        return getattr(self, key)

    def __setitem__(self, key: str, value: Any) -> None:
        self._check_key(key)
        setattr(self, key, _as_parameter(value))
        self._keys[key] = None

    def __delitem__(self, key: str) -> None:
        del self._keys[self._check_key(key)]
        delattr(self, key)

    def __len__(self) -> int:
        return len(self._keys)

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys)

    def __reversed__(self) -> Iterator[str]:
        return reversed(self._keys)

    def __contains__(self, key: object) -> bool:
        return key in self._keys

    def keys(self):
        """The keys, in insertion order."""
        return self._keys.keys()

    def items(self) -> Iterator[tuple[str, Any]]:
        """``(key, value)`` pairs, in insertion order."""
        return ((key, self[key]) for key in self._keys)

    def values(self) -> Iterator[Any]:
        """The values, in insertion order."""
        return (self[key] for key in self._keys)

    def get(self, key: str, default: Any = None) -> Any:
        """The value under ``key``, or ``default``."""
        return self[key] if key in self else default  # noqa: SIM401 - this is get()

    def setdefault(self, key: str, default: Any = None) -> Any:
        """The value under ``key``, after storing ``default`` there if it was absent."""
        if key not in self:
            self[key] = default
        return self[key]

    def pop(self, key: str) -> Any:
        """Remove ``key`` and return its value."""
        value = self[key]
        del self[key]
        return value

    def popitem(self) -> tuple[str, Any]:
        """Remove and return the last inserted ``(key, value)`` pair."""
        if not self._keys:
            raise KeyError("popitem(): ParameterDict is empty")
        key = next(reversed(self._keys))
        return key, self.pop(key)

    def clear(self) -> None:
        """Remove every entry."""
        for key in list(self._keys):
            del self[key]

    def copy(self) -> ParameterDict:
        """A new ParameterDict holding the same values (not copies of them)."""
        return ParameterDict(OrderedDict(self.items()))

    def fromkeys(self, keys: Iterable[str], default: Any = None) -> ParameterDict:
        """A new ParameterDict with ``keys``, each holding ``default``."""
        return ParameterDict((key, default) for key in keys)

    def update(self, parameters: Mapping[str, Any] | Iterable) -> None:
        """Add or overwrite entries from a mapping or from ``(key, value)`` pairs."""
        if isinstance(parameters, (OrderedDict, ParameterDict)):
            pairs = list(parameters.items())
        elif isinstance(parameters, Mapping):
            pairs = sorted(parameters.items())
        elif isinstance(parameters, Iterable):
            pairs = []
            for position, pair in enumerate(parameters):
                if not isinstance(pair, Iterable) or len(pair) != 2:
                    raise ValueError(
                        f"ParameterDict.update: element {position} must be a (key, value) pair, "
                        f"got {pair!r}"
                    )
                pairs.append(tuple(pair))
        else:
            raise TypeError(
                "ParameterDict.update needs a mapping or an iterable of (key, value) pairs, got "
                f"{type(parameters).__name__}"
            )
        for key, value in pairs:
            self[key] = value

    def __or__(self, other: ParameterDict) -> ParameterDict:
        merged = self.copy()
        merged.update(other)
        return merged

    def __ror__(self, other: ParameterDict) -> ParameterDict:
        merged = other.copy()
        merged.update(self)
        return merged

    def __ior__(self, other: ParameterDict) -> ParameterDict:
        self.update(other)
        return self

    def extra_repr(self) -> str:
        return "\n".join(f"  ({key}): {_describe(value)}" for key, value in self.items())

    def __call__(self, *args, **kwargs):
        raise RuntimeError("ParameterDict should not be called: index it by key")


__all__ = ["ParameterDict", "ParameterList"]

"""Containers and plumbing modules: Sequential, ModuleList, ModuleDict, Identity, Flatten,
Unflatten."""

from __future__ import annotations

import operator
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping

from ..autograd.tensor import Tensor
from ..errors import ShapeError
from .module import Module


def _index(index, length: int, kind: str) -> int:
    """A non-negative position from an int index (negative counts from the end)."""
    index = operator.index(index)
    if not -length <= index < length:
        raise IndexError(f"index {index} is out of range for a {kind} of length {length}")
    return index % length


class _NumberedModules(Module):
    """Shared by Sequential and ModuleList: sub-modules named '0', '1', ... in order."""

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())

    def _renumber(self, modules: Iterable[Module]) -> None:
        # Names follow positions after a deletion or insertion, as in PyTorch.
        modules = list(modules)
        self._modules.clear()
        for position, module in enumerate(modules):
            self.add_module(str(position), module)

    def append(self, module: Module):
        """Add ``module`` at the end. Returns self."""
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules: Iterable[Module]):
        """Add every module of ``modules`` at the end. Returns self."""
        for module in modules:
            self.append(module)
        return self

    def insert(self, index: int, module: Module) -> None:
        """Put ``module`` before position ``index``."""
        modules = list(self._modules.values())
        length = len(modules)
        index = operator.index(index)
        position = max(0, min(length, index if index >= 0 else length + index))
        modules.insert(position, module)
        self._renumber(modules)

    def pop(self, index: int = -1) -> Module:
        """Remove and return the module at ``index``."""
        module = self[index]
        del self[index]
        return module

    def __delitem__(self, index: int | slice) -> None:
        keys = list(self._modules)
        if isinstance(index, slice):
            doomed = set(keys[index])
        else:
            doomed = {keys[_index(index, len(keys), type(self).__name__)]}
        self._renumber(module for key, module in self._modules.items() if key not in doomed)

    def __setitem__(self, index: int, module: Module) -> None:
        key = list(self._modules)[_index(index, len(self), type(self).__name__)]
        self.add_module(key, module)


class Sequential(_NumberedModules):
    """Modules applied one after the other: ``Sequential(Linear(4, 8), ReLU(), Linear(8, 2))``,
    or with names: ``Sequential(OrderedDict([("fc", Linear(4, 8)), ("act", ReLU())]))``.

    ``forward(x)`` is ``x`` passed through every module in order.
    """

    def __init__(self, *modules: Module) -> None:
        super().__init__()
        if len(modules) == 1 and isinstance(modules[0], Mapping):
            for name, module in modules[0].items():
                self.add_module(name, module)
        else:
            for position, module in enumerate(modules):
                self.add_module(str(position), module)

    def forward(self, x):
        for module in self._modules.values():
            x = module(x)
        return x

    def __getitem__(self, index: int | slice) -> Module:
        if isinstance(index, slice):
            return type(self)(OrderedDict(list(self._modules.items())[index]))
        return list(self._modules.values())[_index(index, len(self), "Sequential")]

    def __add__(self, other: Sequential) -> Sequential:
        if not isinstance(other, Sequential):
            raise TypeError(f"cannot add {type(other).__name__} to a Sequential")
        return Sequential(*self, *other)


class ModuleList(_NumberedModules):
    """A list of modules, registered so their parameters are found (a plain Python list of
    modules would hide them). It has no forward: iterate it in your own."""

    def __init__(self, modules: Iterable[Module] | None = None) -> None:
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def __getitem__(self, index: int | slice):
        if isinstance(index, slice):
            return type(self)(list(self._modules.values())[index])
        return list(self._modules.values())[_index(index, len(self), "ModuleList")]

    def __iadd__(self, modules: Iterable[Module]) -> ModuleList:
        return self.extend(modules)

    def __add__(self, other: Iterable[Module]) -> ModuleList:
        return ModuleList([*self, *other])

    def __repr__(self) -> str:
        # Runs of identical sub-modules print once, as "(0-11): 12 x Block(...)", like PyTorch.
        modules = list(self._modules.values())
        if not modules:
            return "ModuleList()"
        texts = [repr(module) for module in modules]
        lines = []
        start = 0
        while start < len(texts):
            end = start
            while end + 1 < len(texts) and texts[end + 1] == texts[start]:
                end += 1
            label = f"({start})" if end == start else f"({start}-{end}): {end - start + 1} x"
            lines.append(label + (": " if end == start else " ") + _indent(texts[start]))
            start = end + 1
        return "ModuleList(\n  " + "\n  ".join(lines) + "\n)"


def _indent(text: str, spaces: int = 2) -> str:
    lines = text.split("\n")
    return "\n".join([lines[0]] + [" " * spaces + line for line in lines[1:]])


class ModuleDict(Module):
    """A dict of modules, registered under their keys (which must not contain dots)."""

    def __init__(self, modules: Mapping[str, Module] | Iterable | None = None) -> None:
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key: str) -> Module:
        return self._modules[key]

    def __setitem__(self, key: str, module: Module) -> None:
        self.add_module(key, module)

    def __delitem__(self, key: str) -> None:
        del self._modules[key]

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[str]:
        return iter(self._modules)

    def __contains__(self, key: str) -> bool:
        return key in self._modules

    def keys(self):
        return self._modules.keys()

    def values(self):
        return self._modules.values()

    def items(self):
        return self._modules.items()

    def clear(self) -> None:
        self._modules.clear()

    def pop(self, key: str) -> Module:
        module = self._modules[key]
        del self._modules[key]
        return module

    def update(self, modules: Mapping[str, Module] | Iterable) -> None:
        """Add modules from a mapping or from ``(key, module)`` pairs."""
        pairs = modules.items() if isinstance(modules, Mapping) else modules
        for pair in pairs:
            key, module = pair
            self[key] = module


class Identity(Module):
    """Returns its input unchanged (a placeholder, e.g. to remove a classifier head). Accepts
    and ignores any constructor arguments, as in PyTorch. x: any shape (*) -> the same."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__()

    def forward(self, x):
        return x


class Flatten(Module):
    """Merge dimensions ``start_dim`` .. ``end_dim`` into one: (N, C, H, W) -> (N, C*H*W) with
    the defaults."""

    def __init__(self, start_dim: int = 1, end_dim: int = -1) -> None:
        super().__init__()
        self.start_dim = start_dim
        self.end_dim = end_dim

    def forward(self, x: Tensor) -> Tensor:
        shape = tuple(x.shape)
        ndim = max(len(shape), 1)
        start, end = self.start_dim, self.end_dim
        if not (-ndim <= start < ndim and -ndim <= end < ndim):
            raise ShapeError(
                f"[Flatten] dimensions start_dim={start}, end_dim={end} are out of range for an "
                f"input of shape {shape}",
                help=f"use dimensions in [{-ndim}, {ndim - 1}]",
            )
        start, end = start % ndim, end % ndim
        if start > end:
            raise ShapeError(
                f"[Flatten] start_dim={self.start_dim} comes after end_dim={self.end_dim} for an "
                f"input of shape {shape}"
            )
        if not shape:
            return x.reshape(1)
        merged = 1
        for extent in shape[start : end + 1]:
            merged *= extent
        return x.reshape(shape[:start] + (merged,) + shape[end + 1 :])

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    """Split dimension ``dim`` into ``unflattened_size``: Unflatten(1, (C, H, W)) turns
    (N, C*H*W) into (N, C, H, W). One size may be -1."""

    def __init__(self, dim: int, unflattened_size: Iterable[int]) -> None:
        super().__init__()
        sizes = tuple(int(size) for size in unflattened_size)
        if sum(size == -1 for size in sizes) > 1 or any(size < -1 for size in sizes):
            raise ValueError(
                f"Unflatten sizes must be non-negative with at most one -1, got {sizes}"
            )
        self.dim = dim
        self.unflattened_size = sizes

    def forward(self, x: Tensor) -> Tensor:
        shape = tuple(x.shape)
        ndim = len(shape)
        if not -ndim <= self.dim < ndim:
            raise ShapeError(
                f"[Unflatten] dim {self.dim} is out of range for an input of shape {shape}",
                help=f"use a dimension in [{-ndim}, {ndim - 1}]",
            )
        dim = self.dim % ndim
        sizes = self.unflattened_size
        known = 1
        for size in sizes:
            if size != -1:
                known *= size
        extent = shape[dim]
        if -1 in sizes:
            if known == 0 or extent % known:
                raise ShapeError(
                    f"[Unflatten] cannot split dimension {self.dim} of size {extent} into {sizes}"
                    f" (input shape {shape})"
                )
            sizes = tuple(extent // known if size == -1 else size for size in sizes)
        elif known != extent:
            raise ShapeError(
                f"[Unflatten] cannot split dimension {self.dim} of size {extent} into {sizes}: "
                f"their product is {known} (input shape {shape})",
                help="the sizes must multiply to the size of the dimension",
            )
        return x.reshape(shape[:dim] + sizes + shape[dim + 1 :])

    def extra_repr(self) -> str:
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"

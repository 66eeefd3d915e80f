"""Datasets: the map-style ``Dataset`` (``len`` + ``[index]``), the streaming ``IterableDataset``,
and the small combinators ``TensorDataset``, ``Subset``, ``ConcatDataset`` and ``random_split``."""

from __future__ import annotations

import bisect
import math
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from ..autograd.tensor import Tensor
from ..backend.random import Generator, resolve_generator
from ..errors import BuildingAIError, ShapeError


class Dataset:
    """A map-style dataset: ``len(dataset)`` items, each fetched with ``dataset[index]``.

    Subclasses implement ``__getitem__`` and ``__len__``. ``dataset_a + dataset_b`` concatenates.
    """

    def __getitem__(self, index: int) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must implement __getitem__")

    def __len__(self) -> int:
        raise NotImplementedError(f"{type(self).__name__} must implement __len__")

    def __add__(self, other: Dataset) -> ConcatDataset:
        return ConcatDataset([self, other])


class IterableDataset:
    """A stream of items (``__iter__``), for data that cannot be indexed: files read in order,
    generators, network streams.

    With ``num_workers > 0`` every worker iterates its own copy of the dataset, so a dataset that
    does not split its stream by ``get_worker_info()`` yields each item once per worker::

        def __iter__(self):
            info = get_worker_info()
            start = 0 if info is None else info.id
            step = 1 if info is None else info.num_workers
            yield from self.items[start::step]
    """

    def __iter__(self) -> Iterator[Any]:
        raise NotImplementedError(f"{type(self).__name__} must implement __iter__")


def _as_array(value):
    return value.array if isinstance(value, Tensor) else np.asarray(value)


class TensorDataset(Dataset):
    """Items are the ``index``-th rows of equally long arrays: ``(x[i], y[i])``.

    ``TensorDataset(images, labels)`` with ``images: (N, ...)`` and ``labels: (N,)`` accepts NumPy
    arrays and Tensors (which are stored as their arrays, so rows are cheap NumPy views).
    """

    def __init__(self, *arrays) -> None:
        if not arrays:
            raise BuildingAIError(
                "TensorDataset needs at least one array",
                help="TensorDataset(inputs, targets) with arrays of equal first dimension",
            )
        self.arrays = tuple(_as_array(array) for array in arrays)
        lengths = [array.shape[0] if array.ndim else None for array in self.arrays]
        if None in lengths or len(set(lengths)) != 1:
            shapes = ", ".join(str(tuple(array.shape)) for array in self.arrays)
            raise ShapeError(
                f"[TensorDataset] arrays must share their first dimension, got shapes {shapes}",
                help="every array holds one row per item: shapes (N, ...), (N, ...), ...",
            )

    def __getitem__(self, index: int) -> tuple:
        return tuple(array[index] for array in self.arrays)

    def __len__(self) -> int:
        return self.arrays[0].shape[0]


class Subset(Dataset):
    """The items of ``dataset`` at ``indices``, in that order."""

    def __init__(self, dataset: Dataset, indices: Sequence[int]) -> None:
        self.dataset = dataset
        self.indices = [int(index) for index in indices]

    def __getitem__(self, index: int) -> Any:
        if isinstance(index, list):
            return [self.dataset[self.indices[i]] for i in index]
        return self.dataset[self.indices[index]]

    def __len__(self) -> int:
        return len(self.indices)


class ConcatDataset(Dataset):
    """Several map-style datasets one after another: index ``len(a)`` is item 0 of ``b``."""

    def __init__(self, datasets: Sequence[Dataset]) -> None:
        self.datasets = list(datasets)
        if not self.datasets:
            raise BuildingAIError("ConcatDataset needs at least one dataset")
        for dataset in self.datasets:
            if isinstance(dataset, IterableDataset):
                raise BuildingAIError(
                    "ConcatDataset joins map-style datasets; got an IterableDataset",
                    help="chain iterable datasets with itertools.chain inside a new IterableDataset",
                )
        self.cumulative_sizes = np.cumsum([len(dataset) for dataset in self.datasets]).tolist()

    def __len__(self) -> int:
        return self.cumulative_sizes[-1]

    def __getitem__(self, index: int) -> Any:
        length = len(self)
        if index < 0:
            index += length
        if not 0 <= index < length:
            raise IndexError(f"index {index} out of range for ConcatDataset of length {length}")
        which = bisect.bisect_right(self.cumulative_sizes, index)
        start = self.cumulative_sizes[which - 1] if which else 0
        return self.datasets[which][index - start]


def random_split(
    dataset: Dataset, lengths: Sequence[int | float], generator: Generator | None = None
) -> list[Subset]:
    """Split ``dataset`` into non-overlapping random subsets of the given lengths.

    ``lengths`` are item counts summing to ``len(dataset)``, or fractions summing to 1; fractional
    remainders go one item each to the first subsets (as in PyTorch), so
    ``random_split(range(10), [0.5, 0.3, 0.2])`` has lengths 5, 3, 2. Deterministic for a given
    ``generator`` (the default generator when None).
    """
    total = len(dataset)
    lengths = list(lengths)
    if lengths and all(isinstance(n, float) for n in lengths) and math.isclose(sum(lengths), 1.0):
        counts = [int(math.floor(total * fraction)) for fraction in lengths]
        for slot in range(total - sum(counts)):
            counts[slot % len(counts)] += 1
        lengths = counts
    if any(not isinstance(n, (int, np.integer)) or n < 0 for n in lengths) or sum(lengths) != total:
        raise BuildingAIError(
            f"random_split lengths {lengths} must be non-negative counts summing to the dataset "
            f"length {total}, or fractions summing to 1",
            help=f"e.g. random_split(dataset, [{total - total // 5}, {total // 5}]) or [0.8, 0.2]",
        )
    permutation = resolve_generator(generator).backend_generator().permutation(total)
    offsets = np.cumsum([0, *lengths])
    return [
        Subset(dataset, permutation[start:stop].tolist())
        for start, stop in zip(offsets[:-1], offsets[1:])
    ]

"""Samplers decide which items an epoch visits and in what order; batch samplers group them.

Randomness comes from an explicit ``buildingai.Generator`` (the default generator when None), so a
seed fixes the order of every epoch. The permutation of each epoch is drawn when iteration starts.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence, Sized

import numpy as np

from ..backend.random import Generator, resolve_generator
from ..errors import BuildingAIError


class Sampler:
    """Yields dataset indices. Subclasses implement ``__iter__`` and, when known, ``__len__``."""

    def __iter__(self) -> Iterator[int]:
        raise NotImplementedError

    def __len__(self) -> int:
        raise TypeError(f"{type(self).__name__} has no length")


class SequentialSampler(Sampler):
    """0, 1, ..., len(data_source) - 1."""

    def __init__(self, data_source: Sized) -> None:
        self.data_source = data_source

    def __iter__(self) -> Iterator[int]:
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


class RandomSampler(Sampler):
    """A random order of the items: a permutation (``replacement=False``) or ``num_samples``
    independent uniform draws (``replacement=True``).

    Without replacement, ``num_samples`` larger than the dataset chains several permutations
    (every item appears equally often, up to one).
    """

    def __init__(
        self,
        data_source: Sized,
        replacement: bool = False,
        num_samples: int | None = None,
        generator: Generator | None = None,
    ) -> None:
        if num_samples is not None and (not isinstance(num_samples, int) or num_samples <= 0):
            raise BuildingAIError(
                f"RandomSampler num_samples must be a positive int, got {num_samples!r}"
            )
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator

    @property
    def num_samples(self) -> int:
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self) -> Iterator[int]:
        size = len(self.data_source)
        rng = resolve_generator(self.generator).backend_generator()
        if size == 0:
            return iter(())
        if self.replacement:
            return iter(rng.integers(0, size, self.num_samples).tolist())
        rounds = -(-self.num_samples // size)
        order = np.concatenate([rng.permutation(size) for _ in range(rounds)])
        return iter(order[: self.num_samples].tolist())

    def __len__(self) -> int:
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given indices in a random order: ``indices: (K,)`` ints (a sequence or 1-D array),
    yielded one by one as Python ints."""

    def __init__(self, indices: Sequence[int], generator: Generator | None = None) -> None:
        self.indices = np.asarray(indices, dtype=np.int64)
        self.generator = generator

    def __iter__(self) -> Iterator[int]:
        rng = resolve_generator(self.generator).backend_generator()
        return iter(self.indices[rng.permutation(len(self.indices))].tolist())

    def __len__(self) -> int:
        return len(self.indices)


class WeightedRandomSampler(Sampler):
    """``num_samples`` indices drawn with probability proportional to ``weights``.

    ``weights: (N,)`` non-negative, not all zero. Without replacement, ``num_samples`` must not
    exceed the number of non-zero weights.
    """

    def __init__(
        self,
        weights: Sequence[float],
        num_samples: int,
        replacement: bool = True,
        generator: Generator | None = None,
    ) -> None:
        weights = np.asarray(weights.data if hasattr(weights, "data") else weights, np.float64)
        if weights.ndim != 1 or weights.size == 0:
            raise BuildingAIError(
                f"WeightedRandomSampler weights must be a non-empty 1-D sequence, "
                f"got shape {weights.shape}"
            )
        if not np.all(np.isfinite(weights)) or np.any(weights < 0) or weights.sum() == 0:
            raise BuildingAIError(
                "WeightedRandomSampler weights must be finite, non-negative and not all zero",
                help="weights are relative probabilities, e.g. 1 / class_count[label]",
            )
        if not isinstance(num_samples, int) or num_samples <= 0:
            raise BuildingAIError(
                f"WeightedRandomSampler num_samples must be a positive int, got {num_samples!r}"
            )
        if not replacement and num_samples > np.count_nonzero(weights):
            raise BuildingAIError(
                f"WeightedRandomSampler cannot draw {num_samples} samples without replacement "
                f"from {np.count_nonzero(weights)} non-zero weights",
                help="use replacement=True or a smaller num_samples",
            )
        self.weights = weights
        self.num_samples = num_samples
        self.replacement = replacement
        self.generator = generator

    def __iter__(self) -> Iterator[int]:
        rng = resolve_generator(self.generator).backend_generator()
        probabilities = self.weights / self.weights.sum()
        drawn = rng.choice(
            len(probabilities), self.num_samples, replace=self.replacement, p=probabilities
        )
        return iter(drawn.tolist())

    def __len__(self) -> int:
        return self.num_samples


class BatchSampler(Sampler):
    """Groups the indices of ``sampler`` into lists of ``batch_size``; the last, shorter batch is
    kept unless ``drop_last``."""

    def __init__(self, sampler: Iterable[int], batch_size: int, drop_last: bool) -> None:
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0:
            raise BuildingAIError(
                f"batch_size must be a positive int, got {batch_size!r}",
                help="use batch_size=None in DataLoader to turn batching off",
            )
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self) -> Iterator[list[int]]:
        batch: list[int] = []
        for index in self.sampler:
            batch.append(index)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self) -> int:
        count = len(self.sampler)
        if self.drop_last:
            return count // self.batch_size
        return -(-count // self.batch_size)

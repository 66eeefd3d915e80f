"""Samplers decide which items an epoch visits and in what order; batch samplers group them.

Randomness comes from an explicit ``buildingai.Generator`` (the default generator when None), so a
seed fixes the order of every epoch. Each epoch's order is fixed when iteration starts.
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


# Indices drawn per call of a lazy sampler: memory stays small whatever num_samples is, and the
# per-call cost of NumPy is spread over many items.
_DRAW_CHUNK = 4096


class RandomSampler(Sampler):
    """A random order of the items: a permutation (``replacement=False``) or ``num_samples``
    independent uniform draws (``replacement=True``).

    Without replacement, ``num_samples`` larger than the dataset chains several permutations
    (every item appears equally often, up to one).

    Indices are drawn lazily, a chunk at a time, so ``num_samples`` may be far larger than
    memory allows (``RandomSampler(data, replacement=True, num_samples=int(1e10))``, the
    "infinite loader"). When iteration starts, one number drawn from ``generator`` seeds the
    epoch's own stream: the order is fixed by the generator's state at that moment, whatever
    else draws from the generator while the epoch is read.
    """

    def __init__(
        self,
        data_source: Sized,
        replacement: bool = False,
        num_samples: int | None = None,
        generator: Generator | None = None,
    ) -> None:
        if num_samples is not None and (
            not isinstance(num_samples, int) or isinstance(num_samples, bool) or num_samples <= 0
        ):
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
        if size == 0:
            return iter(())
        seed = int(resolve_generator(self.generator).backend_generator().integers(2**63))
        epoch_stream = np.random.default_rng(seed)
        if self.replacement:
            return _uniform_draws(epoch_stream, size, self.num_samples)
        return _chained_permutations(epoch_stream, size, self.num_samples)

    def __len__(self) -> int:
        return self.num_samples


def _uniform_draws(rng: np.random.Generator, size: int, count: int) -> Iterator[int]:
    """``count`` independent uniform indices in ``0..size-1``, drawn a chunk at a time."""
    for start in range(0, count, _DRAW_CHUNK):
        yield from rng.integers(0, size, min(_DRAW_CHUNK, count - start)).tolist()


def _chained_permutations(rng: np.random.Generator, size: int, count: int) -> Iterator[int]:
    """The first ``count`` indices of permutations of ``0..size-1`` laid end to end, one
    permutation drawn at a time."""
    for start in range(0, count, size):
        yield from rng.permutation(size)[: count - start].tolist()


class ResumableSampler(Sampler):
    """Each epoch's order from ``(seed, epoch)`` alone, starting at item ``start`` of it.

    Deriving an epoch's permutation from its number (not from a stream that advances) is what
    makes resuming exact: ``set_epoch(3, start=640)`` gives epoch 3's order from item 640 on, as
    an uninterrupted run saw it. ``shuffle=False`` visits 0, 1, ..., N - 1 every epoch.

    Inside a ``DataLoader`` the loader positions it: ``loader.set_epoch(epoch, start_batch=b)``
    is the one call that resumes both the order and the workers' random seeds (the loader
    counts later epochs on by itself). ``state_dict()`` / ``load_state_dict()`` save and restore
    the seed and position of a sampler used on its own.

    Example::

        sampler = ResumableSampler(dataset, seed=0)
        loader = DataLoader(dataset, batch_size=64, sampler=sampler)
        loader.set_epoch(3, start_batch=10)   # resume: epoch 3, from its batch 10
    """

    def __init__(self, data_source: Sized, shuffle: bool = True, seed: int = 0) -> None:
        self.data_source, self.shuffle, self.seed = data_source, shuffle, int(seed)
        self.epoch, self.start = 0, 0

    def set_epoch(self, epoch: int, start: int = 0) -> None:
        """Visit epoch ``epoch``'s order from its item ``start`` on, in the next iteration."""
        if epoch < 0 or start < 0:
            raise BuildingAIError(
                f"ResumableSampler.set_epoch needs epoch >= 0 and start >= 0, got "
                f"epoch={epoch!r}, start={start!r}",
                help="epochs and items count from 0",
            )
        self.epoch, self.start = int(epoch), int(start)

    def order(self) -> np.ndarray:
        """The whole epoch's order: ``(N,)`` dataset indices."""
        size = len(self.data_source)
        if not self.shuffle:
            return np.arange(size)
        return np.random.default_rng([self.seed, self.epoch]).permutation(size)

    def __iter__(self) -> Iterator[int]:
        return iter(self.order()[self.start :].tolist())

    def __len__(self) -> int:
        return max(len(self.data_source) - self.start, 0)

    def state_dict(self) -> dict:
        return {"seed": self.seed, "epoch": self.epoch, "start": self.start}

    def load_state_dict(self, state: dict) -> None:
        self.seed = int(state["seed"])
        self.set_epoch(state["epoch"], state["start"])


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
        weights = np.asarray(weights.array if hasattr(weights, "array") else weights, np.float64)
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

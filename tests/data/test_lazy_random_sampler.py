"""``RandomSampler`` draws its indices lazily, as PyTorch's does: ``num_samples`` far beyond
memory (the "infinite loader" idiom) costs nothing up front, and a seeded generator still fixes
the order."""

import itertools
import tracemalloc
from collections import Counter

import pytest

import buildingai as bai
from buildingai.data import DataLoader, RandomSampler, ResumableSampler

from ._datasets import Indexed

ENOUGH_FOR_A_FEW_CHUNKS = 2_000_000  # bytes: an up-front draw of 1e10 indices would be 80 GB


def _first(sampler, count: int) -> list[int]:
    return list(itertools.islice(iter(sampler), count))


def test_the_infinite_loader_idiom_draws_lazily():
    data = list(range(100))
    tracemalloc.start()
    try:
        sampler = RandomSampler(data, replacement=True, num_samples=int(1e10))
        first = _first(sampler, 10_000)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(sampler) == 10_000_000_000
    assert peak < ENOUGH_FOR_A_FEW_CHUNKS
    assert len(first) == 10_000 and set(first) == set(range(100))


@pytest.mark.parametrize("replacement", [True, False])
def test_a_seeded_generator_fixes_the_lazy_order(replacement):
    def sampler():
        return RandomSampler(
            range(7), replacement=replacement, num_samples=10**12, generator=bai.Generator(3)
        )

    assert _first(sampler(), 20_000) == _first(sampler(), 20_000)
    repeated = sampler()
    assert _first(repeated, 50) != _first(repeated, 50)  # each epoch draws anew


def test_other_draws_from_the_generator_during_an_epoch_leave_its_order_alone():
    generator = bai.Generator(5)
    undisturbed = _first(RandomSampler(range(9), True, 10**9, generator=bai.Generator(5)), 9000)
    epoch = iter(RandomSampler(range(9), True, 10**9, generator=generator))
    read = []
    for _ in range(9):
        read += list(itertools.islice(epoch, 1000))
        bai.rand(3, generator=generator)  # dropout, noise... drawing from the same generator
    assert read == undisturbed


def test_chained_permutations_without_replacement_visit_every_item_equally():
    order = _first(RandomSampler(range(5), num_samples=10**11, generator=bai.Generator(0)), 5003)
    counts = Counter(order)
    assert set(counts) == set(range(5)) and set(counts.values()) <= {1000, 1001}
    assert all(sorted(order[i : i + 5]) == list(range(5)) for i in range(0, 5000, 5))


def test_a_loader_over_the_infinite_sampler_yields_batches_lazily():
    data = Indexed(50)
    sampler = RandomSampler(
        data, replacement=True, num_samples=int(1e10), generator=bai.Generator(1)
    )
    loader = DataLoader(data, batch_size=8, sampler=sampler)
    assert len(loader) == 1_250_000_000
    batches = list(itertools.islice(iter(loader), 3))
    assert [len(labels) for _, labels in batches] == [8, 8, 8]


def test_resumable_sampler_still_resumes_mid_epoch():
    data = Indexed(20)
    loader = DataLoader(data, batch_size=4, sampler=ResumableSampler(data, seed=2))
    whole = [labels.tolist() for _, labels in loader]
    loader.set_epoch(0, start_batch=2)
    assert [labels.tolist() for _, labels in loader] == whole[2:]

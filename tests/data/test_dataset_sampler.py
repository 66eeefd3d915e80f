"""Datasets, combinators, random_split and samplers."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

import buildingai as bai
from buildingai.data import (
    BatchSampler,
    ConcatDataset,
    DataLoader,
    RandomSampler,
    ResumableSampler,
    SequentialSampler,
    Subset,
    SubsetRandomSampler,
    TensorDataset,
    WeightedRandomSampler,
    random_split,
)
from buildingai.errors import BuildingAIError, ShapeError

from ._datasets import Indexed, Stream


def test_tensor_dataset_rows():
    x, y = np.arange(12).reshape(6, 2), bai.tensor([0, 1, 0, 1, 0, 1])
    dataset = TensorDataset(x, y)
    assert len(dataset) == 6
    row, label = dataset[4]
    np.testing.assert_array_equal(row, [8, 9])
    assert label == 0


@pytest.mark.parametrize("arrays", [(np.zeros((3, 2)), np.zeros(4)), (np.zeros(()),)])
def test_tensor_dataset_length_mismatch(arrays):
    with pytest.raises(ShapeError, match=r"\[TensorDataset\] arrays must share their first"):
        TensorDataset(*arrays)
    with pytest.raises(BuildingAIError, match="needs at least one array"):
        TensorDataset()


def test_subset_and_concat():
    a, b = Indexed(3), Indexed(4)
    both = a + b
    assert isinstance(both, ConcatDataset) and len(both) == 7
    assert [both[i][1] for i in range(7)] == [0, 1, 2, 0, 1, 2, 3]
    assert both[-1][1] == 3
    with pytest.raises(IndexError, match="index 7 out of range"):
        both[7]
    subset = Subset(b, [3, 1])
    assert len(subset) == 2 and subset[0][1] == 3
    with pytest.raises(BuildingAIError, match="joins map-style datasets"):
        ConcatDataset([a, Stream()])


def test_random_split_counts_fractions_and_determinism():
    parts = random_split(Indexed(10), [0.5, 0.3, 0.2], generator=bai.Generator(1))
    assert [len(p) for p in parts] == [5, 3, 2]
    indices = sorted(i for p in parts for i in p.indices)
    assert indices == list(range(10))
    again = random_split(Indexed(10), [5, 3, 2], generator=bai.Generator(1))
    assert [p.indices for p in again] == [p.indices for p in parts]
    assert [len(p) for p in random_split(Indexed(10), [0.34, 0.33, 0.33])] == [4, 3, 3]


@pytest.mark.parametrize("lengths", [[3, 3], [0.5, 0.6], [-1, 11]])
def test_random_split_bad_lengths(lengths):
    with pytest.raises(BuildingAIError, match="must be non-negative counts summing to"):
        random_split(Indexed(10), lengths)


def test_sequential_and_random_samplers():
    assert list(SequentialSampler(range(4))) == [0, 1, 2, 3]
    sampler = RandomSampler(range(10), generator=bai.Generator(0))
    first, second = list(sampler), list(sampler)
    assert sorted(first) == list(range(10)) and first != second
    assert list(RandomSampler(range(10), generator=bai.Generator(0))) == first
    longer = list(RandomSampler(range(3), num_samples=7, generator=bai.Generator(0)))
    assert len(longer) == 7 and set(Counter(longer).values()) <= {2, 3}
    draws = list(RandomSampler(range(3), replacement=True, num_samples=50,
                               generator=bai.Generator(0)))  # fmt: skip
    assert len(draws) == 50 and set(draws) == {0, 1, 2}
    assert list(RandomSampler([])) == []
    with pytest.raises(BuildingAIError, match="num_samples must be a positive int"):
        RandomSampler(range(3), num_samples=0)


def test_subset_random_sampler():
    order = list(SubsetRandomSampler([5, 7, 9], generator=bai.Generator(0)))
    assert sorted(order) == [5, 7, 9]


def test_weighted_random_sampler():
    sampler = WeightedRandomSampler([0.0, 1.0, 3.0], 4000, generator=bai.Generator(0))
    counts = Counter(sampler)
    assert counts[0] == 0 and 2.6 < counts[2] / counts[1] < 3.4
    assert len(sampler) == 4000
    no_repeat = list(WeightedRandomSampler([1, 1, 1], 3, replacement=False,
                                           generator=bai.Generator(0)))  # fmt: skip
    assert sorted(no_repeat) == [0, 1, 2]


@pytest.mark.parametrize(
    "weights, num_samples, replacement, message",
    [
        ([], 1, True, "non-empty 1-D"),
        ([1, -1], 1, True, "non-negative and not all zero"),
        ([0, 0], 1, True, "non-negative and not all zero"),
        ([1, 1], 0, True, "num_samples must be a positive int"),
        ([1, 0], 2, False, "cannot draw 2 samples without replacement from 1"),
    ],
)
def test_weighted_random_sampler_errors(weights, num_samples, replacement, message):
    with pytest.raises(BuildingAIError, match=message):
        WeightedRandomSampler(weights, num_samples, replacement=replacement)


def test_batch_sampler():
    assert list(BatchSampler(range(5), 2, drop_last=False)) == [[0, 1], [2, 3], [4]]
    assert list(BatchSampler(range(5), 2, drop_last=True)) == [[0, 1], [2, 3]]
    assert len(BatchSampler(range(5), 2, False)) == 3
    assert len(BatchSampler(range(5), 2, True)) == 2
    with pytest.raises(BuildingAIError, match="batch_size must be a positive int"):
        BatchSampler(range(5), 0, False)


def test_resumable_sampler_orders_each_epoch_from_its_number():
    sampler = ResumableSampler(range(10), seed=3)
    first = list(sampler)
    sampler.set_epoch(1)
    second = list(sampler)
    assert sorted(first) == sorted(second) == list(range(10)) and first != second
    sampler.set_epoch(1, start=4)
    assert list(sampler) == second[4:] and len(sampler) == 6
    assert list(ResumableSampler(range(4), shuffle=False)) == [0, 1, 2, 3]


def test_resumable_sampler_state_dict_restores_its_position():
    sampler = ResumableSampler(range(10), seed=3)
    sampler.set_epoch(2, start=5)
    copy = ResumableSampler(range(10), seed=0)
    copy.load_state_dict(sampler.state_dict())
    assert list(copy) == list(sampler)


def test_one_set_epoch_call_resumes_the_loader_and_its_resumable_sampler():
    def loader() -> DataLoader:
        dataset = Indexed(10)
        return DataLoader(dataset, batch_size=3, sampler=ResumableSampler(dataset, seed=1))

    def labels(batches) -> list[list[int]]:
        return [batch[1].tolist() for batch in batches]

    uninterrupted = loader()
    list(uninterrupted)  # epoch 0
    epoch_1 = labels(uninterrupted)
    resumed = loader()
    resumed.set_epoch(1, start_batch=2)
    assert labels(resumed) == epoch_1[2:]
    assert labels(resumed) == labels(uninterrupted)  # both counted on to epoch 2, from its start

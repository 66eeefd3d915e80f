"""DataLoader: batching, order, determinism, worker seeding and the shared-memory transport."""

from __future__ import annotations

import numpy as np
import pytest

import buildingai as bai
from buildingai.data import DataLoader, DataLoaderError, TensorDataset, get_worker_info
from buildingai.data.text import collate_sequences

from ._datasets import Indexed, Large, RandomDraws, SlowFirstWorker, Stream

MODES = [
    pytest.param({"num_workers": 0, "prefetch": 0}, id="in-process"),
    pytest.param({"num_workers": 0, "prefetch": 2}, id="thread"),
    pytest.param({"num_workers": 2, "prefetch": 2}, id="workers"),
]


def labels_of(loader) -> list[int]:
    return [int(v) for batch in loader for v in batch[1].numpy()]


@pytest.mark.parametrize("mode", MODES)
def test_batches_in_order_with_structure(mode, clean):
    loader = DataLoader(Indexed(10), batch_size=4, **mode)
    batches = list(loader)
    assert len(loader) == 3 and len(batches) == 3
    images, labels = batches[0]
    assert isinstance(images, bai.Tensor) and images.shape == (4, 2, 3)
    assert images.dtype == np.float32 and labels.dtype == np.int64
    assert batches[-1][0].shape == (2, 2, 3)
    assert labels_of(loader) == list(range(10))


@pytest.mark.parametrize("mode", MODES)
def test_drop_last_and_no_batching(mode, clean):
    assert labels_of(DataLoader(Indexed(10), batch_size=4, drop_last=True, **mode)) == list(
        range(8)
    )
    items = list(DataLoader(Indexed(3), batch_size=None, **mode))
    assert [int(label) for _, label in items] == [0, 1, 2]
    assert isinstance(items[0][0], bai.Tensor) and items[0][0].shape == (2, 3)


def test_sampler_order_kept_when_workers_finish_out_of_order(clean):
    loader = DataLoader(SlowFirstWorker(24), batch_size=2, num_workers=3, prefetch=3)
    assert labels_of(loader) == list(range(24))


@pytest.mark.parametrize("mode", MODES)
def test_shuffle_is_deterministic_for_a_seed(mode, clean):
    def epoch_labels(seed):
        loader = DataLoader(Indexed(17), batch_size=5, shuffle=True,
                            generator=bai.Generator(seed), **mode)  # fmt: skip
        return labels_of(loader), labels_of(loader)

    first, second = epoch_labels(3)
    assert sorted(first) == list(range(17)) and first != list(range(17))
    assert first != second  # a new order each epoch
    assert epoch_labels(3) == (first, second)
    assert epoch_labels(4)[0] != first


def test_same_order_with_and_without_workers(clean):
    orders = [
        labels_of(
            DataLoader(
                Indexed(30), batch_size=4, shuffle=True, generator=bai.Generator(7), num_workers=w
            )
        )  # fmt: skip
        for w in (0, 1, 3)
    ]
    assert orders[0] == orders[1] == orders[2]


def test_default_generator_drives_shuffle(clean):
    bai.manual_seed(11)
    first = labels_of(DataLoader(Indexed(12), batch_size=3, shuffle=True))
    bai.manual_seed(11)
    assert labels_of(DataLoader(Indexed(12), batch_size=3, shuffle=True)) == first


def draws(loader):
    rows = []
    for batch in loader:
        for i in range(len(batch["index"])):
            rows.append(
                tuple(float(batch[key].numpy()[i]) for key in ("index", "worker", "seed",
                                                               "numpy", "python", "buildingai"))
            )  # fmt: skip
    return rows


def test_workers_get_distinct_reproducible_seeds(clean):
    loader = DataLoader(RandomDraws(), batch_size=2, num_workers=2, generator=bai.Generator(5))
    first = draws(loader)
    by_worker = {}
    for index, worker, seed, *values in first:
        by_worker.setdefault(int(worker), (seed, values))
        assert int(worker) == (int(index) // 2) % 2  # batch b goes to worker b % 2
    (seed0, values0), (seed1, values1) = by_worker[0], by_worker[1]
    assert seed1 == seed0 + 1
    assert all(a != b for a, b in zip(values0, values1))  # every stream differs per worker
    again = draws(DataLoader(RandomDraws(), batch_size=2, num_workers=2,
                             generator=bai.Generator(5)))  # fmt: skip
    assert again == first
    assert draws(loader) != first  # the next epoch draws a new base seed


def test_worker_info_and_init_fn(clean):
    assert get_worker_info() is None
    seen = []

    def init(worker_id):
        info = get_worker_info()
        assert info.id == worker_id and info.num_workers == 2
        assert isinstance(info.dataset, Stream)
        info.dataset.n = 4  # each worker configures its own copy

    loader = DataLoader(Stream(10), batch_size=1, num_workers=2, worker_init_fn=init)
    seen = sorted(int(b.item()) for b in loader)
    assert seen == [0, 1, 2, 3]


@pytest.mark.parametrize("mode", MODES)
def test_iterable_dataset_split_between_workers(mode, clean):
    values = [int(v) for batch in DataLoader(Stream(11), batch_size=3, **mode) for v in
              batch.numpy()]  # fmt: skip
    assert sorted(values) == list(range(11))
    if mode["num_workers"] == 0:
        assert values == list(range(11))
    assert len(DataLoader(Stream(11), batch_size=3)) == 4


def test_large_batches_travel_through_shared_memory(clean):
    loader = DataLoader(Large(), batch_size=4, num_workers=2)
    iterator = iter(loader)
    batches = list(iterator)
    assert [b[1] for b in batches][0] == ["0", "1", "2", "3"]  # strings ride in the descriptor
    np.testing.assert_array_equal(batches[3][0].numpy()[:, 0, 0], [12, 13, 14, 15])
    stats = iterator.transfer_stats
    assert stats["batches"] == 4
    assert stats["shared_bytes"] >= 4 * 4 * 512 * 512 * 4
    # only descriptors go through the queue: well under a kilobyte per 4 MB batch
    assert stats["queue_bytes"] < 1024 * stats["batches"]


def test_batches_do_not_alias_shared_memory(clean):
    loader = DataLoader(Indexed(40), batch_size=2, num_workers=1, prefetch=1)
    batches = list(loader)  # the worker's single slot is reused for every batch
    assert [int(b[1].numpy()[0]) for b in batches] == list(range(0, 40, 2))
    assert all(float(b[0].numpy()[1, 0, 0]) == int(b[1].numpy()[1]) for b in batches)


def test_persistent_workers_reused_across_epochs(clean):
    loader = DataLoader(Indexed(8), batch_size=2, num_workers=2, persistent_workers=True)
    assert labels_of(loader) == list(range(8))
    pids = [p.pid for p in loader._pool.processes]
    assert labels_of(loader) == list(range(8))
    assert [p.pid for p in loader._pool.processes] == pids
    # abandoning an epoch midway is fine: its stale batches are discarded
    next(iter(loader))
    assert labels_of(loader) == list(range(8))
    loader.shutdown()


def test_replaced_iterator_over_persistent_workers_raises(clean):
    loader = DataLoader(Indexed(8), batch_size=2, num_workers=1, persistent_workers=True)
    old = iter(loader)
    next(old)
    iter(loader)
    with pytest.raises(DataLoaderError, match="replaced by a newer one"):
        next(old)
    del loader


def test_custom_collate_in_workers(clean):
    sequences = TensorDataset(np.arange(6))

    class Ragged:
        def __len__(self):
            return 6

        def __getitem__(self, i):
            return list(range(i + 1)), i % 2

    del sequences
    loader = DataLoader(Ragged(), batch_size=3, num_workers=2, collate_fn=collate_sequences)
    (padded, labels), (padded2, _) = list(loader)
    assert padded["ids"].shape == (3, 3) and padded2["ids"].shape == (3, 6)
    np.testing.assert_array_equal(padded["lengths"].numpy(), [1, 2, 3])
    np.testing.assert_array_equal(labels.numpy(), [0, 1, 0])


def test_pin_memory_is_a_noop_on_cpu(clean):
    for workers in (0, 2):
        batches = list(DataLoader(Indexed(4), batch_size=2, pin_memory=True, num_workers=workers))
        assert [int(v) for b in batches for v in b[1].numpy()] == [0, 1, 2, 3]


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"num_workers": -1}, "num_workers must be an int >= 0"),
        ({"prefetch": -1}, "prefetch must be None or an int >= 0"),
        ({"num_workers": 2, "prefetch": 0}, "prefetch=0 with num_workers > 0"),
        ({"timeout": -1}, "timeout must be >= 0"),
        ({"persistent_workers": True}, "persistent_workers=True needs num_workers > 0"),
        ({"batch_size": 0}, "batch_size must be a positive int or None"),
        ({"shuffle": True, "sampler": [0, 1]}, "sampler and shuffle=True are exclusive"),
        ({"batch_sampler": [[0, 1]], "batch_size": 2}, "batch_sampler replaces"),
    ],
)
def test_invalid_arguments(kwargs, message):
    with pytest.raises(DataLoaderError, match=message):
        DataLoader(Indexed(4), **kwargs)


def test_iterable_dataset_rejects_shuffle():
    with pytest.raises(DataLoaderError, match="IterableDataset decides its own order"):
        DataLoader(Stream(4), shuffle=True)


def test_batch_sampler_and_sampler():
    loader = DataLoader(Indexed(6), batch_sampler=[[5, 0], [3]])
    assert [b[1].tolist() for b in loader] == [[5, 0], [3]]
    loader = DataLoader(Indexed(6), sampler=[4, 2, 0], batch_size=2)
    assert [b[1].tolist() for b in loader] == [[4, 2], [0]]

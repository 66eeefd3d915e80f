"""DistributedSampler: the ranks' shares partition the (padded) dataset, match PyTorch's without
shuffling, are deterministic per seed and epoch, and resume mid-epoch from a state dict."""

import numpy as np
import pytest

from buildingai.distributed import DistributedError, DistributedSampler

torch = pytest.importorskip("torch")


@pytest.mark.parametrize(("length", "replicas", "drop_last"), [(10, 3, False), (10, 3, True),
                                                                (8, 4, False), (5, 2, False)])  # fmt: skip
def test_unshuffled_shares_match_pytorch(length, replicas, drop_last):
    from torch.utils.data.distributed import DistributedSampler as TorchSampler

    data = list(range(length))
    for rank in range(replicas):
        ours = DistributedSampler(data, replicas, rank, shuffle=False, drop_last=drop_last)
        theirs = TorchSampler(data, replicas, rank, shuffle=False, drop_last=drop_last)
        assert list(ours) == list(theirs) and len(ours) == len(theirs)


def test_shuffled_shares_partition_the_data_and_follow_the_epoch():
    data = list(range(12))
    shares = [list(DistributedSampler(data, 3, rank, seed=7)) for rank in range(3)]
    assert sorted(sum(shares, [])) == data
    again = [list(DistributedSampler(data, 3, rank, seed=7)) for rank in range(3)]
    assert shares == again
    sampler = DistributedSampler(data, 3, 0, seed=7)
    sampler.set_epoch(1)
    assert list(sampler) != shares[0]


def test_resume_mid_epoch_from_the_state_dict():
    data = list(range(20))
    sampler = DistributedSampler(data, 2, 1, seed=3)
    sampler.set_epoch(4)
    whole = list(sampler)
    iterator = iter(sampler)
    seen = [next(iterator) for _ in range(4)]
    state = sampler.state_dict()
    resumed = DistributedSampler(data, 2, 1)
    resumed.load_state_dict(state)
    assert seen + list(resumed) == whole
    assert list(resumed) == whole  # the next epoch pass starts from the beginning again


def test_a_rank_outside_the_replicas_and_a_changed_world_are_refused():
    with pytest.raises(DistributedError, match="rank 2 is outside 0..1"):
        DistributedSampler(range(4), 2, 2)
    sampler = DistributedSampler(range(4), 2, 0)
    next(iter(sampler))  # 2 indices handed out in all: 4 replicas cannot split them
    state = sampler.state_dict()
    with pytest.raises(DistributedError, match="saved with 2 replicas after 2 indices"):
        DistributedSampler(range(4), 4, 0).load_state_dict(state)


@pytest.mark.parametrize(("saved", "resumed"), [(2, 1), (4, 2), (1, 4), (2, 4)])
def test_resume_at_another_world_size_continues_the_global_order(saved, resumed):
    # after 3 global batches of 8 the ranks of any size continue with the same samples
    data, global_batch = list(range(48)), 8
    before = [DistributedSampler(data, saved, rank, seed=5) for rank in range(saved)]
    for sampler in before:
        sampler.set_epoch(2)
        iterator = iter(sampler)
        for _ in range(3 * global_batch // saved):
            next(iterator)
    after = [DistributedSampler(data, resumed, rank, seed=0) for rank in range(resumed)]
    for sampler in after:
        sampler.load_state_dict(before[0].state_dict())
    shares = [list(sampler) for sampler in after]
    order = np.random.default_rng([5, 2]).permutation(48)
    for batch in range(3, 6):  # each later global batch holds the same samples at both sizes
        per_rank = global_batch // resumed
        mine = [index for share in shares for index in share[(batch - 3) * per_rank :][:per_rank]]
        assert sorted(mine) == sorted(order[batch * global_batch : (batch + 1) * global_batch])

"""Sharded parameters (ZeRO stage 3): in a world of one, training through the hooks equals
plain training; the plan names what each rank owns; on 2 and 4 processes a small Transformer
trains as one process does on the combined batch, under a per-rank memory limit at 4."""

import numpy as np
import pytest

import buildingai as bai
from buildingai import nn, optim
from buildingai.distributed import DistributedError, shard
from buildingai.nn import functional as F

from .launcher import run_job


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(10, 8)
        self.block = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True)
        self.head = nn.Linear(8, 10)

    def forward(self, tokens):  # (batch, sequence) -> (batch, sequence, 10)
        return self.head(self.block(self.embed(tokens)))


def _net():
    bai.manual_seed(0)
    return Net().to(bai.float64)


def _step(model, optimizer, sharded=None, step=0):
    tokens = np.random.default_rng(step).integers(0, 10, (3, 5))
    optimizer.zero_grad()
    logits = model(bai.tensor(tokens))
    F.cross_entropy(logits.reshape(-1, 10), bai.tensor(tokens.reshape(-1))).backward()
    if sharded is not None:
        sharded.finish_gradients()
    optimizer.step()


def test_in_a_world_of_one_training_through_the_hooks_is_plain_training(capsys):
    plain, model = _net(), _net()
    plain_optimizer = optim.Adam(plain.parameters(), lr=0.01)
    sharded = shard(model, policy=(nn.TransformerEncoderLayer,))
    assert "sharded parameters: 2 units over 1 ranks" in capsys.readouterr().out
    optimizer = optim.Adam(sharded.parameters(), lr=0.01)
    for step in range(3):
        _step(plain, plain_optimizer, step=step)
        _step(model, optimizer, sharded, step)
    assert model.block.linear1.weight.shape == (0,)  # freed outside forward and backward
    # each step: each of the 2 units gathered before its forward and its backward, reduced once
    assert sharded.collectives == {"all_gather": 12, "reduce_scatter": 6}
    trained = sharded.full_state_dict()
    for name, expected in plain.state_dict().items():
        np.testing.assert_array_equal(trained[name].numpy(), expected.numpy())
    sharded.remove()
    assert model.block.linear1.weight.shape == (16, 8)


def test_the_plan_lists_units_bytes_per_rank_and_collectives():
    sharded = shard(_net(), policy=lambda name, module: name == "block", print_plan=False)
    plan = sharded.plan()
    assert "  block                            12        600       600        4800" in plan
    assert "  (model)                           3        170       170        1360" in plan
    assert "2 all_gather in forward, 2 all_gather in backward, 2 reduce_scatter" in plan
    assert "(model): embed.weight (10, 8), head.weight (10, 8), head.bias (10,)" in plan


def test_a_forward_before_finishing_the_gradients_is_refused():
    model = _net()
    shard(model, policy=(nn.TransformerEncoderLayer,), print_plan=False)
    tokens = bai.tensor(np.zeros((1, 3), np.int64))
    model(tokens).sum().backward()
    with pytest.raises(DistributedError, match="call sharded.finish_gradients"):
        model(tokens)


def test_a_unit_of_two_dtypes_and_a_bad_policy_are_named():
    model = _net()
    model.head.to(bai.float32)
    with pytest.raises(DistributedError, match=r"unit \(model\) has parameters of dtypes"):
        shard(model, policy=(nn.TransformerEncoderLayer,), print_plan=False)
    with pytest.raises(DistributedError, match="policy must be a function"):
        shard(_net(), policy="block", print_plan=False)


@pytest.mark.mpi
@pytest.mark.slow
def test_two_ranks_train_a_transformer_as_one_process():
    job = run_job("sharded_parameters", 2, timeout=120)
    assert job.returncode == 0, job.output
    for rank in range(2):
        assert f"rank {rank}/2: sharded parameters ok" in job.output, job.output


@pytest.mark.mpi
@pytest.mark.slow
def test_four_ranks_train_a_transformer_as_one_process_under_a_memory_limit():
    job = run_job("sharded_parameters", 4, timeout=180)
    assert job.returncode == 0, job.output
    for rank in range(4):
        assert f"rank {rank}/4: sharded parameters ok" in job.output, job.output

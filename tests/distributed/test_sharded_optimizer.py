"""ShardedOptimizer (ZeRO stages 1 and 2): in a world of one it is the wrapped optimizer; on 2
and 4 processes it equals data-parallel training with every optimizer, clipping, accumulation
and GradScaler, holds 1/N of the optimizer state, and resumes at another world size."""

import subprocess
import sys

import numpy as np
import pytest

import buildingai as bai
from buildingai import nn, optim
from buildingai.distributed import DistributedError, ShardedOptimizer
from buildingai.nn import functional as F

from .launcher import JOBS, ROOT, run_job


def _model():
    bai.manual_seed(0)
    return nn.Sequential(nn.Linear(5, 7), nn.Tanh(), nn.Linear(7, 3)).to(bai.float64)


def _train(model, optimizer, steps=4):
    rng = np.random.default_rng(0)
    for _ in range(steps):
        x = bai.tensor(rng.standard_normal((4, 5)))
        y = bai.tensor(rng.integers(0, 3, 4))
        optimizer.zero_grad()
        F.cross_entropy(model(x), y).backward()
        optimizer.step()


@pytest.mark.parametrize("stage", [1, 2])
def test_in_a_world_of_one_it_is_the_wrapped_optimizer(stage):
    plain, sharded = _model(), _model()
    _train(plain, optim.AdamW(plain.parameters(), lr=0.01))
    optimizer = ShardedOptimizer(optim.AdamW, sharded.parameters(), stage=stage, lr=0.01)
    _train(sharded, optimizer)
    for expected, got in zip(plain.parameters(), sharded.parameters()):
        np.testing.assert_array_equal(got.numpy(), expected.numpy())
    assert optimizer.state_bytes() == 2 * 8 * sum(p.array.size for p in sharded.parameters())


def test_the_plan_names_what_each_rank_owns():
    optimizer = ShardedOptimizer(optim.SGD, _model().parameters(), lr=0.1)
    text = optimizer.describe()
    assert "bucket 0: 66 elements of float64, 66 per rank (0 padding)" in text
    assert "rank 0: param 0 (7, 5), param 1 (7,), param 2 (3, 7), param 3 (3,)" in text


def test_a_scheduler_drives_the_wrapped_optimizer():
    optimizer = ShardedOptimizer(optim.SGD, _model().parameters(), lr=0.1)
    scheduler = optim.StepLR(optimizer.optimizer, step_size=1, gamma=0.5)
    optimizer.step()
    scheduler.step()
    assert optimizer.param_groups[0]["lr"] == pytest.approx(0.05)


def test_an_optimizer_that_is_not_elementwise_is_refused():
    with pytest.raises(DistributedError, match="LBFGS does not update each element"):
        ShardedOptimizer(optim.LBFGS, _model().parameters())
    with pytest.raises(DistributedError, match="optimizer_class must be an optimizer class"):
        ShardedOptimizer(optim.SGD(_model().parameters(), lr=0.1), _model().parameters())


def test_weights_replaced_after_building_the_optimizer_are_named():
    model = _model()
    optimizer = ShardedOptimizer(optim.SGD, model.parameters(), lr=0.1)
    model[0].weight.array = model[0].weight.array.copy()
    with pytest.raises(DistributedError, match=r"the data of param 0 \(shape \(7, 5\)\) was "):
        _train(model, optimizer, steps=1)


def test_a_missing_ranks_state_dict_is_named():
    optimizer = ShardedOptimizer(optim.Adam, _model().parameters(), lr=0.01)
    saved = dict(optimizer.state_dict(), world_size=2)
    with pytest.raises(DistributedError, match="got 1 of the 2 ranks' state dicts"):
        optimizer.load_state_dict([saved])


@pytest.mark.mpi
@pytest.mark.slow
def test_two_ranks_equal_data_parallel_and_resume_at_one(tmp_path):
    job = run_job("sharded_optimizer", 2, str(tmp_path), timeout=120)
    assert job.returncode == 0, job.output
    for rank in range(2):
        assert f"rank {rank}/2: sharded optimizer ok" in job.output, job.output
    # Adam's two moments over 163 float64 parameters: 82 per rank (one element of padding)
    assert "rank 1/2: Adam state 1312 bytes (unsharded 2608 bytes" in job.output
    resumed = subprocess.run([sys.executable, str(JOBS / "sharded_resume.py"), str(tmp_path)],
                             capture_output=True, text=True, timeout=60, cwd=ROOT)  # fmt: skip
    assert "rank 0/1: resumed 2 ranks' optimizer state ok" in resumed.stdout, resumed.stderr


@pytest.mark.mpi
@pytest.mark.slow
def test_four_ranks_equal_data_parallel_and_resume_at_two(tmp_path):
    job = run_job("sharded_optimizer", 4, str(tmp_path), timeout=180)
    assert job.returncode == 0, job.output
    for rank in range(4):
        assert f"rank {rank}/4: sharded optimizer ok" in job.output, job.output
    assert "rank 3/4: Adam state 656 bytes (unsharded 2608 bytes" in job.output
    resumed = run_job("sharded_resume", 2, str(tmp_path), timeout=120)
    assert resumed.returncode == 0, resumed.output
    for rank in range(2):
        assert f"rank {rank}/2: resumed 4 ranks' optimizer state ok" in resumed.output

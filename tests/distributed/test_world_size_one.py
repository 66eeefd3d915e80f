"""A plain process with no launcher is a world of one: every collective works on the 'local'
backend, without importing mpi4py; debug mode keeps the ledger."""

import os
import subprocess
import sys

import numpy as np
import pytest

import buildingai as bai
from buildingai import distributed as dist

from .launcher import JOBS, ROOT


@pytest.fixture
def world(monkeypatch):
    for name in ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "PMIX_SIZE", "MPI_LOCALNRANKS",
                 "SLURM_NTASKS"):  # fmt: skip
        monkeypatch.delenv(name, raising=False)
    dist.destroy_process_group()
    yield
    dist.destroy_process_group()


def test_collectives_without_init_use_a_world_of_one(world):
    x = bai.tensor([1.0, 2.0, 3.0])
    dist.all_reduce(x, op="mean")
    assert dist.get_backend() == "local" and dist.get_world_size() == 1 and dist.get_rank() == 0
    np.testing.assert_array_equal(x.numpy(), [1.0, 2.0, 3.0])
    assert x.version == 1  # written in place: autograd sees the change


def test_every_collective_in_one_process(world):
    dist.init_process_group(backend="local", timeout=5)
    x = bai.tensor(np.arange(6.0).reshape(2, 3))
    outputs = [bai.zeros((2, 3), dtype="float64")]
    dist.all_gather(outputs, x)
    np.testing.assert_array_equal(outputs[0].numpy(), x.numpy())
    big = bai.zeros((2, 3), dtype="float64")
    dist.all_gather_into_tensor(big, x)
    np.testing.assert_array_equal(big.numpy(), x.numpy())
    out = bai.zeros((2, 3), dtype="float64")
    dist.reduce_scatter(out, [x], op="sum")
    np.testing.assert_array_equal(out.numpy(), x.numpy())
    gathered = [bai.zeros((2, 3), dtype="float64")]
    dist.gather(x, gathered, dst=0)
    np.testing.assert_array_equal(gathered[0].numpy(), x.numpy())
    received = bai.zeros((2, 3), dtype="float64")
    dist.scatter(received, [x], src=0)
    np.testing.assert_array_equal(received.numpy(), x.numpy())
    work = dist.broadcast(x, src=0, async_op=True)
    assert work.wait() and work.is_completed()
    dist.barrier()


def test_bfloat16_and_strided_tensors(world):
    ml_dtypes = pytest.importorskip("ml_dtypes")
    values = np.arange(8, dtype=np.float32).reshape(2, 4).astype(ml_dtypes.bfloat16)
    strided = bai.Tensor(values[:, ::2])
    dist.all_reduce(strided, op="mean")
    np.testing.assert_array_equal(strided.numpy().astype(np.float32), [[0, 2], [4, 6]])


@pytest.mark.parametrize(
    ("dtype", "op", "message"),
    [("int64", "mean", "would truncate"), ("bool", "mean", "undefined for a bool"),
     ("float32", "avg", "unknown op 'avg'")],
)  # fmt: skip
def test_reductions_a_dtype_cannot_do_are_refused(world, dtype, op, message):
    with pytest.raises(bai.DTypeError, match=message):
        dist.all_reduce(bai.tensor(np.ones(3, dtype)), op=op)


def test_wrong_arguments_name_the_collective(world):
    with pytest.raises(bai.ShapeError, match=r"\[all_gather\] tensor_list must hold one tensor"):
        dist.all_gather([], bai.tensor([1.0]))
    with pytest.raises(dist.DistributedError, match=r"\[broadcast\] src=3 is not in the group"):
        dist.broadcast(bai.tensor([1.0]), src=3)
    with pytest.raises(dist.DistributedError, match=r"\[send\] rank 0 cannot send to rank 0"):
        dist.send(bai.tensor([1.0]), dst=0)
    dist.destroy_process_group()
    with pytest.raises(dist.DistributedError, match="unknown backend 'gloo'"):
        dist.init_process_group(backend="gloo")


def test_debug_mode_keeps_a_ledger_with_the_call_site(world):
    dist.init_process_group(backend="local", debug=True)
    dist.all_reduce(bai.tensor(np.ones((2, 3), np.float32)))
    dist.broadcast(bai.tensor(np.ones(4, np.int64)), src=0)
    first, second = dist.ledger()
    assert (first.seq, first.op, first.shape, first.dtype) == (0, "all_reduce", (2, 3), "float32")
    assert (second.seq, second.op, second.shape, second.dtype) == (1, "broadcast", (4,), "int64")
    assert first.site.startswith(__file__) and first.site != second.site


def test_a_sub_group_of_one(world):
    group = dist.new_group([0])
    x = bai.tensor([2.0])
    dist.all_reduce(x, op="sum", group=group)
    assert dist.get_rank(group) == 0 and x.item() == 2.0


def test_the_collectives_job_runs_without_mpi4py():
    # a blocked import proves nothing reaches for mpi4py in a world of one
    blocker = ("import sys, runpy; sys.modules['mpi4py'] = None; sys.argv = [sys.argv[1]]; "
               "runpy.run_path(sys.argv[0], run_name='__main__')")  # fmt: skip
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("PMI_", "OMPI_"))}
    done = subprocess.run([sys.executable, "-c", blocker, str(JOBS / "collectives.py")],
                          capture_output=True, text=True, timeout=60, cwd=ROOT,
                          env=dict(environment, PYTHONPATH=str(ROOT)))  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "rank 0/1: collectives ok" in done.stdout


def test_the_mpi_backend_without_mpi4py_names_the_extra(world, monkeypatch):
    monkeypatch.setitem(sys.modules, "mpi4py", None)
    with pytest.raises(dist.DistributedError, match=r"pip install 'buildingai\[mpi\]'"):
        dist.init_process_group(backend="mpi")

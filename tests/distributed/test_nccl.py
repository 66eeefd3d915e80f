"""The NCCL backend: a one-line error without CuPy; with CuPy and a GPU, one rank's collectives
(several ranks need several GPUs and run through the same interface as MPI)."""

import importlib.util

import numpy as np
import pytest

import buildingai as bai
from buildingai import distributed as dist


@pytest.fixture
def fresh_world():
    dist.destroy_process_group()
    yield
    dist.destroy_process_group()


def _has_gpu() -> bool:
    if importlib.util.find_spec("cupy") is None or importlib.util.find_spec("mpi4py") is None:
        return False
    try:
        import cupy

        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:
        return False


@pytest.mark.skipif(importlib.util.find_spec("cupy") is not None, reason="CuPy is installed")
def test_without_cupy_the_error_names_what_to_install(fresh_world):
    with pytest.raises(dist.DistributedError, match="pip install cupy-cuda12x"):
        dist.init_process_group(backend="nccl")


@pytest.mark.skipif(not _has_gpu(), reason="needs CuPy, mpi4py and a GPU")
def test_collectives_on_one_gpu(fresh_world):
    dist.init_process_group(backend="nccl", timeout=30)
    x = bai.tensor(np.arange(6, dtype=np.float32)).to("cuda")
    dist.all_reduce(x, op="mean")
    dist.broadcast(x, src=0)
    outputs = [bai.zeros((6,), dtype="float32").to("cuda")]
    dist.all_gather(outputs, x)
    np.testing.assert_array_equal(outputs[0].numpy(), np.arange(6, dtype=np.float32))
    dist.barrier()

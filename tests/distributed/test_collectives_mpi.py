"""Every collective, every dtype, strided and zero-size tensors, sub-groups and send/recv, checked
against NumPy on 2 and 4 ranks (jobs/collectives.py holds the checks)."""

import pytest

from .launcher import run_job


@pytest.mark.mpi
@pytest.mark.parametrize("processes", [2, 4])
def test_every_collective_matches_numpy(processes):
    job = run_job("collectives", processes, timeout=90)
    assert job.returncode == 0, job.output
    for rank in range(processes):
        assert f"rank {rank}/{processes}: collectives ok" in job.output, job.output

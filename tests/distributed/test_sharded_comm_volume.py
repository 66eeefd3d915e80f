"""The bytes each rank sends per step (counted from the debug ledger of the collectives the step
called) match the ring formulas for data parallel, ZeRO-1, ZeRO-2 and ZeRO-3."""

import pytest

from .launcher import run_job

pytestmark = pytest.mark.slow


@pytest.mark.mpi
def test_two_ranks_send_what_the_formulas_say():
    job = run_job("comm_volume", 2, timeout=120)
    assert job.returncode == 0, job.output
    assert "| data parallel | all_reduce | 33540 | 33540 | 33540 | 1.0000 |" in job.output
    for rank in range(2):
        assert f"rank {rank}/2: communication volume ok" in job.output, job.output

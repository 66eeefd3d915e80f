"""``buildingai launch --max-restarts``: a rank killed with SIGKILL at step 7 of 20
(jobs/elastic_train.py kills it from inside, deterministically) costs a restart from the last
complete checkpoint (step 5), and the job ends with the parameters of an uninterrupted run: bit
for bit at the same world size, to round-off when the job shrank to one rank (the global batch
is kept). Each run is bounded by the launcher's --timeout and the test's own."""

import re

import numpy as np
import pytest

from .launcher import run_job

pytestmark = [pytest.mark.mpi, pytest.mark.slow]

KILLED = r"rank 1 \(PID \d+\) was killed by signal 9 \(SIGKILL\) at step 7"


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    folder = tmp_path_factory.mktemp("uninterrupted")
    job = run_job("elastic_train", 2, str(folder / "ckpt"), str(folder / "final.npz"), "none",
                  launch_options=("--timeout", "60"), timeout=90)  # fmt: skip
    assert job.returncode == 0, job.output
    return dict(np.load(folder / "final.npz"))


def restart_lines(output: str) -> list[str]:
    return re.findall(r"^buildingai launch: (restart .*|slot .*|starting .*|the job .*)$",
                      output, re.M)  # fmt: skip


@pytest.mark.slow  # starts mpiexec 3 times (the uninterrupted run, the killed one, its restart)
def test_a_rank_killed_at_step_7_restarts_and_ends_bit_for_bit(tmp_path, uninterrupted):
    job = run_job("elastic_train", 2, str(tmp_path / "ckpt"), str(tmp_path / "final.npz"),
                  "once", launch_options=("--max-restarts", "2", "--timeout", "90"),
                  timeout=120)  # fmt: skip
    assert job.returncode == 0, job.output
    lines = restart_lines(job.output)
    assert len(lines) == 3, job.output
    assert re.fullmatch("restart 1 of 2: " + KILLED, lines[0]), lines
    assert lines[1:] == ["starting 2 ranks again from the last complete checkpoint (step 5)",
                         "the job finished after restarting once, on 2 ranks"]  # fmt: skip
    assert "rank 0/2: resumed at step 5 (restart 1)" in job.output
    final = np.load(tmp_path / "final.npz")
    for name, expected in uninterrupted.items():
        assert np.array_equal(final[name], expected), name


@pytest.mark.slow  # starts mpiexec 3 times, or 4 without the uninterrupted run of the other
def test_a_slot_that_stays_gone_shrinks_the_job_to_min_ranks(tmp_path, uninterrupted):
    options = ("--max-restarts", "3", "--min-ranks", "1", "--timeout", "120")
    job = run_job("elastic_train", 2, str(tmp_path / "ckpt"), str(tmp_path / "final.npz"),
                  "always", launch_options=options, timeout=150)  # fmt: skip
    assert job.returncode == 0, job.output
    lines = restart_lines(job.output)
    assert len(lines) == 6, job.output
    assert re.fullmatch("restart 1 of 3: " + KILLED, lines[0]), lines
    assert re.fullmatch("restart 2 of 3: " + KILLED, lines[2]), lines
    assert lines[3:] == [
        "slot 1 (rank 1) has had 2 failures (--slot-failures 2): counting it gone; the job "
        "shrinks to 1 rank (--min-ranks 1)",
        "starting 1 rank again from the last complete checkpoint (step 5)",
        "the job finished after restarting 2 times, on 1 rank",
    ]
    assert "rank 0/1: resumed at step 5 (restart 2)" in job.output
    final = np.load(tmp_path / "final.npz")
    for name, expected in uninterrupted.items():
        np.testing.assert_allclose(final[name], expected, rtol=1e-12, atol=1e-14, err_msg=name)


def test_without_restarts_the_killed_job_fails_and_names_the_step(tmp_path):
    job = run_job("elastic_train", 2, str(tmp_path / "ckpt"), str(tmp_path / "final.npz"),
                  "once", launch_options=("--timeout", "60"), timeout=90)  # fmt: skip
    assert job.returncode != 0
    assert re.search("^buildingai launch: " + KILLED + "; last collective", job.output, re.M)
    assert restart_lines(job.output) == []
    assert not (tmp_path / "final.npz").exists()


def test_the_timeout_bounds_the_whole_run_restarts_included():
    # rank 1 exits with code 3 on every start: only --timeout ends the restarts
    job = run_job("failures", 2, "exits", "60",
                  launch_options=("--max-restarts", "50", "--timeout", "8"), timeout=60)  # fmt: skip
    assert job.returncode == 124, job.output
    assert "buildingai launch: the job ran past 8 s; killing it" in job.output
    # MPI_Abort may kill the rank's supervisor before it records the exit code
    cause = r"rank 1 \(PID \d+\) (exited with code 3 after|ended after) sys.exit\(3\)"
    assert re.search(r"^buildingai launch: restart 1 of 50: " + cause, job.output, re.M)
    assert job.seconds < 30

"""A rank that dies, stalls, raises or exits, and ranks that call different collectives: the
others raise within the timeout naming the rank and the collective, and the launcher exits
non-zero with no rank left behind (jobs/failures.py).

The survivors' reports are read from files the job writes as it re-raises: once a rank died,
the launcher may stop forwarding the other ranks' output."""

import re

import pytest

from .launcher import run_job

pytestmark = pytest.mark.mpi


def reports(folder, processes=2) -> dict:
    """{rank: (seconds the collective waited, error text)} for the ranks that raised."""
    found = {}
    for rank in range(processes):
        path = folder / f"rank{rank}.txt"
        if path.exists():
            seconds, text = path.read_text().split("\n", 1)
            found[rank] = (float(seconds), text)
    return found


@pytest.mark.slow
def test_a_stalled_rank_is_named_within_the_timeout(tmp_path):
    job = run_job("failures", 2, "stalled", "2", str(tmp_path), timeout=40)
    assert job.returncode != 0
    seconds, text = reports(tmp_path)[0]
    assert seconds < 2.5, text
    assert "CollectiveTimeoutError: [all_reduce] rank 0 waited 2 s for all_reduce #1" in text
    assert "rank 1 did not answer" in text
    assert job.seconds < 20  # the stalled rank sleeps 30 s: it was killed, not waited for


@pytest.mark.slow
def test_a_rank_that_dies_is_named_by_the_survivors(tmp_path):
    # Hydra kills the job when a rank dies; without its cleanup the survivor meets the vanished
    # rank itself, as on a launcher that never notices, and must still report it, not hang
    job = run_job("failures", 2, "vanishes", "2", str(tmp_path),
                  launch_options=("--no-auto-cleanup",), timeout=40)  # fmt: skip
    assert job.returncode != 0
    seconds, text = reports(tmp_path)[0]
    assert seconds < 2.5, text
    assert "[all_reduce] rank 0 waited 2 s for all_reduce #1 (shape (4,), float32)" in text
    assert "rank 1 did not answer" in text
    assert 1 not in reports(tmp_path)


@pytest.mark.slow
def test_a_killed_rank_ends_the_job_at_once():
    job = run_job("failures", 2, "killed", "60", timeout=40)
    assert job.returncode != 0
    assert job.seconds < 30, job.output  # far less than the 60 s collective timeout


@pytest.mark.parametrize(("mode", "code"), [("raises", 1), ("exits", 3)])
@pytest.mark.slow
def test_a_failing_rank_aborts_the_others_at_once(mode, code):
    job = run_job("failures", 2, mode, "60", timeout=40)
    assert job.returncode == code, job.output
    assert "rank 0 finished" not in job.output
    assert job.seconds < 30


@pytest.mark.slow
def test_mismatched_collectives_name_the_rank_and_line_in_debug_mode(tmp_path):
    # debug mode adds the ledger; the check itself is the default mode's
    job = run_job("failures", 2, "mismatch", "20", str(tmp_path), timeout=40)
    assert job.returncode != 0
    found = reports(tmp_path)
    assert sorted(found) == [0, 1], job.output  # both ranks raise, at once
    for seconds, text in found.values():
        assert seconds < 5
        assert text.startswith("CollectiveMismatchError: ")
        assert "ranks called different collectives at step #1: rank 1 diverged" in text
        assert "rank 0: all_reduce(shape (4,), float32, op='sum') #1 at" in text
        assert "rank 1: broadcast(shape (5,), float32, src=0) #1 at" in text
        assert "failures.py:37" in text and "failures.py:39" in text


@pytest.mark.slow
def test_the_launcher_timeout_kills_the_whole_job():
    job = run_job("failures", 2, "stalled", "60", launch_options=("--timeout", "3"), timeout=40)
    assert job.returncode == 124
    assert "ran past 3 s" in job.output


def launcher_lines(output: str) -> dict:
    """{rank: the launcher's line about it} from ``buildingai launch: rank N (PID P) ...``."""
    found = re.findall(r"^buildingai launch: rank (\d+) \(PID (\d+)\) (.*)$", output, re.M)
    return {int(rank): text for rank, _, text in found}


DEATHS = {"dies": "exited with code 9", "killed": "was killed by signal 9 (SIGKILL)"}


@pytest.mark.parametrize("cleanup", [True, False], ids=["auto-cleanup", "no-auto-cleanup"])
@pytest.mark.parametrize("mode", sorted(DEATHS))
@pytest.mark.slow
def test_the_launcher_names_a_rank_that_died(mode, cleanup, tmp_path):
    # os._exit(9) printed nothing at all, and a SIGKILL showed a PID but not the rank
    options = () if cleanup else ("--no-auto-cleanup",)
    job = run_job("failures", 2, mode, "2", str(tmp_path), launch_options=options, timeout=40)
    assert job.returncode != 0
    lines = launcher_lines(job.output)
    assert sorted(lines) == [0, 1], job.output  # the survivor ended abnormally too
    assert lines[1].startswith(DEATHS[mode] + "; last collective entered: all_reduce("), lines
    assert "#0 at " in lines[1] and "failures.py:19 (completed)" in lines[1]
    assert "all_reduce(shape (4,), float32, op='sum') #1 at" in lines[0]
    assert lines[0].endswith("(still inside it)")
    if not cleanup:  # the survivor ran on to its timeout and reported, then aborted the job
        # its report is read from its file: the launcher may stop forwarding a rank's output
        # once another rank died (the output once lacked it under load)
        text = reports(tmp_path)[0][1]
        assert text.startswith("CollectiveTimeoutError: [all_reduce] rank 0 waited 2 s"), text
        assert "after raising CollectiveTimeoutError" in lines[0]
    assert re.search(r"^buildingai launch: rank 1 \(PID \d+\)", job.output, re.M)
    first = job.output.index("buildingai launch: rank 1")
    assert first < job.output.index("buildingai launch: rank 0")  # the first to end comes first
    assert job.seconds < 30


def test_a_rank_that_raises_is_named_with_its_exception():
    job = run_job("failures", 2, "raises", "60", timeout=40)
    raised = ("exited with code 1 after raising ValueError", "ended after raising ValueError")
    lines = launcher_lines(job.output)
    assert lines[1].startswith(raised), job.output  # MPI_Abort may kill its supervisor first
    assert "last collective entered: all_reduce(" in lines[1]


@pytest.mark.slow
def test_a_clean_job_prints_no_launcher_lines():
    job = run_job("collectives", 2, timeout=90)
    assert job.returncode == 0, job.output
    assert "buildingai launch:" not in job.output

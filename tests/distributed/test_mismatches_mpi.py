"""Ranks that call a collective with different shapes, dtypes or arguments raise together in the
default mode, naming both calls and lines, before any data moves (jobs/mismatches.py)."""

import json
import re

import pytest

from .launcher import JOBS, run_job

pytestmark = pytest.mark.mpi

LINES = {
    name: number
    for number, line in enumerate((JOBS / "mismatches.py").read_text().splitlines(), 1)
    for name in re.findall(r"^def (\w+)\(\):", line)
}


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    folder = tmp_path_factory.mktemp("mismatches")
    job = run_job("mismatches", 2, str(folder), timeout=60)
    assert job.returncode == 0, job.output
    assert "rank 0 done, sum 1" in job.output and "rank 1 done, sum 1" in job.output
    return [json.loads((folder / f"rank{rank}.json").read_text()) for rank in (0, 1)]


def _line(case: str, offset: int) -> str:
    return f"mismatches.py:{LINES[case] + offset}"


def test_an_all_reduce_of_4_against_5_elements_raises_on_both_ranks(reports):
    for report in reports:
        text = report["errors"]["all_reduce_shapes"]
        assert text.startswith("[all_reduce] ranks called all_reduce differently at step #0")
        assert "rank 0: all_reduce(shape (4,), float32, op='sum') #0 at" in text
        assert "rank 1: all_reduce(shape (5,), float32, op='sum') #0 at" in text
        assert text.count(_line("all_reduce_shapes", 3)) == 2  # each rank's calling line
        assert report["untouched"] == [True]  # nothing was written into the tensor


def test_float32_against_float64_raises_on_both_ranks(reports):
    for report in reports:
        text = report["errors"]["all_reduce_dtypes"]
        assert "rank 0: all_reduce(shape (4,), float32, op='sum')" in text
        assert "rank 1: all_reduce(shape (4,), float64, op='sum')" in text
        assert _line("all_reduce_dtypes", 2) in text


@pytest.mark.parametrize(("case", "rank0", "rank1"), [
    ("all_reduce_ops", "op='sum'", "op='mean'"),
    ("all_reduce_async", "shape (4,)", "shape (5,)"),
    ("broadcast_shapes", "broadcast(shape (2, 3)", "broadcast(shape (3, 2)"),
    ("broadcast_sources", "src=0", "src=1"),
    ("all_gather_shapes", "all_gather(shape (3,)", "all_gather(shape (4,)"),
    ("all_gather_into_tensor_dtypes", "(shape (4,), float32)", "(shape (4,), int32)"),
    ("reduce_scatter_shapes", "reduce_scatter(shape (2,)", "reduce_scatter(shape (3,)"),
    ("reduce_scatter_tensor_dtypes", "(shape (2,), float64", "(shape (2,), float32"),
    ("gather_shapes", "gather(shape (4,)", "gather(shape (5,)"),
    ("scatter_dtypes", "(shape (4,), float32, src=0)", "(shape (4,), int64, src=0)"),
    ("different_collectives", "rank 0: all_reduce(", "rank 1: broadcast("),
])  # fmt: skip
def test_every_collective_refuses_calls_that_differ(reports, case, rank0, rank1):
    for report in reports:
        text = report["errors"][case]
        assert "rank 1 diverged" in text, text
        mine, theirs = text.split("; rank 1: ")
        assert rank0 in mine and rank1 in "rank 1: " + theirs, text


def test_recv_refuses_a_message_of_another_shape_and_dtype(reports):
    text = reports[1]["errors"]["send_recv_shapes"]
    assert text.startswith("[recv] rank 1 receives into shape (4,), float32 at ")
    assert "but rank 0 sent shape (5,), float64 at" in text
    assert _line("send_recv_shapes", 2) in text and _line("send_recv_shapes", 4) in text

"""The hand-written updates benchmark: it runs end to end at tiny sizes (no timing assertions),
the four candidates of each case compute the same thing, and the reference candidate runs with
the two switches off and puts them back."""

import numpy as np
import pytest

import buildingai as bai
from benchmarks import hand_updates as benchmark

torch = pytest.importorskip("torch")
SIZE = 70_001  # above vector_blas.MIN_SIZE: the shipped path takes its BLAS and kernels


def test_quick_run_produces_records(accel_on):
    records = benchmark.run(quick=True)
    kinds = [record["case"].split(" ")[0] for record in records]
    assert kinds == ["p.data.add_(g,", "p.data.add_(g,", "Adam", "Adam", "clip_grad_norm_"]
    for record in records:
        for name in benchmark.NAMES:
            assert record[name]["median"] > 0
        assert record["ratio to pytorch"] > 0 and record["ratio to numpy"] > 0


@pytest.mark.parametrize(
    "candidates",
    [
        lambda: benchmark._sgd_candidates(SIZE, torch),
        lambda: benchmark._adam_candidates(SIZE, torch),
        lambda: benchmark._clip_candidates([(300, 256), (256,)], torch),
    ],
    ids=["sgd", "adam", "clip"],
)
def test_the_candidates_compute_the_same_thing(accel_on, candidates):
    steps = candidates()
    steps["bai reference"] = benchmark._on_reference_paths(steps["bai reference"])
    results = {name: np.asarray(step(), dtype=np.float64) for name, step in steps.items()}
    for name, result in results.items():
        np.testing.assert_allclose(result, results["pytorch"], rtol=2e-5, atol=1e-7, err_msg=name)


def test_the_reference_candidate_switches_back(accel_on):
    names = ("blas.vector", "updates.fused")
    run = benchmark._on_reference_paths(
        lambda: [bai.accel.kernel(name).switched_on for name in names]
    )
    assert run() == [False, False]
    assert all(bai.accel.kernel(name).switched_on for name in names)

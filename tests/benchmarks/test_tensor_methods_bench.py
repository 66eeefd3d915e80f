"""The tensor-method benchmark: every case runs on BuildingAI, PyTorch and NumPy, and gives the
same values in all three, in both modes."""

import numpy as np
import pytest

import buildingai as bai
from benchmarks import tensor_methods as benchmark

torch = pytest.importorskip("torch")


@pytest.mark.parametrize(("label", "code", "numpy_code"), benchmark.CASES, ids=lambda c: str(c))
def test_each_case_computes_what_pytorch_and_numpy_compute(label, code, numpy_code):
    array = np.random.default_rng(0).standard_normal(benchmark.SHAPE).astype(np.float32)
    ours = bai.tensor(array, requires_grad=True)
    theirs = torch.tensor(array, requires_grad=True)
    ours_out = benchmark._calls(code, {"x": ours, "m": ours[0], "s": ours[:, :1]})()
    theirs_out = benchmark._calls(code, {"x": theirs, "m": theirs[0], "s": theirs[:, :1]})()
    numpy_names = {"x": array, "m": array[0], "s": array[:, :1], "np": np}
    numpy_out = None if numpy_code is None else benchmark._calls(numpy_code, numpy_names)()
    ours_parts = ours_out if isinstance(ours_out, tuple) else (ours_out,)
    theirs_parts = theirs_out if isinstance(theirs_out, tuple) else (theirs_out,)
    assert len(ours_parts) == len(theirs_parts)
    for index, (mine, reference) in enumerate(zip(ours_parts, theirs_parts)):
        np.testing.assert_allclose(mine.array, reference.detach().numpy(), rtol=1e-6, atol=1e-6)
        if numpy_out is not None:
            expected = numpy_out[index] if isinstance(numpy_out, tuple | list) else numpy_out
            np.testing.assert_allclose(mine.array, expected, rtol=1e-6, atol=1e-6)


def test_the_quick_run_gives_a_record_per_case_and_mode():
    records = benchmark.run(quick=True)
    assert len(records) == 2 * len(benchmark.CASES)
    assert {record["mode"] for record in records} == {"forward", "record"}
    for record in records:
        assert record["ratio_to_pytorch"] > 0
        assert ("numpy" in record) == (
            dict((c[0], c[2]) for c in benchmark.CASES)[record["call"]] is not None
        )

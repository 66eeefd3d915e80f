"""The side-by-side benchmark suite in quick mode: every workload's three implementations agree,
the outputs are written, and a model that differs is caught. No timing assertions."""

from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("threadpoolctl")

from benchmarks.__main__ import main  # noqa: E402
from benchmarks.suite import harness, mlp, transformer  # noqa: E402
from benchmarks.suite.numpy_reference.cnn import col2im_add, im2col  # noqa: E402


def test_quick_run_writes_json_and_markdown(tmp_path):
    page = tmp_path / "benchmarks.md"
    synthetic = "mlp,cnn,transformer,transformer-gelu,inference,micro"  # the real ones: their file
    code = main(["--quick", "--threads", "1", "--only", synthetic, "--results", str(tmp_path),
                 "--markdown", str(page)])  # fmt: skip
    assert code == 0
    (record_file,) = tmp_path.glob("suite-*.json")
    run = json.loads(record_file.read_text())
    assert run["arguments"]["failures"] == []
    workloads = {record["workload"] for record in run["records"]}
    assert workloads == {"mlp", "cnn", "transformer", "transformer-gelu", "inference", "micro"}
    for record in run["records"]:
        assert {"buildingai", "pytorch"} <= set(record["times"])
        if record["workload"] in ("mlp", "cnn", "transformer", "transformer-gelu"):
            assert "buildingai compiled" in record["times"]  # cross-checked against PyTorch too
            assert "buildingai compiled" in record["cross_check"]["losses"]
    text = page.read_text()
    for heading in ("## Training steps", "## Inference", "## Per-op costs", "## Cross-check"):
        assert heading in text
    assert "OPENBLAS_CORETYPE" in text and "kernel=" in text


def test_cross_check_agrees_on_one_step():
    check = harness.cross_check("transformer", transformer.steppers(quick=True), adam=True)
    losses = check["losses"]
    assert abs(losses["buildingai"] - losses["pytorch"]) < 1e-4
    assert abs(losses["numpy"] - losses["pytorch"]) < 1e-4


def test_cross_check_catches_a_different_model():
    steppers = mlp.steppers(quick=True)
    steppers["numpy"].params["2.bias"] += 0.5  # no longer the same initial weights
    with pytest.raises(harness.CrossCheckError, match=r"\[mlp\] first-step loss of numpy"):
        harness.cross_check("mlp", steppers, adam=True)


def test_cross_check_catches_a_different_update():
    steppers = mlp.steppers(quick=True)
    steppers["numpy"].optimizer.lr = 2e-3  # same loss, different step
    with pytest.raises(harness.CrossCheckError, match=r"parameter '.*' differs from PyTorch's"):
        harness.cross_check("mlp", steppers, adam=True)


def test_col2im_is_the_adjoint_of_im2col():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 6, 5, 3)).astype(np.float64)
    cols = im2col(x, 3)
    grad = rng.standard_normal(cols.shape)
    back = col2im_add(grad, x.shape, 3, np.empty_like(x))
    assert np.isclose(np.sum(cols * grad), np.sum(x * back))


def test_unknown_workload_is_refused(capsys):
    with pytest.raises(SystemExit):
        main(["--quick", "--only", "mlp,resnet"])
    assert "unknown workload" in capsys.readouterr().err

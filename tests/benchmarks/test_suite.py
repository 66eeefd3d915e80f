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


def test_a_run_of_some_synthetic_workloads_keeps_the_page_s_tables(tmp_path, capsys):
    """``--only mlp`` on a page that holds the whole synthetic suite: its tables stay (the run's
    would drop every other workload's rows), and the log says how to publish."""
    page = tmp_path / "benchmarks.md"
    page.write_text("# Benchmarks\n\n| cnn train step | 1 | ms | 80.2 |\n")
    code = main(["--quick", "--threads", "1", "--only", "mlp", "--results", str(tmp_path),
                 "--markdown", str(page)])  # fmt: skip
    assert code == 0
    assert page.read_text() == "# Benchmarks\n\n| cnn train step | 1 | ms | 80.2 |\n"
    assert "kept the synthetic tables" in capsys.readouterr().err
    (record_file,) = tmp_path.glob("suite-*.json")  # the run itself is kept in full
    assert {r["workload"] for r in json.loads(record_file.read_text())["records"]} == {"mlp"}


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


@pytest.mark.parametrize("count", [1, 2])
def test_micro_cases_run_buildingai_at_the_thread_limit(monkeypatch, count):
    """The per-op rows compare like with like: BuildingAI's threads, inside each case, are the
    thread limit's count, as PyTorch's and BLAS's are (not the process default)."""
    import buildingai as bai
    from benchmarks import dispatch, layers
    from benchmarks.suite import micro

    seen = []

    def noting(*args, **kwargs):
        seen.append(bai.get_num_threads())
        return []

    for module, name in ((dispatch, "run"), (layers, "bench_conv2d"), (layers, "bench_attention")):
        monkeypatch.setattr(module, name, noting)
    bai.set_num_threads(3 - count)  # the other count, so a missing switch shows
    try:
        micro.run(quick=True, threads=[count])
    finally:
        bai.set_num_threads(None)
    assert seen == [count, count, count]

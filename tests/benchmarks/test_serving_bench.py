"""The serving benchmark runs end to end at tiny sizes (no timing assertions), and its PyTorch
and ONNX backends compute what the served checkpoint computes."""

import numpy as np
import pytest

from benchmarks import serving as benchmark

pytest.importorskip("httpx")
pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")


@pytest.mark.slow  # starts two server processes: about 10 s
def test_quick_mode_produces_records():
    records = benchmark.bench(quick=True, log=lambda line: None)
    assert len(records) == 4  # one model, batching on and off, 1 and 4 clients
    for record in records:
        assert record["errors"] == 0
        assert record["mean_batch"] >= 1  # the server answered requests in every round
        assert record["server_cpu_ms_per_request"] > 0
        if record["requests_per_s"]:  # a loaded machine may answer none inside a short window
            assert 0 < record["p50_ms"] <= record["p99_ms"]
    assert "| MLP | buildingai | on | 1 |" in benchmark.table(records)


@pytest.mark.parametrize("name, spec", [("MLP", dict(type="MLP", hidden=[8])),
                                        ("CNN", dict(type="SmallCNN", channels=[2], hidden=4))])  # fmt: skip
def test_every_backend_serves_the_same_model(tmp_path, name, spec):
    pytest.importorskip("torch")
    pytest.importorskip("onnxruntime")
    paths = benchmark.write_models(tmp_path, {name: spec})[name]
    reference = benchmark._served_model("buildingai", paths)
    shape = reference.signature.shape
    batch = np.random.default_rng(0).random((4, *shape), dtype=np.float32)
    expected = reference.run(batch)
    for backend in ("pytorch", "onnxruntime"):  # the PyTorch copy checks itself when built
        served = benchmark._served_model(backend, paths)
        np.testing.assert_allclose(served.run(batch), expected, rtol=1e-4, atol=1e-5)
    assert benchmark._served_model("no model", paths).run(batch).shape == (4, 10)

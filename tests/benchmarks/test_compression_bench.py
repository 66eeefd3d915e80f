"""The compression benchmark runs end to end in quick mode (no timing assertions)."""

import pytest

pytest.importorskip("onnxruntime")
pytest.importorskip("threadpoolctl")

from benchmarks import compression as benchmark  # noqa: E402


@pytest.mark.slow
def test_quick_mode_produces_every_record():
    result = benchmark.run(quick=True)
    cases = [record["case"] for record in result["records"]]
    assert len(cases) == 5 and cases[-1].startswith("distillation")
    quantization = result["records"][0]
    assert {"buildingai int8 static", "onnxruntime int8 static"} <= set(quantization["timings"])
    assert quantization["onnx_float_kernels"]["int8 static"] == []
    assert quantization["onnx_bytes"]["int8 static"] < quantization["onnx_bytes"]["float"] / 3
    pruning = result["records"][1]["accuracy"]
    assert pruning["90%"]["measured sparsity"] == 90.0

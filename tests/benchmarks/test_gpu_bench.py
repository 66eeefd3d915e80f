"""The GPU check's report: a saved record becomes the "On a GPU" region of the benchmarks page,
and publishing it keeps the rest of the page; without a GPU the benchmark says so."""

import json

import pytest

from benchmarks import gpu, gpu_report
from benchmarks.suite import page

RECORD = {
    "environment": {
        "date": "2026-12-04 15:49", "gpu": "NVIDIA H200", "gpu_memory_gib": 140.4,
        "cuda_driver": 13000, "cupy": "14.2.0", "numpy": "2.5.2", "python": "3.12.3",
        "torch": "2.11.0+cu130",
    },
    "tests": "576 passed in 42.66s",
    "rows": [
        {"workload": "mlp", "buildingai_ms": 2.27, "compiled_ms": 1.92, "pytorch_ms": 1.14,
         "ratio": 1.99, "compiled_ratio": 1.69},
        {"workload": "cnn", "error": "DeviceError: [conv2d] ...", "pytorch_ms": 1.49},
        {"row_op": "softmax", "twins_ms": 0.57, "array_ops_ms": 0.54, "speedup": 0.96},
    ],
}  # fmt: skip


def test_the_section_holds_every_row_and_names_a_failure():
    text = gpu_report.section(RECORD)
    assert text.startswith(gpu_report.START) and text.endswith(gpu_report.END)
    assert "NVIDIA H200 (140.4 GiB)" in text and "576 passed" in text
    assert "| mlp | 2.27 | 1.92 | 1.14 | 1.99 | 1.69 |" in text
    assert "| cnn | - | - | 1.49 | - | - |" in text
    assert "cnn failed: DeviceError" in text
    assert "| softmax | 0.57 | 0.54 | 0.96 |" in text


def test_publishing_keeps_the_rest_of_the_page(tmp_path, monkeypatch):
    markdown = tmp_path / "benchmarks.md"
    scaling_start, scaling_end = page.REGIONS[1]
    markdown.write_text(f"# Benchmarks\n\nmain part\n\n{scaling_start}\nscaling\n{scaling_end}\n")
    saved = tmp_path / "gpu-1.json"
    saved.write_text(json.dumps(RECORD))
    monkeypatch.setattr(gpu, "MARKDOWN", markdown)
    assert gpu.main(["--publish", str(saved)]) == 0
    text = markdown.read_text()
    assert "main part" in text and "\nscaling\n" in text
    assert text.index(scaling_end) < text.index(gpu_report.START)
    assert gpu.main(["--publish", str(saved)]) == 0  # a second run replaces its region
    assert markdown.read_text().count(gpu_report.START) == 1


def test_the_pytest_summary_is_the_last_line(tmp_path):
    output = tmp_path / "gpu_tests.txt"
    output.write_text("....\n\n========= 576 passed in 42.66s =========\n")
    assert gpu_report.tests_summary(str(output)) == "576 passed in 42.66s"
    assert gpu_report.tests_summary(str(tmp_path / "missing.txt")) is None


@pytest.mark.skipif(gpu.bai.cuda_is_available(), reason="a GPU is here: the benchmark runs")
def test_without_a_gpu_the_benchmark_says_so(capsys):
    assert gpu.main([]) == 0
    assert "no CUDA GPU" in capsys.readouterr().out

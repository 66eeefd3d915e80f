"""The real training workloads (``gpt``, ``resnet18``, ``lstm-lm``): each model is one source
text written for PyTorch that BuildingAI runs with only its import lines changed, both
libraries train the same model for a step, the quick suite writes its section without erasing
the rest of the page, and the scaling script's words match its numbers."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("torch")
pytest.importorskip("threadpoolctl")

from benchmarks import scaling  # noqa: E402
from benchmarks.__main__ import main  # noqa: E402
from benchmarks.suite import harness, page, real_report, real_workloads  # noqa: E402
from benchmarks.suite.from_source import BUILDINGAI_IMPORTS, TORCH_IMPORTS, source_for  # noqa: E402

MODULES = sorted(real_workloads.WORKLOADS.items())


@pytest.mark.parametrize("name, module", MODULES)
def test_the_source_differs_only_in_its_import_lines(name, module):
    theirs = source_for(module.SOURCE, "pytorch").splitlines()
    ours = source_for(module.SOURCE, "buildingai").splitlines()
    assert len(theirs) == len(ours)
    changed = [(a, b) for a, b in zip(theirs, ours) if a != b]
    assert [a for a, _ in changed] == TORCH_IMPORTS.splitlines()
    assert [b for _, b in changed] == BUILDINGAI_IMPORTS.splitlines()


@pytest.mark.parametrize("name, module", MODULES)
def test_one_step_of_each_library_trains_the_same_model(name, module):
    settings = real_workloads.options(module, quick=True)
    check = harness.cross_check(name, module.steppers(quick=True), **settings)
    losses = check["losses"]
    assert abs(losses["buildingai"] - losses["pytorch"]) < harness.LOSS_TOLERANCE


def test_the_cross_check_catches_a_different_model():
    module = real_workloads.WORKLOADS["gpt"]
    steppers = module.steppers(quick=True)
    weight = steppers["buildingai"].model.lm_head.weight
    weight.data = weight.data * 1.5  # the tied head and embedding, changed in BuildingAI only
    with pytest.raises(harness.CrossCheckError, match=r"\[gpt\] first-step loss of buildingai"):
        harness.cross_check("gpt", steppers, **real_workloads.options(module, quick=True))


def test_a_run_of_some_parts_keeps_the_other_parts_of_the_page():
    real = f"{real_report.START}\n## Real training workloads\nold\n{real_report.END}"
    existing = f"# Benchmarks\n\nsynthetic tables\n\n{real}\n"
    new_real = f"{real_report.START}\nnew\n{real_report.END}"
    assert page.compose(None, {real_report.START: new_real}, existing) == (
        f"# Benchmarks\n\nsynthetic tables\n\n{new_real}\n"
    )
    assert page.compose("# Benchmarks\n\nnew tables", {}, existing) == (
        f"# Benchmarks\n\nnew tables\n\n{real}\n"
    )
    scaling_region = f"{scaling.START}\nfigures\n{scaling.END}"
    both = page.compose(None, {scaling.START: scaling_region}, existing)
    assert both.index(real_report.START) < both.index(scaling.START)


def test_the_bend_is_read_from_the_log_log_slopes():
    xs = [1, 4, 16, 64, 256]
    assert scaling.slopes([1, 4], [2.0, 8.0]) == pytest.approx([1.0])
    text = scaling.bend(xs, [1.0, 1.02, 1.1, 3.0, 12.0])
    assert text.startswith("is nearly flat up to 16") and "slope 1.00 by 256" in text
    assert scaling.bend(xs, [1.0, 1.0, 1.01, 1.02, 1.03]).startswith("stays nearly flat")


def test_the_op_profile_shares_the_step_among_ops():
    from benchmarks.real_op_times import op_shares

    found = op_shares("gpt", threads=1, steps=1, quick=True)
    names = [op for op, *_ in found["ops"]]
    assert "matmul" in names or "linear" in names
    shares = [share for *_, share in found["ops"]]
    assert all(0 <= share <= 1 for share in shares) and sum(shares) <= 1.0001
    assert shares == sorted(shares, reverse=True)


@pytest.mark.slow
def test_quick_run_of_the_real_workloads_writes_its_section(tmp_path):
    markdown = tmp_path / "benchmarks.md"
    markdown.write_text("# Benchmarks\n\nthe synthetic suite's page\n")
    code = main(["--quick", "--threads", "1", "--only", "gpt,resnet18,lstm-lm",
                 "--results", str(tmp_path), "--markdown", str(markdown)])  # fmt: skip
    assert code == 0
    (record_file,) = tmp_path.glob("suite-*.json")
    records = json.loads(record_file.read_text())["records"]
    assert [r["workload"] for r in records] == ["gpt", "resnet18", "lstm-lm"]
    for record in records:
        assert {"buildingai", "pytorch"} <= set(record["times"])
        memory = record["peak_rss"]
        assert memory["pytorch"]["torch_loaded"] and not memory["buildingai"]["torch_loaded"]
        assert memory["buildingai"]["peak_mib"] >= memory["buildingai"]["before_mib"] > 0
    text = markdown.read_text()
    assert text.startswith("# Benchmarks\n\nthe synthetic suite's page")
    for heading in ("## Real training workloads", "### Peak resident memory", "### Compile"):
        assert heading in text


@pytest.mark.slow
def test_torch_compile_and_buildingai_compile_train_the_same_gpt():
    steppers, check = real_workloads.checked_implementations(
        real_workloads.WORKLOADS["gpt"], quick=True, torch_compile=True
    )
    assert set(steppers) == {"buildingai", "buildingai compiled", "pytorch", "torch.compile"}
    assert check["left_out"] == {}
    assert steppers["torch.compile"].first_call_s > 0


@pytest.mark.slow
def test_quick_scaling_run_times_both_libraries(tmp_path):
    assert scaling.main(["--quick", "--results", str(tmp_path)]) == 0
    (record_file,) = tmp_path.glob("scaling-*.json")
    rows = json.loads(record_file.read_text())["rows"]
    assert {(r["model"], r["axis"]) for r in rows} == {
        (m, a) for m in ("mlp", "gpt") for a in ("batch", "width")
    }
    assert all(set(r["times"]) == {"buildingai", "pytorch"} for r in rows)


def _record(workload: str, milliseconds: float) -> dict:
    stats = {"median": milliseconds / 1e3, "min": milliseconds / 1e3, "max": milliseconds / 1e3}
    return {
        "workload": workload,
        "case": f"{workload} step",
        "threads": 1,
        "item": "token",
        "items_per_step": 1024,
        "times": {form: stats for form in real_report.FORMS},
        "cross_check": {"losses": {}, "max_parameter_error": {}, "roundoff_entries_skipped": 0},
    }


def test_a_run_of_one_workload_keeps_the_rows_of_the_others(tmp_path):
    markdown = tmp_path / "benchmarks.md"
    first = {"command": "python -m benchmarks", "loaded": "load 0.1"}
    records = real_report.merged([_record("gpt", 10.0), _record("resnet18", 20.0)], first, markdown)
    real_report.save(records, markdown)
    again = {"command": "python -m benchmarks --only resnet18", "loaded": "load 0.2"}
    records = real_report.merged([_record("resnet18", 30.0)], again, markdown)
    assert [(r["workload"], r["times"]["buildingai"]["median"]) for r in records] == [
        ("gpt", 0.01),
        ("resnet18", 0.03),
    ]
    text = real_report.section(records)
    assert "- Command: `python -m benchmarks` (gpt). load 0.1." in text
    assert "- Command: `python -m benchmarks --only resnet18` (resnet18). load 0.2." in text
    assert "gpt step" in text and "resnet18 step" in text
    # a workload that failed its cross-check in this run loses its old rows
    failed = real_report.merged([], again, markdown, failed=["gpt"])
    assert [r["workload"] for r in failed] == ["resnet18"]

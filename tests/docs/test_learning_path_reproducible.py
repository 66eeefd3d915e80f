"""What the learning path says about rerunning its examples holds: with the same seed and
thread count a run repeats bit for bit (the same parameter checksum after every step, in two
processes), and each page states how far results move across thread counts and machines."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_readme import fake_datasets

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted((ROOT / "docs" / "site" / "learning_path").glob("*.md"))


@pytest.mark.parametrize("page", PAGES, ids=lambda path: path.stem)
def test_each_page_says_what_a_rerun_repeats(page):
    text = " ".join(page.read_text(encoding="utf-8").split())
    assert "**Reproducing it.**" in text
    assert "thread count" in text


def test_the_mlp_page_states_the_range_seen():
    text = " ".join((ROOT / "docs/site/learning_path/mlp_mnist.md").read_text().split())
    assert "bit for bit" in text and "0.9838" in text and "0.9852" in text


@pytest.mark.slow
def test_two_runs_with_one_seed_and_thread_count_are_bit_identical(tmp_path):
    fake_datasets(tmp_path / "home")
    env = {**os.environ, "BUILDINGAI_HOME": str(tmp_path / "home")}
    checksums = []
    for run in ("first", "second"):
        env["PYTHONHASHSEED"] = str(len(checksums))  # set and dict orders differ between runs
        result = subprocess.run(
            [sys.executable, "examples/mnist_mlp.py", "epochs=2", "progress=false",
             f"run_dir={tmp_path / run}"],
            cwd=ROOT, env=env, capture_output=True, text=True, timeout=600,
        )  # fmt: skip
        assert result.returncode == 0, result.stderr
        checksums.append((tmp_path / run / "checksums.jsonl").read_text())
    assert checksums[0].count("\n") == 4  # 256 images in batches of 128, two epochs
    assert checksums[0] == checksums[1]

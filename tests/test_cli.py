"""The command line, run as users run it: ``python -m buildingai ...`` in a subprocess."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("yaml")
pytest.importorskip("safetensors")

ROOT = Path(__file__).resolve().parents[1]

TINY = """\
seed: 1
epochs: {epochs}
batch_size: 16
run_dir: {run_dir}
log_every: 2
data:
  train: {{type: Spirals, n: 96, seed: 0}}
  eval: {{type: Spirals, n: 48, seed: 1}}
model: {{type: MLP, in_features: 2, hidden: [16], out_features: 3, dropout: 0.1}}
optim: {{type: Adam, lr: 1e-2}}
checkpoint: {{every_steps: 1, keep_last: null}}
progress: false
"""


def run(*args, check=True, **kwargs):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OPENBLAS_NUM_THREADS": "1"}
    result = subprocess.run([sys.executable, "-m", "buildingai", *args], capture_output=True,
                            text=True, env=env, timeout=120, **kwargs)  # fmt: skip
    if check and result.returncode != 0:
        raise AssertionError(f"exit {result.returncode}\n{result.stdout}\n{result.stderr}")
    return result


def write_config(tmp_path, name, epochs=2):
    path = tmp_path / f"{name}.yaml"
    path.write_text(TINY.format(epochs=epochs, run_dir=tmp_path / name))
    return path


def test_info():
    result = run("info")
    for word in ("buildingai", "numpy", "cpu_count", "blas", "cuda_available"):
        assert word in result.stdout
    report = json.loads(run("info", "--json").stdout)
    assert report["cpu_count"] >= 1 and report["numpy"]
    assert report["intra_op_threads"] == 1 and report["malloc"].startswith("defaults")


def test_train_then_eval(tmp_path):
    config = write_config(tmp_path, "run")
    result = run("train", str(config), "optim.lr=0.02")
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert summary["step"] == 12 and 0 <= summary["eval/accuracy"] <= 1
    checkpoint = tmp_path / "run" / "checkpoints" / "step-00000012.safetensors"
    evaluated = json.loads(run("eval", str(checkpoint)).stdout)
    assert evaluated["eval/accuracy"] == pytest.approx(summary["eval/accuracy"])
    assert evaluated["eval/loss"] == pytest.approx(summary["eval/loss"], rel=1e-6)
    on_train = json.loads(run("eval", str(checkpoint), "--data", "train").stdout)
    assert on_train["step"] == 12 and "eval/accuracy" in on_train


def test_train_reports_config_errors(tmp_path):
    config = write_config(tmp_path, "bad")
    result = run("train", str(config), "optim.lrr=0.1", check=False)
    assert result.returncode == 2
    assert "unknown key 'optim.lrr' — did you mean 'optim.lr'?" in result.stderr


def test_sigkill_then_resume_matches_uninterrupted_run(tmp_path):
    from buildingai import load

    reference = write_config(tmp_path, "reference", epochs=4)
    run("train", str(reference))

    config = write_config(tmp_path, "killed", epochs=4)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OPENBLAS_NUM_THREADS": "1"}
    command = [sys.executable, "-m", "buildingai", "train", str(config)]
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)  # fmt: skip
    folder = tmp_path / "killed" / "checkpoints"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and len(list(folder.glob("step-*"))) < 5:
        time.sleep(0.005)
    process.send_signal(signal.SIGKILL)
    process.wait()
    saved = sorted(folder.glob("step-*"))
    assert saved, "no checkpoint was written before the kill"
    if saved[-1].name == "step-00000024.safetensors":
        pytest.skip("the run finished before it could be killed")
    run("train", str(config), "--resume")
    final = "checkpoints/step-00000024.safetensors"
    expected = load(tmp_path / "reference" / final)["model"]
    resumed = load(tmp_path / "killed" / final)["model"]
    for name, value in expected.items():
        np.testing.assert_array_equal(resumed[name].numpy(), value.numpy())

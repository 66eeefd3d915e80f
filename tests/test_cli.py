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

import buildingai as bai

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
retain_freed_memory: false
"""


def run(*args, check=True, env_changes=None, **kwargs):
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "OPENBLAS_NUM_THREADS": "1",
        **(env_changes or {}),
    }
    result = subprocess.run([sys.executable, "-m", "buildingai", *args], capture_output=True,
                            text=True, env=env, timeout=120, **kwargs)  # fmt: skip
    if check and result.returncode != 0:
        raise AssertionError(f"exit {result.returncode}\n{result.stdout}\n{result.stderr}")
    return result


def write_config(tmp_path, name, epochs=2):
    path = tmp_path / f"{name}.yaml"
    path.write_text(TINY.format(epochs=epochs, run_dir=tmp_path / name))
    return path


@pytest.mark.slow
def test_info():
    result = run("info")
    for word in ("buildingai", "numpy", "cpu_count", "blas", "cuda_available"):
        assert word in result.stdout
    off = {"BUILDINGAI_ACCEL": ""}  # unset (the test run may set it): the default
    report = json.loads(run("info", "--json", env_changes=off).stdout)
    assert report["cpu_count"] >= 1 and report["numpy"]
    # acceleration is off unless asked for: one thread, NumPy's BLAS threads its products
    assert report["intra_op_threads"] == 1
    assert report["one_pool"] is False and report["own_blas"] is False
    report = json.loads(run("info", "--json", env_changes={"BUILDINGAI_ACCEL": "1"}).stdout)
    from buildingai.accel.kernels import compiled
    from buildingai.backend.threads import available_cores

    with bai.accel.enabled(True):
        own = compiled.own_blas_ready()  # one pool on every core where it has its BLAS
    assert report["intra_op_threads"] == (available_cores() if own else 1)
    assert report["one_pool"] is own and report["own_blas"] is own


def test_info_lists_every_registered_kernel_and_its_switch():
    off = {"BUILDINGAI_ACCEL": ""}  # unset (the test run may set it): the default
    report = json.loads(run("info", "--json", env_changes=off).stdout)["accelerations"]
    names = {entry["name"] for entry in bai.accel.status()["kernels"]}
    assert set(report) == names | {"accel", "retain_freed_memory"}
    assert {"compiled.twins", "blas.vector", "optim.packed_updates", "conv2d.direct"} <= names
    assert report["accel"]["active"] is False and "BUILDINGAI_ACCEL" in report["accel"]["switch"]
    assert report["retain_freed_memory"]["active"] is False  # info applies nothing
    assert not any(report[name]["active"] for name in names)
    assert report["optim.packed_updates"]["detail"] == "acceleration off"

    switched_off = {
        "BUILDINGAI_ACCEL": "1",
        "BUILDINGAI_VECTOR_BLAS": "0",
        "BUILDINGAI_PACKED_UPDATES": "off",
        "BUILDINGAI_COMPILED_KERNELS": "no",
    }
    result = run("info", env_changes=switched_off)
    lines = {line.split()[0]: line.split()[1:] for line in result.stdout.splitlines()}
    assert lines["accel"][0] == "on" and lines["optim.fused_updates"][0] == "on"
    for name in ("blas.vector", "optim.packed_updates", "compiled.twins"):
        assert lines[name][:3] == ["off", "switched", "off"]

    result = run("info", env_changes={"BUILDINGAI_PACKED_UPDATES": "maybe"}, check=False)
    assert result.returncode != 0
    assert "BUILDINGAI_PACKED_UPDATES='maybe' is not an on/off value" in result.stderr


@pytest.mark.slow
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
    assert "unknown key 'optim.lrr' for optimizer Adam — did you mean 'optim.lr'?" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr


# (overrides, or the YAML file's text, -> what the one-line error must say)
BAD_CONFIGS = [
    (["grad_clip=0"], "'grad_clip' is 0; it must be null (no clipping) or a finite number > 0"),
    (["grad_clip=-1.5"], "'grad_clip' is -1.5; it must be null (no clipping) or a finite number"),
    (["grad_clip=.inf"], "'grad_clip' is .inf; it must be null (no clipping) or a finite number"),
    (["epochs=-1"], "'epochs' is -1; it must be an integer >= 1"),
    (["max_steps=-5"], "'max_steps' is -5; it must be null or an integer >= 1"),
    (["log_every=0"], "'log_every' is 0; it must be an integer >= 1"),
    (["epochs=ten"], "'epochs' expects an int (default 2), got str 'ten'"),
    (["+lr=[1]"], "'lr' is [1]; it must be null or a finite number >= 0"),
    (["lr=.inf"], "config key 'lr' is .inf; it must be null or a finite number >= 0"),
    (["optim.lr=.nan"], "config key 'optim.lr' is .nan; it must be a finite number >= 0"),
    (
        ["model.hidden=[-5]"],
        "cannot build model MLP from model: MLP: hidden=[-5]; it must be a list of integers >= 1",
    ),
    (["model.dropout=1.5"], "MLP: dropout=1.5; it must be a number in [0, 1)"),
    (["model.hidden=[1000000000000]"], "cannot build model MLP from model: Unable to allocate"),
    (["+newkey=3"], "'+newkey' adds the key 'newkey', but the Trainer has no such setting"),
    (["newkey=3"], "unknown key 'newkey': the Trainer has no such setting"),
    (["data.newkey=3"], "unknown key 'data.newkey': the Trainer has no such setting"),
    (["optim.lr=[1]"], "'optim.lr' expects a float (default 0.01), got list [1]"),
    (["+lr=0.5"], "lr=0.5 and optim.lr=0.01 disagree (lr is shorthand for optim.lr)"),
    (["checkpoint.keep_last=0"], "'checkpoint.keep_last' is 0; it must be null (keep all)"),
    ("", "is empty — help: write the settings to change"),
    ("# only a comment\n", "is empty"),
    ('epochs: "ten"\n', "'epochs' expects an int (default 1), got str 'ten'"),
    ("lr: [1]\n", "'lr' is [1]; it must be null or a finite number >= 0"),
    ("lr: .inf\n", "config key 'lr' is .inf; it must be null or a finite number >= 0"),
    ("model: {type: MLP, hidden: [-5]}\n", "MLP: hidden=[-5]; it must be a list of integers"),
    (
        "epochs: 2\nseed: 1\nepochs: 3\n",
        "the key 'epochs' is written twice in one mapping "
        "(lines 1 and 3); YAML would keep only the second — help: keep one of them",
    ),
    (
        "a: &a [x, x, x, x, x, x, x, x, x]\n"
        + "".join(
            f"{new}: &{new} [{', '.join(['*' + old] * 9)}]\n"
            for old, new in zip("abcdefg", "bcdefgh")
        ),
        "the YAML expands to more than 100000 values through its aliases",
    ),
    ("max_steps: -3\n", "'max_steps' is -3; it must be null or an integer >= 1"),
    ("- 1\n", "must be a mapping of keys to values, got list"),
]


@pytest.mark.parametrize("bad, expected", BAD_CONFIGS)
def test_config_mistakes_are_one_line_with_exit_code_2(tmp_path, capsys, bad, expected):
    from buildingai.cli import main

    if isinstance(bad, list):
        path, overrides = write_config(tmp_path, "run"), bad
    else:
        path, overrides = tmp_path / "bad.yaml", []
        path.write_text(bad)
    assert main(["train", str(path), *overrides]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and len(captured.err.splitlines()) == 1
    assert captured.err.startswith("error: ") and expected in captured.err
    assert not (tmp_path / "run").exists()  # stopped before writing anything


def test_a_diverged_run_prints_strict_json(tmp_path, capsys):
    from buildingai.cli import main

    assert main(["train", str(write_config(tmp_path, "run", epochs=1)), "optim.lr=1e30"]) == 0
    captured = capsys.readouterr()
    summary = json.loads(captured.out.strip().splitlines()[-1], parse_constant=pytest.fail)
    assert summary["eval/loss"] is None  # JSON has no NaN: written null, named on stderr
    assert "warning: eval/loss ended NaN or infinite (written as null)" in captured.err


def test_a_mistake_in_the_command_is_one_line(capsys):
    from buildingai.cli import main

    for argv, expected in [
        (["trian", "x.yaml"], "error: argument command: invalid choice: 'trian'"),
        (["serve", "m.onnx", "--port", "abc"], "error: argument --port: invalid int value"),
        (["train"], "error: the following arguments are required: config"),
    ]:
        with pytest.raises(SystemExit) as exit_:
            main(argv)
        assert exit_.value.code == 2
        error = capsys.readouterr().err
        assert error.startswith(expected) and error.count("\n") == 1, error
        assert "usage:" not in error and "— help: buildingai" in error


def test_a_run_that_fails_at_its_first_step_leaves_the_run_dir_reusable(tmp_path, capsys):
    from buildingai.cli import main

    config = write_config(tmp_path, "run", epochs=1)
    assert main(["train", str(config), "model.in_features=5"]) == 2  # the data has 2 features
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "in_features = 5" in error
    assert not (tmp_path / "run").exists()  # as it found it: no config.yaml, metrics, run.json
    assert main(["train", str(config)]) == 0  # the corrected run is not refused
    assert (tmp_path / "run" / "checkpoints" / "step-00000006.safetensors").exists()


def test_eval_reads_a_checkpoints_config_as_data(tmp_path, capsys):
    from buildingai import load, save
    from buildingai.cli import main

    assert main(["train", str(write_config(tmp_path, "run", epochs=1))]) == 0
    checkpoint = tmp_path / "run" / "checkpoints" / "step-00000006.safetensors"
    state = load(checkpoint)
    state["config"] = str(tmp_path / "run.yaml")  # a YAML file that exists: never opened
    save(state, tmp_path / "forged.safetensors")
    capsys.readouterr()
    assert main(["eval", str(tmp_path / "forged.safetensors")]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "is str '" in error
    assert "not a mapping of settings; a checkpoint's config is data, never a path" in error


def test_missing_or_directory_config_paths(tmp_path, capsys):
    from buildingai.cli import main
    from buildingai.train import ConfigError

    assert main(["train", str(tmp_path / "nope.yaml")]) == 2
    assert capsys.readouterr().err == (
        f"error: config file '{tmp_path / 'nope.yaml'}' does not exist — help: check the path "
        "(examples/configs holds ready-made configs)\n"
    )
    assert main(["train", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "is a directory, not a YAML file" in err
    with pytest.raises(ConfigError, match="is a directory"):  # --debug: the real exception
        main(["train", str(tmp_path), "--debug"])
    with pytest.raises(ConfigError, match="does not exist"):
        main(["--debug", "train", str(tmp_path / "nope.yaml")])


def test_train_never_overwrites_a_run_dir(tmp_path):
    config = write_config(tmp_path, "run", epochs=1)
    run("train", str(config))
    folder = tmp_path / "run"
    before = {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()}

    result = run("train", str(config), "optim.lr=0.5", check=False)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert "already holds files" in result.stderr and "--resume" in result.stderr
    assert f"run_dir={tmp_path / 'run-2'}" in result.stderr
    assert {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()} == before

    run("train", str(config), f"run_dir={tmp_path / 'run-2'}")  # the hint works as written
    resumed = run("train", str(config), "--resume", "epochs=2")  # overrides after --resume
    assert json.loads(resumed.stdout.strip().splitlines()[-1])["step"] == 12
    sessions = json.loads((folder / "run.json").read_text())["sessions"]
    assert [session["step"] for session in sessions] == [0, 6]


@pytest.mark.slow
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

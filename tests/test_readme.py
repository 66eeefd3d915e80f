"""The README and the site's first pages work as a newcomer follows them: the first example runs
and learns its task, and every shell command runs, in the order written, in a fresh directory.

The command tests run each command as written (``python`` and ``buildingai`` are this
interpreter) against tiny stand-ins of the datasets in a private ``$BUILDINGAI_HOME``, so the
trainings are short and nothing is downloaded; ``buildingai serve`` is started, seen ready and
stopped.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
SITE = ROOT / "docs" / "site"
NEWCOMER_PATH = [
    README,
    SITE / "getting_started.md",
    SITE / "learning_path" / "mlp_mnist.md",
    SITE / "learning_path" / "cnn_fashion_mnist.md",
    SITE / "learning_path" / "transformer_rotten_tomatoes.md",
]
NOT_RUN = ("pip ", "python -m pytest", "mkdocs ", "python -m benchmarks")  # installs, suites
SHELL_FENCE = re.compile(r"^```(?:bash|sh|shell)\n(.*?)^```", re.S | re.M)


def test_first_readme_example_trains():
    code = re.search(r"```python\n(.*?)```", README.read_text(), re.S).group(1)
    namespace: dict = {}
    output = io.StringIO()
    with contextlib.redirect_stdout(output):
        exec(compile(code, str(README), "exec"), namespace)
    assert namespace["accuracy"].item() > 0.9, output.getvalue()
    assert "accuracy" in output.getvalue()


def shell_commands(page: Path) -> list[str]:
    """The commands of ``page``'s bash blocks in order, comments removed, installs and the test
    and documentation suites left out."""
    commands = []
    for block in SHELL_FENCE.findall(page.read_text(encoding="utf-8")):
        for line in block.splitlines():
            command = re.sub(r"\s+#.*$", "", line).strip()
            if command and not command.startswith("#") and not command.startswith(NOT_RUN):
                commands.append(command)
    return commands


# ----- a newcomer's directory -----------------------------------------------------------------
def fake_datasets(home: Path) -> None:
    """Tiny caches of MNIST, Fashion-MNIST and Rotten Tomatoes in ``home``, read as the real
    ones are (the cache comes first), so nothing is downloaded."""
    rng = np.random.default_rng(0)
    for folder, counts in (("mnist", {"train": 256, "test": 64}),
                           ("fashion_mnist", {"train": 128, "test": 64})):  # fmt: skip
        for split, count in counts.items():
            path = home / "datasets" / folder / f"{folder}-{split}.npz"
            path.parent.mkdir(parents=True, exist_ok=True)
            labels = rng.integers(0, 10, count)
            images = rng.integers(0, 60, (count, 28, 28)).astype(np.uint8)
            images[np.arange(count), labels * 2 + 4, 4:24] = 255  # a learnable stroke per class
            np.savez(path, images=images, labels=labels.astype(np.int64))
    words = ["great", "awful", "film", "plot", "moving", "dull", "cast", "story"]
    snippets = [" ".join(rng.choice(words, 6)).encode() for _ in range(160)]
    lengths = np.array([len(s) for s in snippets])
    path = home / "datasets" / "rotten_tomatoes" / "rotten_tomatoes.npz"
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez(
        path,
        text=np.frombuffer(b"".join(snippets), np.uint8),
        offsets=np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64),
        labels=np.array([b"great" in s for s in snippets], dtype=np.int64),
        test=np.arange(160) % 5 == 0,
    )


@pytest.fixture
def newcomer(tmp_path):
    """A fresh working directory holding the examples, with the datasets cached."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "examples").symlink_to(ROOT / "examples")
    fake_datasets(tmp_path / "home")
    env = {**os.environ, "BUILDINGAI_HOME": str(tmp_path / "home"), "PYTHONUNBUFFERED": "1"}
    env.pop("BUILDINGAI_DOCS_QUICK", None)
    return work, env


def as_run(command: str) -> list[str]:
    """``command`` as this interpreter runs it: ``python`` and ``buildingai`` are this one."""
    words = shlex.split(command)
    if words[0] == "python":
        return [sys.executable, *words[1:]]
    if words[0] == "buildingai":
        return [sys.executable, "-m", "buildingai", *words[1:]]
    raise AssertionError(f"a command this test does not know how to run: {command}")


def run_command(command: str, work: Path, env: dict) -> str:
    """Run ``command`` in ``work``; a server is started, seen ready and stopped. Returns its
    output, and fails the test with that output if it did not succeed."""
    words = as_run(command)
    if words[3:4] == ["serve"]:
        return serve_until_ready([*words, "--port", "0"], work, env)
    result = subprocess.run(words, cwd=work, env=env, capture_output=True, text=True, timeout=600)
    output = result.stdout + result.stderr
    assert result.returncode == 0, f"`{command}` failed (exit {result.returncode}):\n{output}"
    return output


def serve_until_ready(words: list[str], work: Path, env: dict) -> str:
    server = subprocess.Popen(words, cwd=work, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True)  # fmt: skip
    lines = []
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            line = server.stdout.readline()
            if not line and server.poll() is not None:
                break
            lines.append(line)
            if line.startswith("serving "):
                return "".join(lines)
        raise AssertionError(f"`{shlex.join(words)}` never became ready:\n{''.join(lines)}")
    finally:
        server.terminate()
        server.wait(timeout=30)


def follow(pages: list[Path], work: Path, env: dict) -> dict[str, str]:
    outputs = {}
    for page in pages:
        for command in shell_commands(page):
            outputs[f"{page.name}: {command}"] = run_command(command, work, env)
    return outputs


# ----- the tests --------------------------------------------------------------------------------
def test_the_pages_hold_the_commands_a_newcomer_types():
    readme = shell_commands(README)
    assert readme[0] == "python examples/mnist_mlp.py"
    assert any(command.startswith("buildingai train ") for command in readme)
    assert "python examples/mnist_mlp.py epochs=2 optim.lr=3e-3" in shell_commands(NEWCOMER_PATH[2])
    for page in NEWCOMER_PATH:
        for command in shell_commands(page):
            as_run(command)  # each is one this test can run


@pytest.mark.slow
@pytest.mark.parametrize("page", NEWCOMER_PATH[:2], ids=lambda page: page.stem)
def test_each_entry_page_s_commands_run_in_order_in_a_fresh_directory(newcomer, page):
    """The README and getting started are where people begin: each works on its own. The
    learning path's pages run after them in the next test, as a newcomer reaches them."""
    work, env = newcomer
    follow([page], work, env)


@pytest.mark.slow
def test_the_readme_then_the_site_run_in_one_directory_without_a_collision(newcomer):
    work, env = newcomer
    outputs = follow(NEWCOMER_PATH, work, env)
    reruns = [text for key, text in outputs.items() if "python examples/mnist_mlp.py" in key]
    assert "holds an earlier run, so this one writes runs/mnist_mlp-2" in reruns[1]
    assert sorted(path.name for path in (work / "runs").iterdir() if "mnist_mlp" in path.name)[
        :3
    ] == ["mnist_mlp", "mnist_mlp-2", "mnist_mlp-3"]


def test_an_example_rerun_takes_the_next_run_dir_and_resume_the_newest(tmp_path, capsys):
    sys.path.insert(0, str(ROOT / "examples"))
    try:
        from run_dirs import choose_run_dir
    finally:
        sys.path.remove(str(ROOT / "examples"))
    from buildingai.train import load_config

    base = tmp_path / "runs" / "mnist_mlp"
    config = load_config(ROOT / "examples" / "configs" / "mnist_mlp.yaml", [f"run_dir={base}"])
    choose_run_dir(config, [])
    assert config.run_dir == str(base)  # free: the config's own
    base.mkdir(parents=True)
    (base / "run.json").write_text("{}")
    choose_run_dir(config, [])
    assert config.run_dir == str(base.with_name("mnist_mlp-2"))
    assert "holds an earlier run, so this one writes" in capsys.readouterr().err
    assert (base / "run.json").read_text() == "{}"  # nothing of the earlier run is touched

    base.with_name("mnist_mlp-2").mkdir()
    (base.with_name("mnist_mlp-2") / "run.json").write_text("{}")
    config.run_dir = str(base)
    choose_run_dir(config, [], resume=True)
    assert config.run_dir == str(base.with_name("mnist_mlp-2"))
    named = str(tmp_path / "mine")
    config.run_dir = named
    choose_run_dir(config, [f"run_dir={named}"])
    assert config.run_dir == named  # a run_dir you type is used as given


def test_an_example_into_a_named_run_dir_that_holds_files_is_one_line(tmp_path):
    taken = tmp_path / "taken"
    taken.mkdir()
    (taken / "run.json").write_text("{}")
    result = subprocess.run(
        [sys.executable, "examples/mnist_mlp.py", "epochs=2", "optim.lr=3e-3", f"run_dir={taken}"],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
        env={**os.environ, "BUILDINGAI_HOME": str(tmp_path / "home")},
    )  # fmt: skip
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    assert lines[0].startswith("error: run_dir") and "already holds files" in lines[0]
    assert "help:" in lines[0] and f"{taken}-2" in lines[0]


def test_every_buildingai_command_on_the_site_parses():
    """The guides' commands that need a cluster or a served model are not run here; their
    arguments are still checked against the command's parser."""
    from buildingai.cli import build_parser

    for page in [README, *sorted(SITE.rglob("*.md"))]:
        for command in shell_commands(page):
            words = shlex.split(command)
            if words[0] == "buildingai":
                args, left = build_parser().parse_known_args(words[1:])
                assert args.command, f"{page.name}: `{command}` names no command"
                assert not left or args.command in ("train", "launch"), f"{page.name}: {left}"

"""``buildingai serve MODEL`` as users run it: a subprocess on a free port, stopped with Ctrl-C;
and its mistakes, each one line with exit code 2."""

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from buildingai.cli import main

from .models import run_directly

httpx = pytest.importorskip("httpx")
pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 60


def first_line(stream, timeout: float) -> str:
    """The first line of ``stream``, or '' after ``timeout`` seconds."""
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.append(stream.readline()), daemon=True)
    reader.start()
    reader.join(timeout)
    return lines[0] if lines else ""


@pytest.mark.parametrize("kind", ["checkpoint", "onnx"])
@pytest.mark.slow
def test_buildingai_serve_model(kind, mlp_checkpoint, mlp_onnx):
    path, model = mlp_checkpoint if kind == "checkpoint" else mlp_onnx
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OPENBLAS_NUM_THREADS": "1"}
    command = [sys.executable, "-m", "buildingai", "serve", str(path), "--port", "0",
               "--max-batch", "8"]  # fmt: skip
    server = subprocess.Popen(command, stderr=subprocess.PIPE, text=True, env=env)
    try:
        line = first_line(server.stderr, TIMEOUT)
        assert line.startswith(f"serving {kind} {path} at http://127.0.0.1:"), line
        url = line.split(" at ")[1].split()[0]
        inputs = np.random.default_rng(7).random((2, 784), dtype=np.float32)
        answer = httpx.post(url + "/predict", json={"inputs": inputs.tolist()}, timeout=TIMEOUT)
        assert answer.status_code == 200, answer.text
        np.testing.assert_allclose(np.array(answer.json()["outputs"], np.float32),
                                   run_directly(model, inputs), rtol=1e-5, atol=1e-6)  # fmt: skip
        assert httpx.get(url + "/metadata", timeout=TIMEOUT).json()["batching"]["max_batch"] == 8
        server.send_signal(signal.SIGINT)  # Ctrl-C
        assert server.wait(TIMEOUT) == 0
        assert "Traceback" not in server.stderr.read()
    finally:
        if server.poll() is None:
            server.kill()
            server.wait(TIMEOUT)
        server.stderr.close()


def test_a_missing_extra_is_one_line(monkeypatch, capsys, mlp_checkpoint):
    monkeypatch.setitem(sys.modules, "fastapi", None)  # import fastapi raises ImportError
    assert main(["serve", str(mlp_checkpoint[0])]) == 2
    error = capsys.readouterr().err
    assert error == (
        "error: serving needs the optional packages fastapi and uvicorn (fastapi is missing) "
        "— help: pip install 'buildingai[serve]'\n"
    )


def test_mistakes_are_one_line_with_exit_code_2(capsys, tmp_path, mlp_checkpoint):
    path = str(mlp_checkpoint[0])
    cases = [
        (["serve", str(tmp_path / "none.onnx")], "error: model file"),
        (["serve", path, "--max-batch", "0"], "error: max_batch must be an integer >= 1, got 0"),
        (["serve", path, "--input-shape", "28x28"], "error: --input-shape '28x28' is not"),
        (["serve", path, "--input-shape", "5"], "does not run on an input of shape (1, 5)"),
        (
            ["serve", path, "--port", "99999"],
            "error: --port 99999 is not a TCP port; it must be "
            "0 to 65535 — help: 0 picks a free port",
        ),
        (["serve", path, "--port", "-1"], "error: --port -1 is not a TCP port"),
        (["serve", path, "--max-samples", "0"], "error: max_samples must be an integer >= 1"),
        (
            ["serve", path, "--body-timeout-s", "0"],
            "error: body_timeout_s must be a number of seconds > 0, got 0.0",
        ),
        (["serve", path, "--max-latency-ms", "inf"], "error: max_latency_ms must be a finite"),
    ]
    for argv, expected in cases:
        assert main(argv) == 2, argv
        error = capsys.readouterr().err
        assert expected in error and error.count("\n") == 1, error
    with pytest.raises(Exception, match="max_batch"):
        main(["serve", path, "--max-batch", "0", "--debug"])


def test_a_port_in_use_is_one_line(capsys, mlp_checkpoint):
    from buildingai.serve.server import bind

    taken = bind("127.0.0.1", 0)
    try:
        port = taken.getsockname()[1]
        assert main(["serve", str(mlp_checkpoint[0]), "--port", str(port)]) == 2
        assert f"error: cannot listen on 127.0.0.1:{port}" in capsys.readouterr().err
    finally:
        taken.close()


def test_importing_buildingai_does_not_import_the_web_stack():
    code = (
        "import sys, buildingai, buildingai.serve, buildingai.cli\n"
        "print(sorted(m for m in ('fastapi', 'uvicorn', 'starlette') if m in sys.modules))"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            env=env, timeout=TIMEOUT)  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"

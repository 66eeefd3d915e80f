"""``git_info`` reads commit, branch and uncommitted changes, and says plainly when there is no
repository."""

import shutil
import subprocess

import pytest

from buildingai.utils import git_info

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def git(repo, *arguments):
    subprocess.run(["git", "-C", str(repo), *arguments], check=True, capture_output=True)


@pytest.fixture
def repo(tmp_path):
    git(tmp_path, "init", "-q", "-b", "trunk")
    git(tmp_path, "config", "user.email", "a@b.c")
    git(tmp_path, "config", "user.name", "A")
    (tmp_path / "train.py").write_text("print(1)\n")
    git(tmp_path, "add", "train.py")
    git(tmp_path, "commit", "-q", "-m", "first")
    return tmp_path


def test_a_clean_checkout(repo):
    info = git_info(repo)
    head = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True,
                          text=True, check=True).stdout.strip()  # fmt: skip
    assert info["commit"] == head and info["branch"] == "trunk"
    assert info["dirty"] is False and info["diff_hash"] is None
    assert git_info(repo / "train.py")["commit"] == head  # a file inside the repository


def test_uncommitted_changes_set_dirty_and_hash_the_diff(repo):
    (repo / "train.py").write_text("print(2)\n")
    first = git_info(repo)
    assert first["dirty"] is True and len(first["diff_hash"]) == 64
    assert git_info(repo)["diff_hash"] == first["diff_hash"]  # same code, same hash
    (repo / "train.py").write_text("print(3)\n")
    assert git_info(repo)["diff_hash"] != first["diff_hash"]


def test_an_untracked_file_makes_the_tree_dirty(repo):
    (repo / "notes.txt").write_text("x")
    assert git_info(repo)["dirty"] is True


def test_a_detached_head_has_no_branch(repo):
    git(repo, "checkout", "-q", "--detach")
    info = git_info(repo)
    assert info["branch"] is None and info["commit"]


def test_outside_a_repository_it_says_so(tmp_path):
    info = git_info(tmp_path)
    assert info["commit"] is None
    assert info["error"] == f"not a git repository: {tmp_path.resolve()}"

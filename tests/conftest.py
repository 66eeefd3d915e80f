"""Fixtures shared across test packages.

``BUILDINGAI_TEST_WITHOUT=numba,scipy_openblas64,mkl`` runs the suite as on an install without
those packages (a NumPy-only install, without the ``fast`` extra): importing them fails, as it
would there. CI runs the op table and the kernel tests this way too.
"""

import importlib.abc
import os
import sys

import pytest


class _Absent(importlib.abc.MetaPathFinder):
    """Makes the listed top-level packages (and their submodules) fail to import."""

    def __init__(self, names: list[str]) -> None:
        self.names = set(names)

    def find_spec(self, fullname, path=None, target=None):
        if fullname.partition(".")[0] in self.names:
            raise ModuleNotFoundError(f"No module named {fullname!r} (BUILDINGAI_TEST_WITHOUT)")
        return None


_WITHOUT = [name for name in os.environ.get("BUILDINGAI_TEST_WITHOUT", "").split(",") if name]
if _WITHOUT:
    assert not any(name in sys.modules for name in _WITHOUT), "already imported"
    sys.meta_path.insert(0, _Absent(_WITHOUT))

import buildingai as bai  # noqa: E402 - after the finder above
from buildingai.accel.kernels import compiled  # noqa: E402
from buildingai.backend import threads  # noqa: E402


@pytest.fixture
def three_threads(monkeypatch):
    """Split work on 3 threads whatever its size: the split threshold is lowered to zero, and
    a BLAS call just before does not keep the work on the calling thread."""
    monkeypatch.setattr(threads, "MIN_PARALLEL_WORK", 0)
    monkeypatch.setattr(threads, "BLAS_SPIN_SECONDS", 0.0)
    bai.set_num_threads(3)
    yield
    bai.set_num_threads(None)


@pytest.fixture
def numpy_kernels():
    """Run the NumPy kernels only: compiled twins (``ops/kernels/compiled``) switched off."""
    previous = compiled.set_enabled(False)
    yield
    compiled.set_enabled(previous)


@pytest.fixture
def accel_on():
    """Run the block with every registered acceleration on (``buildingai.accel.enable()``),
    then restore the setting: kernel tests compare the accelerated path against the record."""
    with bai.accel.enabled(True):
        yield


@pytest.fixture
def accel_off():
    """Run the block on the op records' reference path only."""
    with bai.accel.enabled(False):
        yield


@pytest.fixture(autouse=True)
def _acceleration_restored():
    """A test that turns acceleration on or off (directly, or through a Trainer's config) leaves
    the next test the setting it found: the switch is process-wide."""
    before = bai.accel.is_enabled()
    yield
    if bai.accel.is_enabled() != before:
        if before:
            bai.accel.enable(quiet=True)
        else:
            bai.accel.disable()

"""Fixtures shared across test packages."""

import pytest

import buildingai as bai
from buildingai.accel.kernels import compiled
from buildingai.backend import threads


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

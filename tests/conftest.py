"""Fixtures shared across test packages."""

import pytest

import buildingai as bai
from buildingai.backend import threads


@pytest.fixture
def three_threads(monkeypatch):
    """Split work on 3 threads whatever its size: the split threshold is lowered to zero."""
    monkeypatch.setattr(threads, "MIN_PARALLEL_WORK", 0)
    bai.set_num_threads(3)
    yield
    bai.set_num_threads(None)

"""Twins run here whatever the size of their arrays: the tests compare small ones too."""

import pytest

from buildingai.accel.kernels import compiled

DEFAULT_MIN_WORK = compiled.MIN_WORK  # read before any test lowers it


@pytest.fixture(autouse=True)
def twins_for_any_size(monkeypatch):
    monkeypatch.setattr(compiled, "MIN_WORK", 0)


@pytest.fixture
def twin_calls(monkeypatch):
    """With ``MIN_WORK`` back at its default, the ``(kernel name, twin ran)`` of every
    ``compiled.run`` call the test makes, in order."""
    monkeypatch.setattr(compiled, "MIN_WORK", DEFAULT_MIN_WORK)
    calls = []
    real_run = compiled.run

    def spy(kernel, arrays, keywords=None, work=None):
        taken = real_run(kernel, arrays, keywords, work)
        calls.append((getattr(kernel, "func", kernel).__name__, taken))
        return taken

    monkeypatch.setattr(compiled, "run", spy)
    return calls

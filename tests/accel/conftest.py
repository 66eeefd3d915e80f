"""Fixtures shared by the accelerated-kernel tests."""

from __future__ import annotations

import pytest

from buildingai.accel import convolution, registry
from buildingai.accel.kernels import compiled


@pytest.fixture
def kernels_run(monkeypatch, accel_on):
    """Acceleration on; the compiled twins and direct convolutions take every call they can;
    yields the set of kernel names that computed a call."""
    monkeypatch.setattr(convolution, "DIRECT_MIN_THREADS", 1)
    monkeypatch.setattr(convolution, "DIRECT_WEIGHT_GRAD_MIN_POSITIONS", 0)
    monkeypatch.setattr(convolution, "DIRECT_WEIGHT_GRAD_MOST_CHANNELS_AVX2", 1 << 30)
    monkeypatch.setattr(compiled, "MIN_WORK", 0)
    ran = set()
    for entry in registry.registered():
        if entry.run is None:
            continue

        def spy(*args, _run=entry.run, _name=entry.name, **kwargs):
            result = _run(*args, **kwargs)
            if result is not NotImplemented:
                ran.add(_name)
            return result

        monkeypatch.setattr(entry, "run", spy)
    return ran


@pytest.fixture
def small_products_routed(monkeypatch, accel_on):
    """Acceleration on, and matmul.routed and linear.routed take products of any size (their
    size test and ``min_size`` both at zero)."""
    from buildingai.accel import products

    monkeypatch.setattr(products, "BLAS_THREADED_MULTIPLY_ADDS", 0)
    names = ("matmul.routed", "linear.routed")
    for name in names:
        monkeypatch.setattr(registry.kernel(name), "min_size", 0)
        registry.set_enabled(name, True)  # refreshes the op's bound
    yield
    monkeypatch.undo()
    for name in names:
        registry.set_enabled(name, True)

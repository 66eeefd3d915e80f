"""The resize and activation benchmark runs every case at a tiny size with its cross-check
against PyTorch (no timing assertions)."""

import numpy as np

from benchmarks import resize_and_activations as benchmark


def test_quick_mode_checks_and_times_every_case():
    names = [*benchmark.RESIZE, *benchmark.ACTIVATIONS]
    records = [benchmark.bench(name, 1, quick=True) for name in names]
    for name, record in zip(names, records):
        assert record["case"].startswith(name)
        assert record["buildingai"]["median"] > 0 and record["pytorch"]["median"] > 0
        assert np.isfinite(record["ratio"])
        assert record["forward_vs_torch"] <= 1e-3 and record["grad_vs_torch"] <= 1e-3
    assert "numpy_ratio" in records[0]  # nearest 2x has its NumPy version


def test_numpy_version_is_nearest_upsampling_and_its_gradient():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 2, 3, 4)).astype(np.float32)
    g = rng.standard_normal((1, 2, 6, 8)).astype(np.float32)
    out, dx = benchmark._nearest_2x_lower_bound(x, g)
    ours = benchmark.BF.interpolate(benchmark.bai.tensor(x), scale_factor=2)
    np.testing.assert_array_equal(out, ours.numpy())
    assert dx.shape == x.shape and np.isclose(dx.sum(), g.sum(), rtol=1e-5)

"""The activation benchmark's NumPy lower bounds compute what BuildingAI computes (its quick run
is in test_case_table.py)."""

import numpy as np

import buildingai as bai
from benchmarks import activations as benchmark


def test_numpy_lower_bound_gelu_is_the_same_function(accel_on, numpy_kernels):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(64).astype(np.float32)
    g = rng.standard_normal(64).astype(np.float32)
    out, dx = np.empty_like(x), np.empty_like(x)
    benchmark._np_gelu(x, g, out, dx)
    expected = bai.nn.functional.gelu(bai.tensor(x)).numpy()
    np.testing.assert_allclose(out, expected, rtol=0, atol=0)  # the NumPy kernel, bit for bit

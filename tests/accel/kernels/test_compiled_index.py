"""The compiled twin of ``accel/embedding.py`` against its NumPy kernel."""

from __future__ import annotations

import numpy as np
import pytest

from buildingai.accel import embedding
from buildingai.accel.kernels import compiled

CASES = {"embedding_rows"}


@pytest.mark.parametrize("rows, table, width", [(1024, 65, 128), (64, 64, 128), (300, 5000, 64)])
def test_embedding_rows_twin_matches_the_numpy_kernel(rows, table, width, accel_on):
    twin = compiled.twin_of(embedding._embedding_rows)
    if twin is None:
        pytest.skip("numba is not available")
    rng = np.random.default_rng(0)
    indices = rng.integers(0, table, rows).astype(np.int64)
    values = rng.standard_normal((rows, width)).astype(np.float32)
    expected = np.empty((table, width), np.float32)
    embedding._embedding_rows(np, indices, values, expected)
    got = np.full((table, width), np.nan, np.float32)
    twin(indices, values, got)
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-6)

"""The compiled twins of ``accel/embedding.py`` and ``accel/kernels/column_blocks.py`` against
their NumPy kernels."""

from __future__ import annotations

import numpy as np
import pytest

from buildingai.accel import embedding
from buildingai.accel.kernels import column_blocks, compiled
from tests.helpers import results_at_thread_counts

CASES = {"embedding_rows", "add_columns"}


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


@pytest.mark.parametrize(
    "shape, start, width, strided",
    [
        ((16, 64, 384), 128, 128, False),
        ((16, 64, 384), 256, 128, True),
        ((3, 100, 77), 3, 41, False),
    ],
)
def test_add_columns_twin_matches_the_numpy_kernel(shape, start, width, strided, accel_on):
    """Bit for bit (one addition per element), at one and two threads, the columns outside
    the block untouched; a gradient read through its strides (one of q, k and v in one
    buffer, as the attention's backward gives them)."""
    if compiled.twin_of(column_blocks.add_columns) is None:
        pytest.skip("numba is not available")
    rng = np.random.default_rng(1)
    total = rng.standard_normal(shape).astype(np.float32)
    total[0, 0, start] = np.nan
    if strided:
        grad = rng.standard_normal((shape[0], 3, shape[1], width)).astype(np.float32)[:, 1]
        assert not grad.flags.c_contiguous
    else:
        grad = rng.standard_normal((*shape[:2], width)).astype(np.float32)
    expected = total.copy()
    column_blocks.add_columns(np, expected, grad, start=start)

    def twin():
        got = total.copy()
        assert compiled.run(column_blocks.add_columns, [got, grad], {"start": start})
        return got

    for got in results_at_thread_counts(twin):
        np.testing.assert_array_equal(got, expected)

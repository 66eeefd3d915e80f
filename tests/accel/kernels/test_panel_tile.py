"""The recurrent layers' small product on packed panels (``compiled/panel_tile.py``) against its
NumPy reference ``a @ joined(panels)`` in float64: every count of rows left over after whole
tiles, inner lengths across the sum blocks, operands inside larger arrays, inf and NaN, two
threads at once, its float32 error against PyTorch's, and when the time loops take it."""

from __future__ import annotations

import numpy as np
import pytest

from buildingai.accel import recurrence
from buildingai.accel.kernels import lstm_steps as steps
from tests.accel.test_float32_accuracy import assert_within_pytorchs

pytest.importorskip("numba")

from buildingai.accel.kernels.compiled import panel_tile  # noqa: E402
from buildingai.accel.kernels.compiled.panel_tile import PANEL, ROWS, VECTORS  # noqa: E402
from buildingai.accel.kernels.compiled.tile_ir import LANES  # noqa: E402


def _panels(matrix):
    """``matrix`` (k, n) packed as the time loops pack it: (n / PANEL, k, PANEL)."""
    inner, columns = matrix.shape
    blocks = matrix.reshape(inner, columns // PANEL, PANEL).transpose(1, 0, 2)
    return np.ascontiguousarray(blocks)


def _product(a, panels, out):
    """``panel_product`` of the 2-D views ``a`` and ``out`` (rows may be spaced wider than
    they are long)."""
    assert a.strides[1] == out.strides[1] == 4
    panel_tile.panel_product(a.shape[0], a.ctypes.data, a.strides[0] // 4, panels,
                             out.ctypes.data, out.strides[0] // 4)  # fmt: skip


def _operands(rng, rows, inner, parts):
    a = rng.standard_normal((rows, inner)).astype(np.float32)
    b = rng.standard_normal((inner, parts * PANEL)).astype(np.float32)
    return a, b


@pytest.mark.parametrize("rows", [1, 2, 3, 4, 5, 6, 9, 12, 20, 64])
@pytest.mark.parametrize("inner", [1, 7, 256, 257, 600])
def test_matches_the_float64_product(rows, inner):
    """Every leftover row count after whole tiles of ROWS, and inner lengths on both sides of
    a sum block."""
    a, b = _operands(np.random.default_rng(rows * 1000 + inner), rows, inner, parts=3)
    out = np.full((rows, 3 * PANEL), np.nan, np.float32)
    _product(a, _panels(b), out)
    exact = a.astype(np.float64) @ b.astype(np.float64)
    scale = np.sqrt(inner) * np.abs(a).max() * np.abs(b).max()
    np.testing.assert_allclose(out, exact, rtol=0, atol=4e-7 * scale)
    np.testing.assert_array_equal(steps.joined(_panels(b)), b)  # the NumPy reference's join


def test_reads_and_writes_rows_inside_larger_arrays():
    """a and c as column ranges of wider arrays (the time loops' h_{t-1} inside [h, c]): only
    c's own columns change."""
    rng = np.random.default_rng(1)
    a_whole = rng.standard_normal((13, 70)).astype(np.float32)
    a = a_whole[:, 3:43]
    b = rng.standard_normal((40, 2 * PANEL)).astype(np.float32)
    out_whole = np.full((13, 2 * PANEL + 9), -7.0, np.float32)
    out = out_whole[:, 4 : 4 + 2 * PANEL]
    _product(a, _panels(b), out)
    exact = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(out, exact, rtol=0, atol=1e-4)
    assert (out_whole[:, :4] == -7).all() and (out_whole[:, 4 + 2 * PANEL :] == -7).all()


def test_inf_and_nan_reach_exactly_their_row_and_column():
    rng = np.random.default_rng(2)
    a, b = _operands(rng, 11, 30, parts=2)
    a[7, 4] = np.nan
    b[9, 2 * PANEL - 1] = np.inf
    a[:, 9] = np.abs(a[:, 9])  # every product with the inf is +inf
    out = np.empty((11, 2 * PANEL), np.float32)
    _product(a, _panels(b), out)
    expected = np.zeros(out.shape, bool)
    expected[7] = True
    assert (np.isnan(out) == expected).all()
    infinite = np.isinf(out)
    assert infinite[:, 2 * PANEL - 1][np.arange(11) != 7].all() and infinite.sum() == 10


def test_two_products_at_once_on_two_threads():
    """The product holds no state: two Python threads at once, on the same panels."""
    from concurrent.futures import ThreadPoolExecutor

    rng = np.random.default_rng(3)
    a, b = _operands(rng, 20, 256, parts=8)
    panels = _panels(b)
    expected = np.empty((20, 8 * PANEL), np.float32)
    _product(a, panels, expected)

    def one(_):
        out = np.empty_like(expected)
        for _ in range(20):
            _product(a, panels, out)
        return out

    with ThreadPoolExecutor(2) as pool:
        for result in pool.map(one, range(4)):
            assert np.array_equal(result, expected)


def test_the_tile_fits_the_registers():
    """Accumulators, the panel vectors a step loads and the broadcast fit AVX2's 16 registers
    (AVX-512 has 32)."""
    used = ROWS * VECTORS + VECTORS + 1
    assert used <= (16 if LANES == 8 else 32)


@pytest.mark.parametrize("inner, columns", [(256, 1024), (1024, 256)])
def test_float32_error_within_pytorchs(inner, columns):
    """The LSTM language model's recurrent products (20 rows, width 256: h @ w_hh^T forward, d
    pre @ w_hh back) against float64, within ``BOUND`` times PyTorch's float32 ``mm``."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(4)
    a = rng.standard_normal((20, inner))
    b = rng.standard_normal((inner, columns)) / np.sqrt(inner)
    exact = a @ b
    theirs = torch.mm(torch.tensor(a, dtype=torch.float32), torch.tensor(b, dtype=torch.float32))
    ours = np.empty((20, columns), np.float32)
    _product(a.astype(np.float32), _panels(b.astype(np.float32)), ours)
    assert_within_pytorchs(f"panel product (20, {inner}) @ ({inner}, {columns})", ours,
                           theirs.numpy(), exact)  # fmt: skip


def test_which_products_the_time_loops_pack_into_panels():
    """Panels for at most ``PANEL_ROWS`` rows where PANEL divides the columns; else BLAS
    blocks, which join back to the same matrix."""
    matrix = np.arange(24 * 4 * PANEL, dtype=np.float32).reshape(24, 4 * PANEL)
    assert recurrence._column_blocks(matrix, 20).shape == (4, 24, PANEL)
    assert recurrence._column_blocks(matrix, recurrence.PANEL_ROWS).shape[2] == PANEL
    wide = recurrence._column_blocks(matrix, recurrence.PANEL_ROWS + 1)
    assert wide.shape[2] != PANEL
    odd = recurrence._column_blocks(matrix[:, : 3 * PANEL + 8], 20)
    assert odd.shape[2] != PANEL
    for blocks, columns in ((wide, 4 * PANEL), (odd, 3 * PANEL + 8)):
        np.testing.assert_array_equal(steps.joined(blocks), matrix[:, :columns])

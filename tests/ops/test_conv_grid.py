"""The flat-grid im2col of stride-1 convolutions against the gathered im2col it replaces."""

import numpy as np
import pytest

from buildingai.ops import conv, conv_grid

# (input shape, kernel, padding, dilation)
CASES = [
    ((2, 3, 5, 6), (3, 3), (1, 1), (1, 1)),
    ((2, 3, 5, 6), (3, 2), (0, 0), (2, 1)),
    ((1, 2, 4, 4), (1, 1), (2, 1), (1, 1)),
    ((3, 1, 6, 5), (2, 3), (1, 2), (1, 2)),
]


def _grid_and_out(shape, kernel, padding, dilation):
    out_hw = conv._output_hw(shape[2:], kernel, (1, 1), padding, dilation)
    grid = conv_grid.grid_for(
        shape[0], shape[2:], kernel, out_hw, (1, 1), padding, dilation, max_waste=float("inf")
    )
    return grid, out_hw


@pytest.mark.parametrize("shape, kernel, padding, dilation", CASES, ids=str)
def test_grid_columns_hold_every_window(shape, kernel, padding, dilation):
    x = np.random.default_rng(0).standard_normal(shape)
    grid, out_hw = _grid_and_out(shape, kernel, padding, dilation)
    cols = conv_grid.grid_columns(np, x, grid, groups=1)[0]  # (C * kh * kw, grid.length)
    gathered = conv._im2col(np, x, kernel, out_hw, (1, 1), padding, dilation, groups=1)[0]
    real = conv_grid.from_grid(np, cols, grid, out_hw)  # (N, C * kh * kw, Ho, Wo)
    expected = gathered.reshape(-1, shape[0], *out_hw).transpose(1, 0, 2, 3)
    np.testing.assert_array_equal(real, expected)


@pytest.mark.parametrize("shape, kernel, padding, dilation", CASES, ids=str)
def test_grid_col2im_is_the_adjoint_of_grid_columns(shape, kernel, padding, dilation):
    rng = np.random.default_rng(1)
    x = rng.standard_normal(shape)
    grid, out_hw = _grid_and_out(shape, kernel, padding, dilation)
    cols = conv_grid.grid_columns(np, x, grid, groups=1)[0]
    # A gradient that lives on output positions only, as the backward's always does.
    grad = rng.standard_normal((shape[0], cols.shape[0], *out_hw))
    on_grid = conv_grid.to_grid(np, grad, grid)[:, grid.lead : grid.lead + grid.length]
    back = conv_grid.grid_col2im(np, on_grid.reshape(shape[1], *kernel, -1), grid)
    assert back.shape == shape
    assert np.isclose(np.sum(cols * on_grid), np.sum(x * back))


def test_the_grid_is_taken_where_it_pays():
    assert conv_grid.grid_for(2, (8, 8), (3, 3), (4, 4), (2, 2), (1, 1), (1, 1)) is None  # strided
    # 28x28 with padding 1: 29 * 29 slots for 28 * 28 outputs; without padding, 26 * 26 for 24 * 24.
    assert conv_grid.grid_for(2, (28, 28), (3, 3), (28, 28), (1, 1), (1, 1), (1, 1)) is not None
    assert conv_grid.grid_for(2, (26, 26), (3, 3), (24, 24), (1, 1), (0, 0), (1, 1)) is None

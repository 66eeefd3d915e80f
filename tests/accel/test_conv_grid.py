"""col2im on the flat grid of stride-1 convolutions (``accel/kernels/conv_grid.py``) against the
record's strided col2im."""

import numpy as np
import pytest

from buildingai.accel.kernels import conv_grid
from buildingai.ops import conv

# (input shape, kernel, padding, dilation)
CASES = [
    ((2, 3, 5, 6), (3, 3), (1, 1), (1, 1)),
    ((2, 3, 5, 6), (3, 2), (0, 0), (2, 1)),
    ((1, 2, 4, 4), (1, 1), (2, 1), (1, 1)),  # the output is larger than the image
    ((3, 1, 6, 5), (2, 3), (1, 2), (1, 2)),
]


@pytest.mark.parametrize("shape, kernel, padding, dilation", CASES, ids=str)
def test_grid_col2im_matches_the_strided_col2im(shape, kernel, padding, dilation):
    n, c, h, w = shape
    out_hw = conv.output_hw((h, w), kernel, (1, 1), padding, dilation)
    grid = conv_grid.grid_for(
        n, (h, w), kernel, out_hw, (1, 1), padding, dilation, max_waste=float("inf")
    )
    cols = np.random.default_rng(0).standard_normal((c, *kernel, n, *out_hw))
    expected = conv.col2im(np, cols, (h, w), (1, 1), padding, dilation)
    # The same columns on the grid: (C * kh * kw) images of the output size, zero elsewhere.
    images = cols.reshape(-1, n, *out_hw).transpose(1, 0, 2, 3)
    on_grid = grid.positions(conv_grid.to_grid(np, images, grid))
    got = conv_grid.grid_col2im(np, on_grid.reshape(c, *kernel, grid.length), grid)
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)


def test_the_grid_is_taken_where_it_pays():
    assert conv_grid.grid_for(2, (8, 8), (3, 3), (4, 4), (2, 2), (1, 1), (1, 1)) is None  # strided
    assert conv_grid.grid_for(2, (28, 28), (3, 3), (28, 28), (1, 1), (1, 1), (1, 1)) is not None
    assert conv_grid.grid_for(2, (12, 12), (3, 3), (10, 10), (1, 1), (0, 0), (1, 1)) is not None
    assert conv_grid.grid_for(2, (4, 4), (3, 3), (2, 2), (1, 1), (0, 0), (1, 1)) is None  # 4 slots

"""The flat-grid layout for stride-1 convolutions: im2col and col2im as contiguous slices.

im2col for a general convolution gathers every window through a strided view: a copy whose
innermost runs are one output row long (28 values for a 28x28 image). For stride 1 there is a
cheaper arrangement. Lay the images of a batch one after another in one flat row per channel,
each image row followed by ``sep_w`` zero columns and each image by ``sep_h`` zero rows::

    channel c:  [lead zeros | img0 row0 . row1 . ... rowH-1 . (sep_h zero rows) | img1 ... ]
                                        ^ sep_w zeros after every row

In that flat row, moving the window by one kernel offset (i, j) is moving by the constant
``i*dh*row + j*dw``, so the im2col row of offset (i, j) is one *contiguous* slice of the flat
image, and col2im is one contiguous add per offset. The zero separators play the part of the
padding on both sides at once (the right padding of one row is the left padding of the next),
so with ``sep >= padding`` a window never reaches another image's pixels where the output is
valid.

The GEMM then runs over every grid position, ``L = N * (H + sep_h) * (W + sep_w)`` columns, of
which ``N * Ho * Wo`` are real outputs: about 7% more multiply-adds for a 28x28 image with
padding 1. For Conv2d(32->64, 3x3, padding 1) on (64, 32, 28, 28) at 2 threads (retained
memory), the column copy went from 12.9 ms to about 7 ms and col2im from 16 ms to about 5 ms.
Where the grid holds many slots that are not outputs (small images, no padding), the gathered
im2col is kept (``MAX_WASTE``).
"""

from __future__ import annotations

from dataclasses import dataclass

# The grid computes an output for every slot, N * (H + sep_h) * (W + sep_w) of them; beyond this
# share of needless outputs the gathered im2col is as fast. Forward + backward at 2 threads:
# 28x28 padding 1 (1.07) 80 -> 77 ms, 14x14 padding 1 (1.15) 25 -> 21 ms, 26x26 padding 0
# (1.17) 61-65 ms either way; a single input channel (1.17) gathered 0.5 ms faster.
MAX_WASTE = 1.16


@dataclass(frozen=True)
class Grid:
    """Where each pixel of an (N, C, H, W) batch sits in the flat layout.

    ``lead``: zeros before the first pixel; ``row``: distance between image rows; ``plane``:
    distance between images; ``length``: grid positions (GEMM columns), ``N * plane``;
    ``start``: flat index read by kernel offset (0, 0) for grid position 0; ``size``: length of
    the flat buffer, enough for every offset of every grid position.
    """

    batch: int
    image_hw: tuple
    out_hw: tuple
    sep: tuple
    kernel: tuple
    dilation: tuple
    padding: tuple

    @property
    def row(self) -> int:
        return self.image_hw[1] + self.sep[1]

    @property
    def plane(self) -> int:
        return (self.image_hw[0] + self.sep[0]) * self.row

    @property
    def length(self) -> int:
        return self.batch * self.plane

    @property
    def lead(self) -> int:
        return self.sep[0] * self.row + self.sep[1]

    @property
    def start(self) -> int:
        return self.lead - self.padding[0] * self.row - self.padding[1]

    def offset(self, i: int, j: int) -> int:
        """Flat distance of kernel offset (i, j) from offset (0, 0)."""
        return i * self.dilation[0] * self.row + j * self.dilation[1]

    @property
    def size(self) -> int:
        last = self.offset(self.kernel[0] - 1, self.kernel[1] - 1)
        return max(self.lead + self.length, self.start + last + self.length)


def grid_for(
    batch, image_hw, kernel, out_hw, stride, padding, dilation, max_waste=None
) -> Grid | None:
    """The flat grid of a stride-1 convolution, or None where the gathered im2col is used:
    strided convolutions, and grids with more than ``max_waste`` (default ``MAX_WASTE``) slots
    per output. A separator of ``sep`` zeros serves as padding on both sides, and every output
    position must fit in its image's slot: sep >= padding and H + sep >= Ho."""
    if tuple(stride) != (1, 1):
        return None
    sep = tuple(max(padding[a], out_hw[a] - image_hw[a], 0) for a in range(2))
    slot = (image_hw[0] + sep[0]) * (image_hw[1] + sep[1])
    if slot > (MAX_WASTE if max_waste is None else max_waste) * out_hw[0] * out_hw[1]:
        return None
    return Grid(
        batch, tuple(image_hw), tuple(out_hw), sep, tuple(kernel), tuple(dilation), tuple(padding)
    )


def to_grid(xp, images, grid: Grid):
    """images (N, C, h, w), h <= H + sep_h and w <= W + sep_w, -> (C, grid.size) with the
    images at the grid's pixel positions and zeros everywhere else."""
    channels = images.shape[1]
    flat = xp.zeros((channels, grid.size), dtype=images.dtype)
    slots = flat[:, grid.lead : grid.lead + grid.length].reshape(
        channels, grid.batch, grid.image_hw[0] + grid.sep[0], grid.row
    )
    slots[:, :, : images.shape[2], : images.shape[3]] = images.transpose(1, 0, 2, 3)
    return flat


def from_grid(xp, rows, grid: Grid, hw: tuple, first: int = 0):
    """The (N, C, h, w) images in ``rows`` (C, >= first + grid.length) whose grid position 0
    is column ``first``: the inverse of ``to_grid``, as one contiguous copy."""
    channels = rows.shape[0]
    slots = rows[:, first : first + grid.length].reshape(
        channels, grid.batch, grid.image_hw[0] + grid.sep[0], grid.row
    )
    return xp.ascontiguousarray(slots[:, :, : hw[0], : hw[1]].transpose(1, 0, 2, 3))


def grid_columns(xp, x, grid: Grid, groups: int):
    """im2col in the grid: x (N, C, H, W) -> (groups, C/groups * kh * kw, grid.length), one
    contiguous slice copy per kernel offset."""
    channels = x.shape[1]
    flat = to_grid(xp, x, grid)
    kh, kw = grid.kernel
    cols = xp.empty((channels, kh, kw, grid.length), dtype=x.dtype)
    for i in range(kh):
        for j in range(kw):
            begin = grid.start + grid.offset(i, j)
            cols[:, i, j] = flat[:, begin : begin + grid.length]
    return cols.reshape(groups, channels // groups * kh * kw, grid.length)


def grid_col2im(xp, cols, grid: Grid):
    """The adjoint of ``grid_columns``: cols (C, kh, kw, grid.length) -> (N, C, H, W), one
    contiguous add per kernel offset. Columns of grid positions that are not outputs must be
    zero (they are when the output gradient was put on the grid by ``to_grid``)."""
    channels, kh, kw = cols.shape[:3]
    flat = xp.zeros((channels, grid.size), dtype=cols.dtype)
    for i in range(kh):
        for j in range(kw):
            begin = grid.start + grid.offset(i, j)
            flat[:, begin : begin + grid.length] += cols[:, i, j]
    return from_grid(xp, flat, grid, grid.image_hw, first=grid.lead)

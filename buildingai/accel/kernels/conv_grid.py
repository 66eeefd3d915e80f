"""col2im of stride-1 convolutions on a flat grid: one contiguous add per kernel offset.

The input gradient of a convolution multiplies the output gradient by the weight into columns
(C * kh * kw, positions) and adds each column back where its window read (col2im). Done on the
(N, C, H, W) image, each of the kh * kw adds is strided, and NumPy runs one short inner loop
per output row. For stride 1 there is a cheaper arrangement. Lay the images of a batch one
after another in one flat row per channel, each image row followed by ``sep_w`` zero columns
and each image by ``sep_h`` zero rows::

    channel c:  [lead zeros | img0 row0 . row1 . ... rowH-1 . (sep_h zero rows) | img1 ... ]
                                        ^ sep_w zeros after every row

In that flat row, moving the window by one kernel offset (i, j) is moving by the constant
``i*dh*row + j*dw``, so the column of offset (i, j) adds into one *contiguous* slice. The zero
separators play the part of the padding on both sides at once (the right padding of one row is
the left padding of the next), so with ``sep >= padding`` a window never reaches another
image's pixels.

The output gradient is put on the same grid, zero where no output is, so the GEMM runs over
every slot, ``L = N * (H + sep_h) * (W + sep_w)`` columns for ``N * Ho * Wo`` outputs: 7% more
multiply-adds for a 28x28 image with padding 1, 17% for 26x26 without, which the contiguous adds
repay (figures: docs/design_notes/performance.md). The forward and the weight gradient keep the
gathered im2col: there the grid's extra multiply-adds cost as much as its cheaper copy saves.
``accel/convolution.py`` registers it for ``conv2d_input_grad``.
"""

from __future__ import annotations

from dataclasses import dataclass

# Slots per output beyond which the grid's extra multiply-adds outweigh its contiguous adds.
MAX_WASTE = 1.5


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

    def positions(self, flat):
        """The grid positions of a flat buffer (C, size): a (C, length) view."""
        return flat[:, self.lead : self.lead + self.length]

    def slots(self, flat):
        """The grid positions of a flat buffer as images: a (C, N, H + sep_h, W + sep_w) view."""
        rows = self.image_hw[0] + self.sep[0]
        return self.positions(flat).reshape(flat.shape[0], self.batch, rows, self.row)


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
    flat = xp.zeros((images.shape[1], grid.size), dtype=images.dtype)
    grid.slots(flat)[:, :, : images.shape[2], : images.shape[3]] = images.transpose(1, 0, 2, 3)
    return flat


def grid_col2im(xp, cols, grid: Grid):
    """col2im on the grid: cols (C, kh, kw, grid.length) -> (N, C, H, W), one contiguous add
    per kernel offset. Columns of grid slots that are not outputs must be zero (they are when
    the output gradient was put on the grid by ``to_grid``)."""
    channels, kh, kw = cols.shape[:3]
    flat = xp.zeros((channels, grid.size), dtype=cols.dtype)
    for i in range(kh):
        for j in range(kw):
            begin = grid.start + grid.offset(i, j)
            flat[:, begin : begin + grid.length] += cols[:, i, j]
    image = grid.slots(flat)[:, :, : grid.image_hw[0], : grid.image_hw[1]]
    return xp.ascontiguousarray(image.transpose(1, 0, 2, 3))

"""``affine_grid`` and ``grid_sample``, as PyTorch's: make a grid of sampling points from a batch
of affine matrices, and read an image (N, C, H, W) or a volume (N, C, D, H, W) at a grid's points.

Both are composed from differentiable ops: the grid is a batched matrix product of a base grid
with theta; sampling unnormalises the grid into pixel coordinates, applies the padding rule,
gathers the neighbouring pixels (one, 2 ** k or 16) and sums them with their interpolation
weights. Gradients to the input, the grid and theta, and second derivatives, come from the chain
rule, with PyTorch's conventions where a coordinate sits on a border (no gradient there).
"""

from __future__ import annotations

import itertools
import math
import warnings
from collections.abc import Sequence

from ...autograd.dispatch import apply
from ...autograd.tensor import Tensor
from ...errors import ArgumentError, DTypeError, ShapeError
from ...functions.creation import arange, linspace, ones
from ...functions.elementwise import where
from ...functions.shape import stack
from ...ops.sort import GATHER_ELEMENTS

__all__ = ["affine_grid", "grid_sample"]

_MODES = ("bilinear", "nearest", "bicubic")
_PADDING_MODES = ("zeros", "border", "reflection")
_CUBIC_A = -0.75  # the cubic convolution constant PyTorch uses (as in bicubic interpolate)


def _align_corners(align_corners: bool | None, stacklevel: int = 3) -> bool:
    """``align_corners`` with None read as False and PyTorch's warning about that default."""
    if align_corners is None:
        warnings.warn(
            "Default grid_sample and affine_grid behavior has changed to align_corners=False "
            "since 1.3.0. Please specify align_corners=True if the old behavior is desired. See "
            "the documentation of grid_sample for details.",
            UserWarning,
            stacklevel=stacklevel,
        )
        return False
    return bool(align_corners)


# ----- affine_grid -------------------------------------------------------------------------------


def _steps_from_minus_one(steps: int, align_corners: bool, theta: Tensor) -> Tensor:
    """The normalised coordinates of ``steps`` pixels along one axis: (steps,) in [-1, 1] at
    the corner pixels' centres (``align_corners``) or their outer edges; (1,) zero for one pixel."""
    if steps <= 1:
        return linspace(0, 0, 1, dtype=theta.dtype, device=theta.device)
    coordinates = linspace(-1, 1, steps, dtype=theta.dtype, device=theta.device)
    if not align_corners:
        coordinates = coordinates * (steps - 1) / steps
    return coordinates


def affine_grid(theta: Tensor, size: Sequence[int], align_corners: bool | None = None) -> Tensor:
    """The sampling grid of a batch of affine transforms, as ``torch.nn.functional.affine_grid``.

    theta: (N, 2, 3), size: (N, C, H, W) -> grid (N, H, W, 2), or theta: (N, 3, 4), size:
    (N, C, D, H, W) -> grid (N, D, H, W, 3). Each output point is theta @ (x, y, 1) (or
    (x, y, z, 1)) with x, y, z the point's normalised coordinates in [-1, 1]; ``grid[..., 0]``
    is x (along W). ``align_corners`` as in ``grid_sample``; None means False, with PyTorch's
    warning. The gradient reaches theta.
    """
    align_corners = _align_corners(align_corners)
    if theta.dtype.kind != "f":
        raise ArgumentError(
            f"[affine_grid] expects a floating-point theta, got dtype {theta.dtype}",
            help="convert theta with .float() (or .double())",
        )
    size = tuple(size)
    if len(size) not in (4, 5):
        raise ShapeError(
            f"[affine_grid] size {size} has {len(size)} entries; only 4-D sizes (N, C, H, W) "
            "for 2-D transforms and 5-D sizes (N, C, D, H, W) for 3-D transforms are supported",
            help="pass the size of the image to sample, e.g. x.size() for x (N, C, H, W)",
        )
    spatial_rank = len(size) - 2
    matrix_shape = (spatial_rank, spatial_rank + 1)
    if theta.ndim != 3 or tuple(theta.shape[1:]) != matrix_shape:
        raise ShapeError(
            f"[affine_grid] expects a batch of {spatial_rank}-D affine matrices of shape "
            f"(N, {matrix_shape[0]}, {matrix_shape[1]}) for size {size}, got theta of shape "
            f"{tuple(theta.shape)}",
            help=f"reshape theta with theta.view(-1, {matrix_shape[0]}, {matrix_shape[1]})",
        )
    spatial = size[2:]
    if align_corners and min(spatial) == 1:
        warnings.warn(
            "Since version 1.3.0, affine_grid behavior has changed for unit-size grids when "
            "align_corners=True. This is not an issue for standard usage, but please specify "
            "align_corners=False if the old behavior is desired.",
            UserWarning,
            stacklevel=2,
        )
    elif min(size) <= 0:
        raise ShapeError(
            f"[affine_grid] expects a positive output size, got size {size}",
            help="every entry of size (N, C, *spatial) must be at least 1",
        )
    if theta.shape[0] != size[0]:
        raise ShapeError(
            f"[affine_grid] theta holds {theta.shape[0]} matrices (shape {tuple(theta.shape)}) "
            f"but size {size} asks for a batch of {size[0]}",
            help="pass one matrix per batch element: size[0] == theta.shape[0]",
        )
    # per spatial axis, its coordinates shaped to broadcast over the grid (*spatial)
    axes = []
    for position, steps in enumerate(spatial):
        shape = [1] * spatial_rank
        shape[position] = -1
        axes.append(_steps_from_minus_one(steps, align_corners, theta).reshape(shape))
    # the homogeneous coordinates (x, y[, z], 1) of every output point: (*spatial, k + 1)
    columns = [axis.expand(*spatial) for axis in reversed(axes)]
    columns.append(ones(*spatial, dtype=theta.dtype, device=theta.device))
    points = math.prod(spatial)
    base_grid = stack(columns, -1).reshape(1, points, spatial_rank + 1)
    grid = base_grid @ theta.transpose(1, 2)  # (N, points, k)
    return grid.reshape(size[0], *spatial, spatial_rank)


# ----- grid_sample: coordinates --------------------------------------------------------------


def _unnormalize(coordinate: Tensor, size: int, align_corners: bool) -> Tensor:
    """Grid coordinates in [-1, 1] -> pixel coordinates: -1 and 1 are the corner pixels'
    centres (``align_corners``) or their outer edges."""
    if align_corners:
        return (coordinate + 1) * ((size - 1) / 2)
    return (coordinate + 1) * (size / 2) - 0.5


def _clip(coordinate: Tensor, size: int) -> Tensor:
    """Clamp to [0, size - 1]; a coordinate on or past a border gets no gradient, as in
    PyTorch."""
    inside = (coordinate > 0) & (coordinate < size - 1)
    return where(inside, coordinate, coordinate.detach().clamp(0, size - 1))


def _reflect(coordinate: Tensor, size: int, align_corners: bool) -> Tensor:
    """Fold a coordinate back into [low, low + span] by mirroring at both ends, with low, span
    0, size - 1 (``align_corners``) or -0.5, size (the pixels' outer edges); the gradient changes
    sign with every mirror."""
    if align_corners:
        if size <= 1:
            return coordinate * 0  # one pixel: every coordinate reflects onto it
        low, twice_span = 0.0, 2.0 * (size - 1)
    else:
        low, twice_span = -0.5, 2.0 * size
    distance = (coordinate - low).abs()
    periods = (distance.detach() / twice_span).floor()
    extra = distance - periods * twice_span
    mirrored = twice_span - extra
    return where(extra > mirrored, mirrored, extra) + low


def _pad(coordinate: Tensor, size: int, padding_mode: str, align_corners: bool) -> Tensor:
    """Apply the padding rule to a pixel coordinate: 'zeros' leaves it (outside pixels read 0),
    'border' clamps it, 'reflection' mirrors it at the borders, then clamps."""
    if padding_mode == "border":
        return _clip(coordinate, size)
    if padding_mode == "reflection":
        return _clip(_reflect(coordinate, size, align_corners), size)
    return coordinate


def _linear_taps(coordinate: Tensor) -> list:
    """The two pixels either side of a coordinate with their linear weights: [(position,
    weight)] with positions floor(c), floor(c) + 1 and weights 1 - frac, frac."""
    below = coordinate.detach().floor()
    fraction = coordinate - below
    return [(below, 1 - fraction), (below + 1, fraction)]


def _nearest_taps(coordinate: Tensor) -> list:
    """The pixel nearest a coordinate (halves round to even, as PyTorch)."""
    nearest = coordinate.round()
    # a weight of 1 written through the rounded coordinate: the grid gets a zero gradient
    return [(nearest.detach(), nearest * 0 + 1)]


def _cubic_taps(coordinate: Tensor, size: int, padding_mode: str, align_corners: bool) -> list:
    """The four pixels floor(c) - 1 .. floor(c) + 2 around a coordinate with their cubic
    convolution weights (A = -0.75); the padding rule applies to each pixel's position."""
    below = coordinate.detach().floor()
    t = coordinate - below
    a = _CUBIC_A
    near = [t, 1 - t]  # distances to the inner two pixels, at most 1
    far = [t + 1, 2 - t]  # distances to the outer two, between 1 and 2
    near_weights = [((a + 2) * x - (a + 3)) * x * x + 1 for x in near]
    far_weights = [((a * x - 5 * a) * x + 8 * a) * x - 4 * a for x in far]
    weights = [far_weights[0], near_weights[0], near_weights[1], far_weights[1]]
    positions = [
        _pad(below + offset, size, padding_mode, align_corners) for offset in (-1, 0, 1, 2)
    ]
    return list(zip(positions, weights))


# ----- grid_sample: reading and weighting ------------------------------------------------------


def _sample(input: Tensor, taps_per_axis: list) -> Tensor:  # noqa: A002 - PyTorch's name
    """Sum, over every choice of one tap per spatial axis, of the product of the taps' weights
    times the input there; a pixel outside the input reads 0.

    input: (N, C, *spatial); taps_per_axis: per spatial axis, a list of (position (N, P),
    weight (N, P)) -> (N, C, P).
    """
    batch, channels, *spatial = input.shape
    strides = [math.prod(spatial[axis + 1 :]) for axis in range(len(spatial))]
    # per axis and tap: (flat offset, inside the input, weight)
    offsets_per_axis = []
    for taps, size, stride in zip(taps_per_axis, spatial, strides):
        offsets = []
        for position, weight in taps:
            inside = (position >= 0) & (position <= size - 1)
            offset = position.clamp(0, size - 1).long() * stride
            offsets.append((offset, inside, weight))
        offsets_per_axis.append(offsets)
    indices, weights = [], []
    for combination in itertools.product(*offsets_per_axis):
        index, inside, weight = combination[0]
        for offset, inside_axis, weight_axis in combination[1:]:
            index = index + offset
            inside = inside & inside_axis
            weight = weight * weight_axis
        indices.append(index)
        weights.append(weight * inside.to(weight.dtype))
    taps, points = len(indices), indices[0].shape[1]
    # flat positions in input.reshape(-1): one gather of every tap of every channel
    pixels = math.prod(spatial)
    planes = arange(batch * channels, device=input.device).reshape(batch, channels, 1) * pixels
    index = stack(indices, 1).reshape(batch, 1, taps * points) + planes  # (N, C, taps * P)
    values = apply(GATHER_ELEMENTS, input.reshape(-1), index.reshape(-1), axis=0)
    values = values.reshape(batch, channels, taps, points)
    weight = stack(weights, 1).reshape(batch, 1, taps, points)
    return (values * weight).sum(2)


def _check_sample_arguments(input: Tensor, grid: Tensor, mode: str, padding_mode: str) -> None:  # noqa: A002
    if mode not in _MODES:
        raise ArgumentError(
            f"[grid_sample] expected mode to be 'bilinear', 'nearest' or 'bicubic', got {mode!r}",
            help="pass mode='bilinear' (the default), 'nearest' or 'bicubic'",
        )
    if padding_mode not in _PADDING_MODES:
        raise ArgumentError(
            f"[grid_sample] expected padding_mode to be 'zeros', 'border' or 'reflection', got "
            f"{padding_mode!r}",
            help="pass padding_mode='zeros' (the default), 'border' or 'reflection'",
        )
    if input.ndim not in (4, 5) or grid.ndim != input.ndim:
        raise ShapeError(
            f"[grid_sample] expected a 4-D or 5-D input and a grid with the same number of "
            f"dimensions, got input {tuple(input.shape)} and grid {tuple(grid.shape)}",
            help="input (N, C, H, W) takes grid (N, H_out, W_out, 2); input (N, C, D, H, W) "
            "takes grid (N, D_out, H_out, W_out, 3)",
        )
    spatial_rank = input.ndim - 2
    if grid.shape[0] != input.shape[0]:
        raise ShapeError(
            f"[grid_sample] the grid's batch size {grid.shape[0]} differs from the input's "
            f"{input.shape[0]} (input {tuple(input.shape)}, grid {tuple(grid.shape)})",
            help="pass one grid per input: grid.shape[0] == input.shape[0]",
        )
    if grid.shape[-1] != spatial_rank:
        raise ShapeError(
            f"[grid_sample] a {input.ndim}-D input needs a grid with {spatial_rank} coordinates "
            f"in its last dimension, got grid {tuple(grid.shape)}",
            help=f"the last dimension holds the (x, y{', z' if spatial_rank == 3 else ''}) "
            "coordinates of each sampling point",
        )
    for axis in range(2, input.ndim):
        if input.shape[axis] == 0:
            raise ShapeError(
                f"[grid_sample] expected an input with non-empty spatial dimensions, got input "
                f"{tuple(input.shape)} with dimension {axis} empty",
                help="sample from an image with at least one pixel",
            )
    if mode == "bicubic" and input.ndim != 4:
        raise ArgumentError(
            f"[grid_sample] bicubic interpolation only supports 4-D input, got input "
            f"{tuple(input.shape)}",
            help="use mode='bilinear' (trilinear) or 'nearest' for a volume (N, C, D, H, W)",
        )
    if input.dtype.kind != "f" or grid.dtype != input.dtype:
        raise DTypeError(
            f"[grid_sample] expected input and grid of the same floating dtype, got input "
            f"{input.dtype} and grid {grid.dtype}",
            help="convert both with .float() (or .double())",
        )


def grid_sample(
    input: Tensor,  # noqa: A002 - PyTorch's name
    grid: Tensor,
    mode: str = "bilinear",
    padding_mode: str = "zeros",
    align_corners: bool | None = None,
) -> Tensor:
    """Read ``input`` at the points of ``grid``, as ``torch.nn.functional.grid_sample``.

    input: (N, C, H_in, W_in), grid: (N, H_out, W_out, 2) -> (N, C, H_out, W_out); or input:
    (N, C, D_in, H_in, W_in), grid: (N, D_out, H_out, W_out, 3) -> (N, C, D_out, H_out, W_out).
    ``grid[..., 0]`` is x (along W), ``grid[..., 1]`` y (along H), ``grid[..., 2]`` z (along D),
    each normalised so that -1 and 1 are the corner pixels' centres (``align_corners=True``) or
    their outer edges (False; None means False, with PyTorch's warning).

    ``mode``: 'bilinear' (trilinear for volumes), 'nearest' (halves round to even) or 'bicubic'
    (4-D only). ``padding_mode`` says what points outside the input read: 'zeros', 'border'
    (the nearest border pixel) or 'reflection' (mirrored at the borders). Gradients reach the
    input and the grid ('nearest' gives the grid a zero gradient).
    """
    _check_sample_arguments(input, grid, mode, padding_mode)
    align_corners = _align_corners(align_corners)
    batch, channels, *spatial = input.shape
    spatial_rank = len(spatial)
    out_spatial = tuple(grid.shape[1:-1])
    points = math.prod(out_spatial)
    flat_grid = grid.reshape(batch, points, spatial_rank)
    taps_per_axis = []
    for axis, size in enumerate(spatial):
        # the grid lists coordinates x first: the last input axis first
        coordinate = _unnormalize(flat_grid[:, :, spatial_rank - 1 - axis], size, align_corners)
        if mode == "bicubic":
            taps_per_axis.append(_cubic_taps(coordinate, size, padding_mode, align_corners))
            continue
        coordinate = _pad(coordinate, size, padding_mode, align_corners)
        if mode == "nearest":
            taps_per_axis.append(_nearest_taps(coordinate))
        else:
            taps_per_axis.append(_linear_taps(coordinate))
    return _sample(input, taps_per_axis).reshape(batch, channels, *out_spatial)

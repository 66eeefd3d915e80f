"""``interpolate``: resample (N, C, *spatial) tensors to a size or by a scale factor, with
PyTorch's modes, arguments and coordinate rules (``upsample`` is its older name)."""

from __future__ import annotations

import math
from collections.abc import Sequence

from ...autograd.dispatch import apply
from ...autograd.tensor import Tensor
from ...errors import BuildingAIError, ShapeError
from ...ops.abstract import SymbolicSizeError
from ...ops.resize import INTERPOLATE

# mode -> (the record's mode, the input rank it needs or None for any of 3, 4, 5)
_MODES = {
    "nearest": ("nearest", None),
    "nearest-exact": ("nearest-exact", None),
    "area": ("area", None),
    "linear": ("linear", 3),
    "bilinear": ("linear", 4),
    "bicubic": ("cubic", 4),
    "trilinear": ("linear", 5),
}
_INTERPOLATING = ("linear", "bilinear", "bicubic", "trilinear")


def _per_axis(value, count: int, name: str, cast) -> tuple:
    """One value per spatial axis from a number or a sequence of ``count`` numbers."""
    if isinstance(value, Sequence):
        if len(value) != count:
            raise ShapeError(
                f"[interpolate] {name}={tuple(value)} has {len(value)} entries but the input has "
                f"{count} spatial dimensions",
                help=f"pass one {name} per spatial dimension, or a single number for all",
            )
        return tuple(cast(v) for v in value)
    return (cast(value),) * count


def _as_size(value) -> int:
    # ints pass as they are: while freezing, a size can be an int that carries its expression
    return value if isinstance(value, int) and not isinstance(value, bool) else int(value)


def _scaled_size(size: int, factor: float) -> int:
    """floor(size * factor). While freezing, a symbolic size (an int subclass carrying its
    expression) stays symbolic for whole factors; other factors have no such expression."""
    if type(size) is int:
        return math.floor(size * factor)
    if factor.is_integer():
        return size * int(factor)
    raise SymbolicSizeError(
        f"[interpolate] scale_factor={factor} on a symbolic spatial size: floor(size * "
        f"{factor}) cannot be kept as an expression of the input's size",
        help="fix the spatial dimensions in the input signature, pass size=..., or use a whole "
        "scale factor (2, 3...)",
    )


def interpolate(
    input: Tensor,  # noqa: A002 - PyTorch's name
    size: int | Sequence[int] | None = None,
    scale_factor: float | Sequence[float] | None = None,
    mode: str = "nearest",
    align_corners: bool | None = None,
    recompute_scale_factor: bool | None = None,
    antialias: bool = False,
) -> Tensor:
    """Resample ``input`` (N, C, L), (N, C, H, W) or (N, C, D, H, W) along its spatial axes to
    ``size`` or to floor(in * ``scale_factor``), as ``torch.nn.functional.interpolate``.

    Modes: ``nearest`` (PyTorch's floor rule), ``nearest-exact`` (pixel centres), ``linear``
    (3-D), ``bilinear`` / ``bicubic`` (4-D), ``trilinear`` (5-D) and ``area`` (adaptive average
    pooling). ``align_corners`` maps corner pixels onto corner pixels (interpolating modes
    only). A given ``scale_factor`` also sets the coordinate rule (1 / scale_factor input pixels
    per output pixel) unless ``recompute_scale_factor=True``, which uses in / out instead.
    Integer images keep their dtype in the nearest modes; the weighted modes return the default
    float dtype (PyTorch rounds bilinear uint8 results back to uint8).
    """
    if mode not in _MODES:
        raise BuildingAIError(
            f"[interpolate] unknown mode {mode!r}",
            help=f"use one of {', '.join(repr(m) for m in _MODES)}",
        )
    record_mode, rank = _MODES[mode]
    if input.ndim not in (3, 4, 5) or (rank is not None and input.ndim != rank):
        wanted = f"a {rank}-D input" if rank else "a 3-D, 4-D or 5-D input"
        raise ShapeError(
            f"[interpolate] mode {mode!r} needs {wanted} (N, C, *spatial), got shape "
            f"{tuple(input.shape)}",
            help="linear takes (N, C, L), bilinear and bicubic (N, C, H, W), trilinear "
            "(N, C, D, H, W); nearest, nearest-exact and area take any of these",
        )
    if align_corners is not None and mode not in _INTERPOLATING:
        raise BuildingAIError(
            f"[interpolate] align_corners can only be set with the interpolating modes "
            f"(linear, bilinear, bicubic, trilinear), not {mode!r}",
            help="leave align_corners=None for nearest, nearest-exact and area",
        )
    if antialias:
        raise BuildingAIError(
            "[interpolate] antialias=True is not supported",
            help="downsample with mode='area' (an average over each output pixel's footprint) "
            "instead, or leave antialias=False",
        )
    if (size is None) == (scale_factor is None):
        raise BuildingAIError(
            "[interpolate] pass exactly one of size and scale_factor",
            help="size=(H, W) sets the output size; scale_factor=2.0 multiplies the input size",
        )
    spatial = tuple(input.shape[2:])
    scales = None
    if size is not None:
        if recompute_scale_factor:
            raise BuildingAIError(
                "[interpolate] recompute_scale_factor applies only with scale_factor, not size",
                help="drop recompute_scale_factor, or pass scale_factor instead of size",
            )
        out_sizes = _per_axis(size, len(spatial), "size", _as_size)
    else:
        factors = _per_axis(scale_factor, len(spatial), "scale_factor", float)
        out_sizes = tuple(_scaled_size(n, f) for n, f in zip(spatial, factors))
        # PyTorch's area mode always recomputes; the others keep the factors for the mapping
        if not recompute_scale_factor and mode != "area":
            scales = factors
    # area is adaptive pooling, which PyTorch allows to an empty output; the others need pixels
    if any(m < 0 or (m == 0 and mode != "area") for m in out_sizes):
        raise ShapeError(
            f"[interpolate] output size {out_sizes} of input {tuple(input.shape)} must be "
            "positive in every spatial dimension",
            help="pass a larger size or scale_factor",
        )
    return apply(
        INTERPOLATE,
        input,
        size=out_sizes,
        mode=record_mode,
        align_corners=bool(align_corners),
        scales=scales,
    )


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):  # noqa: A002
    """PyTorch's older name for ``interpolate``: input (N, C, *spatial), one to three spatial
    axes -> (N, C, *out), out = ``size`` or floor(spatial * ``scale_factor``)."""
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input, size=None, scale_factor=None):  # noqa: A002
    """PyTorch's older ``interpolate(input, size, scale_factor, mode="nearest")``: input
    (N, C, *spatial), one to three spatial axes -> (N, C, *out), out = ``size`` or
    floor(spatial * ``scale_factor``)."""
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None):  # noqa: A002
    """PyTorch's older ``interpolate(..., mode="bilinear", align_corners=True)``: x (N, C, H, W)."""
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


__all__ = ["interpolate", "upsample", "upsample_bilinear", "upsample_nearest"]

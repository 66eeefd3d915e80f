"""Cases of the resize records: ``interpolate`` over every mode (3-D, 4-D and 5-D inputs, sizes
and scale factors, up and down) and its transpose ``interpolate_grad``."""

from __future__ import annotations

import buildingai.nn.functional as F

from .base import NO_ONNX_MAPPING, TF, Draw, Sample, backward_of, case

# (PyTorch mode, spatial rank, align_corners): the draws take them in turn
_FORMS = (
    ("nearest", 2, None),
    ("bilinear", 2, False),
    ("bicubic", 2, True),
    ("area", 2, None),
    ("linear", 1, True),
    ("nearest-exact", 1, None),
    ("trilinear", 3, False),
    ("bicubic", 2, False),
)
_TORCH_MODE = {("linear", 1): "linear", ("linear", 2): "bilinear", ("linear", 3): "trilinear"}


def _call(d: Draw, grad: bool = False):
    """x and the interpolate keyword arguments of this draw."""
    mode, rank, align_corners = d.variant(_FORMS)
    x = d.floats("n", d.size(1, 3), *(d.size(2, 5) for _ in range(rank)), grad=grad)
    kwargs = {"mode": mode}
    if align_corners is not None:
        kwargs["align_corners"] = align_corners
    if d.choice((True, False)):
        kwargs["size"] = tuple(d.size(1, 7) for _ in range(rank))
    else:  # factors whose sizes avoid out == in and out == 2 * in, where PyTorch's own
        # nearest gradient disagrees with its forward on 1-D and 3-D inputs
        kwargs["scale_factor"] = d.choice((1.5, 0.7, 2.5))
    return x, kwargs


def _interpolate(d: Draw) -> Sample:
    x, kwargs = _call(d)
    return d.capture("interpolate", lambda: F.interpolate(x, **kwargs))


def _torch_interpolate(x, *, size, mode, align_corners, scales):
    """PyTorch's call for the record's attributes."""
    rank = x.ndim - 2
    torch_mode = {"cubic": "bicubic", "linear": _TORCH_MODE.get(("linear", rank))}.get(mode, mode)
    interpolating = torch_mode in ("linear", "bilinear", "bicubic", "trilinear")
    corners = align_corners if interpolating else None
    if scales is not None:
        return TF.interpolate(x, scale_factor=list(scales), mode=torch_mode, align_corners=corners)
    return TF.interpolate(x, size=list(size), mode=torch_mode, align_corners=corners)


case("interpolate", _interpolate, torch=_torch_interpolate, gradgrad=True)


def _interpolate_grad(d: Draw) -> Sample:
    x, kwargs = _call(d, grad=True)
    return d.capture(
        "interpolate_grad",
        lambda: backward_of(lambda t: F.interpolate(t, **kwargs), x),
        symbols={(0, 0): "n"},
    )


case("interpolate_grad", _interpolate_grad, gradcheck=True, gradgrad=True, onnx=NO_ONNX_MAPPING)

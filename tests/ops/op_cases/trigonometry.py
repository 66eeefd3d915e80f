"""Cases of the trigonometric and hyperbolic ops (``buildingai/ops/trigonometry.py``): each on
the part of its domain where it is defined and smooth."""

from __future__ import annotations

import buildingai as bai

from .base import Draw, Sample, case, torch, trailing_sizes
from .elementwise import _mixed, _operand_pair, unary

unary("tan", lambda x: x.tan(), low=-1.2, high=1.2, torch=torch.tan, gradgrad=True)
unary("asin", lambda x: x.asin(), low=-0.9, high=0.9, torch=torch.asin, gradgrad=True)
unary("acos", lambda x: x.acos(), low=-0.9, high=0.9, torch=torch.acos, gradgrad=True)
unary("atan", lambda x: x.atan(), low=-3.0, high=3.0, torch=torch.atan, gradgrad=True)
unary("sinh", lambda x: x.sinh(), torch=torch.sinh, gradgrad=True)
unary("cosh", lambda x: x.cosh(), torch=torch.cosh, gradgrad=True)
unary("asinh", lambda x: x.asinh(), low=-3.0, high=3.0, torch=torch.asinh, gradgrad=True)
unary("atanh", lambda x: x.atanh(), low=-0.9, high=0.9, torch=torch.atanh, gradgrad=True)


def _acosh(d: Draw) -> Sample:
    x = d.floats("n", *trailing_sizes(d), low=0.1, high=3.0)
    # shifted after the draw: the values it puts in place of those near a kink (0.3) must
    # also land above 1, where acosh is defined
    x.array[...] += 1.0
    return d.capture("acosh", lambda: x.acosh())


case("acosh", _acosh, torch=torch.acosh, gradgrad=True)


def _atan2(d: Draw) -> Sample:
    """y and x broadcast against each other (same shape, size-1 axes or fewer axes), in every
    quadrant; mixed dtypes and Python scalars among them in the dtype draws."""
    y, x = _operand_pair(d)
    if d.mixed:
        y, x = _mixed(d, y, x)
    return d.capture("atan2", lambda: bai.atan2(y, x))


case("atan2", _atan2, torch=torch.atan2, gradgrad=True)

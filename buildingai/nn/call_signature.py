"""The shapes of a model's most recent call, kept so that tools can draw that call later.

A module called on its own (not from inside another module) notes its arguments with every
Tensor replaced by a ``TensorShape``: a few small tuples per call, never the batch itself.
``buildingai.vis.plot_computation_graph(model.forward)`` replays such a call on stand-in values.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from ..autograd.tensor import Tensor
from ..backend.device import CPU, Device, device_of

_KEPT_AS_THEY_ARE = (bool, int, float, complex, str, bytes, type(None), np.dtype)


class TensorShape(NamedTuple):
    """What is kept of a Tensor argument: shape, dtype and device."""

    shape: tuple
    dtype: np.dtype
    device: Device


class NotKept(NamedTuple):
    """An argument that is neither a Tensor nor a plain value (a NumPy array, an object): it
    is not kept, so the call cannot be replayed without it."""

    type_name: str


class CallSignature(NamedTuple):
    """``args`` and ``kwargs`` of one call, Tensors as ``TensorShape``."""

    args: tuple
    kwargs: dict


# A NamedTuple's own constructor is a Python function; every top-level module call notes its
# signature, so the tuples are made directly.
_new_tuple = tuple.__new__


def _kept(value: Any):
    if isinstance(value, Tensor):
        data = value.array
        device = CPU if type(data) is np.ndarray else device_of(data)  # (the commonest first)
        return _new_tuple(TensorShape, (data.shape, data.dtype, device))
    if isinstance(value, _KEPT_AS_THEY_ARE):
        return value
    if type(value) in (tuple, list):
        return type(value)(_kept(item) for item in value)
    if type(value) is dict:
        return {key: _kept(item) for key, item in value.items()}
    return NotKept(type(value).__name__)


def call_signature(args: tuple, kwargs: dict) -> CallSignature:
    """The signature of a call ``module(*args, **kwargs)``."""
    if kwargs:
        kept_kwargs = {key: _kept(value) for key, value in kwargs.items()}
    elif len(args) == 1:  # the commonest call, model(x): no comprehension's frame
        return _new_tuple(CallSignature, ((_kept(args[0]),), {}))
    else:
        kept_kwargs = {}
    return _new_tuple(CallSignature, (tuple([_kept(value) for value in args]), kept_kwargs))


def last_call_signature(module) -> CallSignature | None:
    """The signature of ``module``'s most recent call on its own, or None if it has had none."""
    return module.__dict__.get(_ATTRIBUTE)


def set_last_call_signature(module, signature: CallSignature | None) -> None:
    """Note ``signature`` as ``module``'s most recent call (in ``__dict__``: not a part, not
    state, and not seen by ``Module.__setattr__``)."""
    module.__dict__[_ATTRIBUTE] = signature


_ATTRIBUTE = "_last_call_signature"

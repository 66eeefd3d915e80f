"""Dtype conversion and moving between devices."""

from __future__ import annotations

import numpy as np

from ..backend.device import Device, device_of, to_device
from .abstract import ValueSpec
from .families import CopyOp


class Cast(CopyOp):
    """``x`` in ``dtype`` (a copy); the gradient is cast back to the input's dtype."""

    name = "cast"
    save_inputs = False

    def infer(self, x, *, dtype) -> ValueSpec:
        return x.with_dtype(np.dtype(dtype))

    def forward(self, ctx, xp, x, *, dtype):
        ctx.input_dtype = x.dtype
        return x.astype(dtype)

    def backward(self, ctx, grad):
        return (grad.astype(ctx.input_dtype),)

    def to_onnx(self, emit, inputs, output, attrs):
        emit.cast(inputs[0], emit.dtype(output), output)


class ToDevice(CopyOp):
    """Copy to another device; the gradient travels back to the source device."""

    name = "to_device"
    save_inputs = False

    def infer(self, x, *, device) -> ValueSpec:
        return ValueSpec(x.shape, x.dtype, str(Device(device)))

    def forward(self, ctx, xp, x, *, device):
        ctx.source_device = device_of(x)
        return to_device(x, device)

    def backward(self, ctx, grad):
        return (grad.to(ctx.source_device),)


CAST, TO_DEVICE = Cast(), ToDevice()

"""Dtype conversion and moving between devices."""

from __future__ import annotations

from .base import Op


class Cast(Op):
    name, onnx = "cast", "Cast"
    save_inputs = False

    def forward(self, ctx, xp, x, *, dtype):
        ctx.input_dtype = x.dtype
        return x.astype(dtype)

    def backward(self, ctx, grad):
        return (grad.astype(ctx.input_dtype),)

    def to_onnx(self, emit, inputs, output, attrs):
        emit.cast(inputs[0], emit.dtype(output), output)


class ToDevice(Op):
    """Copy to another device; the gradient travels back to the source device."""

    name = "to_device"
    save_inputs = False

    def forward(self, ctx, xp, x, *, device):
        from ..backend.device import device_of, to_device

        ctx.source_device = device_of(x)
        return to_device(x, device)

    def backward(self, ctx, grad):
        return (grad.to(ctx.source_device),)


CAST, TO_DEVICE = Cast(), ToDevice()

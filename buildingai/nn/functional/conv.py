"""Convolutions as functions: ``conv1d``, ``conv2d``, ``conv_transpose1d``, ``conv_transpose2d``.

All run on the three primitives of ``ops/conv.py``; 1-D convolutions add a height-1 axis, a
transposed convolution is the input gradient of a convolution, the bias is a broadcast add and
``padding="same"`` with an even kernel pads the right/bottom edge one more first, as PyTorch does.
Arguments follow ``torch.nn.functional``.
"""

from __future__ import annotations

from ...autograd.dispatch import apply
from ...autograd.tensor import Tensor
from ...errors import ShapeError
from ...functions.shape import pad as _pad
from ...ops import conv as ops
from ._args import _batched, _pair, _single

__all__ = ["conv1d", "conv2d", "conv_transpose1d", "conv_transpose2d"]


def _add_bias(out: Tensor, bias: Tensor | None, op: str) -> Tensor:
    if bias is None:
        return out
    if tuple(bias.shape) != (out.shape[1],):
        raise ShapeError(
            f"[{op}] bias {tuple(bias.shape)} does not fit {out.shape[1]} output channels: "
            f"expected ({out.shape[1]},)"
        )
    return out + bias.reshape((1, out.shape[1]) + (1,) * (out.ndim - 2))


def _same_padding(x: Tensor, kernel: tuple, dilation: tuple, stride: tuple, op: str):
    """``padding="same"``: the symmetric padding to pass to the op (one int per spatial axis),
    after padding the far edge of ``x`` by one along each axis whose total
    (dilation * (kernel - 1)) is odd."""
    if any(step != 1 for step in stride):
        raise ShapeError(
            f"[{op}] padding='same' is not supported for strided convolutions (stride={stride})",
            help="give explicit padding, or use stride=1",
        )
    totals = [d * (k - 1) for k, d in zip(kernel, dilation)]
    if any(total % 2 for total in totals):
        far_edges = [(0, total % 2) for total in reversed(totals)]  # last dimension first
        x = _pad(x, tuple(side for edges in far_edges for side in edges))
    return x, tuple(total // 2 for total in totals)


def conv2d(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride=1,
    padding=0,
    dilation=1,
    groups: int = 1,
) -> Tensor:
    """2-D convolution (cross-correlation) over an image batch.

    input: (N, C, H, W) or (C, H, W); weight: (O, C/groups, kh, kw); bias: (O,) or None
    -> (N, O, Ho, Wo) with Ho = floor((H + 2*ph - dh*(kh - 1) - 1) / sh) + 1 (likewise Wo).

    ``padding`` is an int, a pair, ``"valid"`` (none) or ``"same"`` (output size = input size,
    stride 1 only). ``groups`` splits channels into independent groups (``groups=C`` is a
    depthwise convolution).
    """
    x, added = _batched(input, 2, "conv2d")
    if weight.ndim != 4:
        raise ShapeError(
            f"[conv2d] weight must be 4-D (out_channels, in_channels/groups, kh, kw), got "
            f"{tuple(weight.shape)}"
        )
    stride = _pair(stride, "stride", "conv2d")
    dilation = _pair(dilation, "dilation", "conv2d")
    if isinstance(padding, str):
        if padding == "valid":
            padding = (0, 0)
        elif padding == "same":
            x, padding = _same_padding(x, tuple(weight.shape[2:]), dilation, stride, "conv2d")
        else:
            raise ValueError(
                f"[conv2d] padding={padding!r} is not understood; use an int, a pair, 'same' or "
                "'valid'"
            )
    else:
        padding = _pair(padding, "padding", "conv2d")
    # The bias goes into the op, which adds it while it copies the product into NCHW order.
    biased = () if bias is None else (bias,)
    out = apply(
        ops.CONV2D,
        x,
        weight,
        *biased,
        stride=stride,
        padding=padding,
        dilation=dilation,
        groups=groups,
    )
    return out.squeeze(0) if added else out


def conv1d(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride=1,
    padding=0,
    dilation=1,
    groups: int = 1,
) -> Tensor:
    """1-D convolution over a sequence batch: conv2d on a height-1 image.

    input: (N, C, L) or (C, L); weight: (O, C/groups, k); bias: (O,) or None -> (N, O, Lo) with
    Lo = floor((L + 2*p - d*(k - 1) - 1) / s) + 1. ``padding`` may be ``"same"`` or ``"valid"``.
    """
    x, added = _batched(input, 1, "conv1d")
    if weight.ndim != 3:
        raise ShapeError(
            f"[conv1d] weight must be 3-D (out_channels, in_channels/groups, k), got "
            f"{tuple(weight.shape)}"
        )
    if groups >= 1 and x.shape[1] != weight.shape[1] * groups:
        raise ShapeError(
            f"[conv1d] expected input with {weight.shape[1] * groups} channels (weight "
            f"{tuple(weight.shape)}" + (f", groups={groups}" if groups != 1 else "") + "), got "
            f"{tuple(input.shape)}",
            help="the weight is laid out (out_channels, in_channels/groups, k); check "
            "in_channels against the input's channel dimension (N, C, L)",
        )
    stride = _single(stride, "stride", "conv1d")
    dilation = _single(dilation, "dilation", "conv1d")
    if not isinstance(padding, str):
        padding = (0, _single(padding, "padding", "conv1d"))
    if bias is not None and tuple(bias.shape) != (weight.shape[0],):
        raise ShapeError(
            f"[conv1d] bias {tuple(bias.shape)} does not fit {weight.shape[0]} output channels: "
            f"expected ({weight.shape[0]},)"
        )
    out = conv2d(  # the bias goes into the convolution op, as for conv2d
        x.unsqueeze(2),
        weight.unsqueeze(2),
        bias,
        stride=(1, stride),
        padding=padding,
        dilation=(1, dilation),
        groups=groups,
    ).squeeze(2)
    return out.squeeze(0) if added else out


def _transposed_geometry(
    op: str,
    input: Tensor,
    x: Tensor,
    weight: Tensor,
    to_tuple,
    stride,
    padding,
    dilation,
    output_padding,
) -> tuple:
    """A transposed convolution's arguments as tuples (``to_tuple``: ``_pair`` or ``_triple``),
    checked against x (N, C, *spatial) and weight (C, O/groups, *kernel), and the output's
    spatial size: (stride, padding, dilation, size)."""
    spatial = x.ndim - 2
    layout = f"(in_channels, out_channels/groups, {('kh, kw', 'kd, kh, kw')[spatial - 2]})"
    if weight.ndim != spatial + 2:
        raise ShapeError(
            f"[{op}] weight must be {spatial + 2}-D {layout}, got {tuple(weight.shape)}"
        )
    if x.shape[1] != weight.shape[0]:
        raise ShapeError(
            f"[{op}] expected input with {weight.shape[0]} channels (weight "
            f"{tuple(weight.shape)}), got {tuple(input.shape)}",
            help=f"the weight is laid out {layout}",
        )
    stride = to_tuple(stride, "stride", op)
    padding = to_tuple(padding, "padding", op)
    dilation = to_tuple(dilation, "dilation", op)
    output_padding = to_tuple(output_padding, "output_padding", op)
    for axis in range(spatial):
        extra = output_padding[axis]
        if extra < 0 or (extra >= stride[axis] and extra >= dilation[axis]):
            raise ShapeError(
                f"[{op}] output_padding={output_padding} must be smaller than either the stride "
                f"{stride} or the dilation {dilation}",
                help="output_padding only chooses among sizes a strided convolution maps to the "
                "same input size",
            )
    size = tuple(
        (x.shape[2 + a] - 1) * stride[a]
        - 2 * padding[a]
        + dilation[a] * (weight.shape[2 + a] - 1)
        + output_padding[a]
        + 1
        for a in range(spatial)
    )
    if min(size) < 1:
        raise ShapeError(
            f"[{op}] input {tuple(input.shape)} with weight {tuple(weight.shape)}, "
            f"stride={stride}, padding={padding} gives a non-positive output size {size}",
            help="reduce the padding",
        )
    return stride, padding, dilation, size


def conv_transpose2d(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride=1,
    padding=0,
    output_padding=0,
    groups: int = 1,
    dilation=1,
) -> Tensor:
    """2-D transposed convolution (the gradient of conv2d with respect to its input).

    input: (N, C, H, W) or (C, H, W); weight: (C, O/groups, kh, kw) (PyTorch's layout);
    bias: (O,) or None -> (N, O, Ho, Wo) with
    Ho = (H - 1)*sh - 2*ph + dh*(kh - 1) + output_padding_h + 1 (likewise Wo).
    ``output_padding`` (smaller than the stride or the dilation) picks among the output sizes
    that a stride > 1 convolution maps to the same input size.
    """
    op = "conv_transpose2d"
    x, added = _batched(input, 2, op)
    stride, padding, dilation, size = _transposed_geometry(
        op, input, x, weight, _pair, stride, padding, dilation, output_padding
    )
    out = apply(
        ops.CONV2D_INPUT_GRAD,
        x,
        weight,
        input_size=size,
        stride=stride,
        padding=padding,
        dilation=dilation,
        groups=groups,
    )
    out = _add_bias(out, bias, op)
    return out.squeeze(0) if added else out


def conv_transpose1d(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride=1,
    padding=0,
    output_padding=0,
    groups: int = 1,
    dilation=1,
) -> Tensor:
    """1-D transposed convolution: input (N, C, L) or (C, L), weight (C, O/groups, k),
    bias (O,) or None -> (N, O, (L - 1)*s - 2*p + d*(k - 1) + output_padding + 1)."""
    op = "conv_transpose1d"
    x, added = _batched(input, 1, op)
    if weight.ndim != 3:
        raise ShapeError(
            f"[{op}] weight must be 3-D (in_channels, out_channels/groups, k), got "
            f"{tuple(weight.shape)}"
        )
    out = conv_transpose2d(
        x.unsqueeze(2),
        weight.unsqueeze(2),
        None,
        stride=(1, _single(stride, "stride", op)),
        padding=(0, _single(padding, "padding", op)),
        output_padding=(0, _single(output_padding, "output_padding", op)),
        groups=groups,
        dilation=(1, _single(dilation, "dilation", op)),
    ).squeeze(2)
    out = _add_bias(out, bias, op)
    return out.squeeze(0) if added else out

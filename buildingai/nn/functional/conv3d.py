"""Three-dimensional convolutions as functions, as PyTorch's: ``conv3d`` and
``conv_transpose3d``.

Both run on the primitives of ``ops/conv3d.py``: a transposed convolution is the input gradient
of a convolution, and ``padding="same"`` with an even (dilated) kernel pads the far edge one
more first, as PyTorch does. Arguments follow ``torch.nn.functional``.
"""

from __future__ import annotations

from ...autograd.dispatch import apply
from ...autograd.tensor import Tensor
from ...errors import ShapeError
from ...functions.shape import pad as _pad
from ...ops import conv3d as ops
from .conv import _add_bias

__all__ = ["conv3d", "conv_transpose3d"]


def _triple(value, name: str, op: str) -> tuple[int, int, int]:
    """``3`` -> ``(3, 3, 3)``; ``(1, 2, 3)`` stays; ``(3,)`` -> ``(3, 3, 3)``; anything else is
    refused."""
    if isinstance(value, int) and not isinstance(value, bool):
        return (value,) * 3
    values = tuple(value)
    if len(values) == 1:
        values = values * 3
    if len(values) != 3 or not all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        raise ShapeError(
            f"[{op}] {name} must be an int or a triple of ints, got {value!r}",
            help=f"e.g. {name}=1 or {name}=(1, 2, 2)",
        )
    return values


def _batched(x: Tensor, op: str) -> tuple[Tensor, bool]:
    """Accept (N, C, D, H, W) or the unbatched (C, D, H, W); return the batched form and whether
    a batch axis was added."""
    if x.ndim == 4:
        return x.unsqueeze(0), True
    if x.ndim != 5:
        raise ShapeError(
            f"[{op}] expected a 5-D input (N, C, D, H, W) or a 4-D unbatched one (C, D, H, W), "
            f"got {tuple(x.shape)}",
            help="a 3-D convolution slides over the last three dimensions of the input",
        )
    return x, False


def _same_padding(x: Tensor, kernel: tuple, dilation: tuple, stride: tuple, op: str):
    """``padding="same"``: the symmetric padding to pass to the op, after padding the far edge
    of ``x`` by one along each axis whose total (dilation * (kernel - 1)) is odd."""
    if stride != (1, 1, 1):
        raise ShapeError(
            f"[{op}] padding='same' is not supported for strided convolutions (stride={stride})",
            help="give explicit padding, or use stride=1",
        )
    totals = [d * (k - 1) for k, d in zip(kernel, dilation)]
    extra_d, extra_h, extra_w = (total % 2 for total in totals)
    if extra_d or extra_h or extra_w:
        x = _pad(x, (0, extra_w, 0, extra_h, 0, extra_d))  # last dimension first
    return x, tuple(total // 2 for total in totals)


def conv3d(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride=1,
    padding=0,
    dilation=1,
    groups: int = 1,
) -> Tensor:
    """3-D convolution (cross-correlation) over a batch of volumes.

    input: (N, C, D, H, W) or (C, D, H, W); weight: (O, C/groups, kd, kh, kw); bias: (O,) or
    None -> (N, O, Do, Ho, Wo) with Do = floor((D + 2*pd - dd*(kd - 1) - 1) / sd) + 1 (likewise
    Ho, Wo).

    ``stride``, ``padding`` and ``dilation`` are ints or (d, h, w) triples; ``padding`` may also
    be ``"valid"`` (none) or ``"same"`` (output size = input size, stride 1 only). ``groups``
    splits channels into independent groups (``groups=C`` is a depthwise convolution).
    """
    x, added = _batched(input, "conv3d")
    if weight.ndim != 5:
        raise ShapeError(
            f"[conv3d] weight must be 5-D (out_channels, in_channels/groups, kd, kh, kw), got "
            f"{tuple(weight.shape)}"
        )
    stride = _triple(stride, "stride", "conv3d")
    dilation = _triple(dilation, "dilation", "conv3d")
    if isinstance(padding, str):
        if padding == "valid":
            padding = (0, 0, 0)
        elif padding == "same":
            x, padding = _same_padding(x, tuple(weight.shape[2:]), dilation, stride, "conv3d")
        else:
            raise ValueError(
                f"[conv3d] padding={padding!r} is not understood; use an int, a triple, 'same' "
                "or 'valid'"
            )
    else:
        padding = _triple(padding, "padding", "conv3d")
    # The bias goes into the op, which adds it while it copies the product into NCDHW order.
    biased = () if bias is None else (bias,)
    out = apply(
        ops.CONV3D,
        x,
        weight,
        *biased,
        stride=stride,
        padding=padding,
        dilation=dilation,
        groups=groups,
    )
    return out.squeeze(0) if added else out


def conv_transpose3d(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride=1,
    padding=0,
    output_padding=0,
    groups: int = 1,
    dilation=1,
) -> Tensor:
    """3-D transposed convolution (the gradient of conv3d with respect to its input).

    input: (N, C, D, H, W) or (C, D, H, W); weight: (C, O/groups, kd, kh, kw) (PyTorch's
    layout); bias: (O,) or None -> (N, O, Do, Ho, Wo) with
    Do = (D - 1)*sd - 2*pd + dd*(kd - 1) + output_padding_d + 1 (likewise Ho, Wo).
    ``output_padding`` (smaller than the stride or the dilation) picks among the output sizes
    that a stride > 1 convolution maps to the same input size.
    """
    op = "conv_transpose3d"
    x, added = _batched(input, op)
    if weight.ndim != 5:
        raise ShapeError(
            f"[{op}] weight must be 5-D (in_channels, out_channels/groups, kd, kh, kw), got "
            f"{tuple(weight.shape)}"
        )
    if x.shape[1] != weight.shape[0]:
        raise ShapeError(
            f"[{op}] expected input with {weight.shape[0]} channels (weight "
            f"{tuple(weight.shape)}), got {tuple(input.shape)}",
            help="the weight is laid out (in_channels, out_channels/groups, kd, kh, kw)",
        )
    stride = _triple(stride, "stride", op)
    padding = _triple(padding, "padding", op)
    dilation = _triple(dilation, "dilation", op)
    output_padding = _triple(output_padding, "output_padding", op)
    for axis in range(3):
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
        for a in range(3)
    )
    if min(size) < 1:
        raise ShapeError(
            f"[{op}] input {tuple(input.shape)} with weight {tuple(weight.shape)}, "
            f"stride={stride}, padding={padding} gives a non-positive output size {size}",
            help="reduce the padding",
        )
    out = apply(
        ops.CONV3D_INPUT_GRAD,
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

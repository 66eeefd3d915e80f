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
from ...ops import conv3d as ops
from ._args import _batched, _triple
from .conv import _add_bias, _same_padding, _transposed_geometry

__all__ = ["conv3d", "conv_transpose3d"]


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
    x, added = _batched(input, 3, "conv3d")
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
    x, added = _batched(input, 3, op)
    stride, padding, dilation, size = _transposed_geometry(
        op, input, x, weight, _triple, stride, padding, dilation, output_padding
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

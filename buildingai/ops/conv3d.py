"""Three-dimensional convolution primitives: ``conv3d`` and its two adjoints, ``conv3d_input_grad``
(the transposed convolution, which ``conv_transpose3d`` also uses) and ``conv3d_weight_grad``.

The three records mirror the 2-D ones of ``ops/conv.py`` one dimension up: the zero-padded
volume is viewed (no copy) as windows ``(N, C, kd, kh, kw, Do, Ho, Wo)``; one reshape gathers
them into columns ``(groups, C/groups * kd * kh * kw, N * Do * Ho * Wo)`` (vol2col), and one
matrix product per group with the filters ``(groups, O/groups, C/groups * kd * kh * kw)`` gives
the output. The input gradient runs the product the other way and adds each column back where
its window read (col2vol); the weight gradient multiplies the output gradient by x's columns.
The ops are bilinear and each one's gradients are the other two, so derivatives of any order
are again these three records.

Attributes (normalised by ``nn.functional``): ``stride``, ``padding`` (symmetric, per side),
``dilation`` as ``(d, h, w)`` int triples, ``groups`` an int; ``input_size`` / ``weight_size``
the spatial ``(d, h, w)`` size of the tensor an adjoint produces.
"""

from __future__ import annotations

import itertools

from ..backend.device import strided_view
from ..errors import ShapeError
from .abstract import DimExpr, SymbolicSizeError, ValueSpec, bytes_of, prod, simplify
from .base import Op
from .conv import (
    _check_attrs,
    _check_dtypes,
    _covers,
    _describe_attrs,
    floor_divide_size,
    output_size,
)
from .linalg import matmul_array
from .reduce import SUM

AXES = "DHW"

# ----- sizes and checks ---------------------------------------------------------------------------


def output_dhw(size, kernel, stride, padding, dilation) -> tuple[int, int, int]:
    """The output (Do, Ho, Wo) of a convolution of an input of spatial size ``size``."""
    return tuple(
        output_size(size[a], kernel[a], stride[a], padding[a], dilation[a]) for a in range(3)
    )


def _check_volume(op: str, name: str, volume) -> None:
    if volume.ndim != 5:
        raise ShapeError(
            f"[{op}] {name} must be 5-D (N, C, D, H, W), got {tuple(volume.shape)}",
            help="add a batch dimension with x.unsqueeze(0) for a single volume",
        )


def _check_weight(op: str, weight, channels: int | None, groups: int, volume_shape) -> None:
    """The weight is (O, C/groups, kd, kh, kw), with O and C divisible by groups."""
    if weight.ndim != 5:
        raise ShapeError(
            f"[{op}] weight must be 5-D (out_channels, in_channels/groups, kd, kh, kw), got "
            f"{tuple(weight.shape)}"
        )
    out_channels = weight.shape[0]
    if out_channels % groups:
        raise ShapeError(
            f"[{op}] out_channels={out_channels} (weight {tuple(weight.shape)}) is not divisible "
            f"by groups={groups}",
            help="every group needs the same number of filters: pick groups dividing both "
            "channel counts",
        )
    if channels is not None and channels != weight.shape[1] * groups:
        raise ShapeError(
            f"[{op}] expected input with {weight.shape[1] * groups} channels (weight "
            f"{tuple(weight.shape)}" + (f", groups={groups}" if groups != 1 else "") + "), got "
            f"{tuple(volume_shape)}",
            help="the weight is laid out (out_channels, in_channels/groups, kd, kh, kw); check "
            "in_channels of the layer against the input's channel dimension (N, C, D, H, W)",
        )


def _check_fits(op: str, size: tuple, kernel: tuple, stride, padding, dilation, shapes) -> None:
    """Raise when the (dilated) kernel is larger than the padded input; ``shapes()`` describes
    the call in the message (written only then)."""
    for axis in range(3):
        extent = dilation[axis] * (kernel[axis] - 1) + 1
        padded = size[axis] + 2 * padding[axis]
        if extent > padded:
            raise ShapeError(
                f"[{op}] kernel {tuple(kernel)} (dilated extent {extent}) is larger than the "
                f"padded input ({padded}) along {AXES[axis]}: {shapes()}",
                help="use a larger input, more padding, or a smaller kernel or dilation",
            )


def _crop_to(out, size: tuple):
    """``out`` (N, C, D', H', W') cut to its first ``size`` planes, rows and columns: the
    trailing ones an output_padding added, which no output position reads."""
    if tuple(out.shape[2:]) == tuple(size):
        return out
    return out.getitem((slice(None), slice(None)) + tuple(slice(0, s) for s in size))


def _infer_output_dhw(op: str, size, kernel, stride, padding, dilation) -> tuple:
    """``output_dhw`` on sizes that may be symbolic (see ``ops.conv.floor_divide_size``)."""
    out = []
    for axis in range(3):
        span = size[axis] + 2 * padding[axis] - dilation[axis] * (kernel[axis] - 1) - 1
        what = f"the output {AXES[axis]} of input size {size[axis]!r} with stride {stride[axis]}"
        out.append(floor_divide_size(op, span, stride[axis], what) + 1)
    return tuple(out)


def _infer_check_ranks(op: str, first, second) -> None:
    if first.ndim != 5 or second.ndim != 5:
        raise ShapeError(
            f"[{op}] expects 5-D operands, (N, C, D, H, W) and (O, C/groups, kd, kh, kw), got "
            f"{first.shape} and {second.shape}",
            help="add a batch dimension with x.unsqueeze(0) for a single volume",
        )


def _infer_check_channels(op: str, got, expected, first, second) -> None:
    if got != expected:
        raise ShapeError(
            f"[{op}] {first.shape} and weight {second.shape} disagree on the channels: {got} "
            f"against {expected}",
            help="the weight is laid out (out_channels, in_channels/groups, kd, kh, kw)",
        )


# ----- vol2col and col2vol ------------------------------------------------------------------------


def pad_volume(xp, x, padding):
    """x (N, C, D, H, W) inside zeros (N, C, D + 2*pd, H + 2*ph, W + 2*pw)."""
    if not any(padding):
        return x
    padded_size = tuple(s + 2 * p for s, p in zip(x.shape[2:], padding))
    padded = xp.zeros(x.shape[:2] + padded_size, dtype=x.dtype)
    inside = tuple(slice(p, p + s) for s, p in zip(x.shape[2:], padding))
    padded[(slice(None), slice(None)) + inside] = x
    return padded


def windows(xp, padded, kernel, out_dhw, stride, dilation):
    """A read-only view ``(N, C, kd, kh, kw, Do, Ho, Wo)`` of every window of a padded volume:
    element ``[n, c, i, j, k, d, h, w]`` is
    ``padded[n, c, d*sd + i*dd, h*sh + j*dh, w*sw + k*dw]``. No copy is made."""
    sn, sc, *spatial = padded.strides
    offsets = tuple(s * d for s, d in zip(spatial, dilation))
    steps = tuple(s * t for s, t in zip(spatial, stride))
    return strided_view(
        xp, padded, padded.shape[:2] + tuple(kernel) + tuple(out_dhw), (sn, sc) + offsets + steps
    )


def vol2col(xp, x, kernel, out_dhw, stride, padding, dilation, groups):
    """Columns ``(groups, C/groups * kd * kh * kw, N * Do * Ho * Wo)`` of x (N, C, D, H, W): one
    column per output position, holding the window it reads. The reshape of the window view is
    the one copy; the batch goes into the columns, so each group is one large product."""
    view = windows(xp, pad_volume(xp, x, padding), kernel, out_dhw, stride, dilation)
    n, c = x.shape[:2]
    columns = view.transpose(1, 2, 3, 4, 0, 5, 6, 7)  # (C, kd, kh, kw, N, Do, Ho, Wo), a view
    return columns.reshape(groups, c // groups * prod(kernel), n * prod(out_dhw))


def grad_rows(xp, grad, groups):
    """The output gradient (N, O, Do, Ho, Wo) as product rows
    ``(groups, O/groups, N * Do * Ho * Wo)``."""
    n, out_channels = grad.shape[:2]
    positions = prod(grad.shape[2:])
    rows = grad.reshape(n, groups, out_channels // groups, positions).transpose(1, 2, 0, 3)
    return rows.reshape(groups, out_channels // groups, n * positions)


def col2vol(xp, cols, input_dhw, stride, padding, dilation):
    """The adjoint of vol2col: add ``cols`` (C, kd, kh, kw, N, Do, Ho, Wo) back into a volume
    (N, C, D, H, W).

    One strided add per kernel offset, each over the whole batch, in the columns' own
    channel-major layout (C, N, D, H, W) so that every add reads its operand in order; one copy
    turns the result into (N, C, D, H, W) at the end.
    """
    c, *kernel, n = cols.shape[:5]
    out_dhw = cols.shape[5:]
    padded_size = tuple(s + 2 * p for s, p in zip(input_dhw, padding))
    padded = xp.zeros((c, n) + padded_size, dtype=cols.dtype)
    for offset in itertools.product(*(range(k) for k in kernel)):
        # the positions that kernel tap ``offset`` reads, along each axis
        reads = tuple(
            slice(i * d, i * d + s * (o - 1) + 1, s)
            for i, d, s, o in zip(offset, dilation, stride, out_dhw)
        )
        padded[(slice(None), slice(None)) + reads] += cols[(slice(None),) + offset]
    inside = tuple(slice(p, p + s) for s, p in zip(input_dhw, padding))
    volume = padded[(slice(None), slice(None)) + inside]
    return xp.ascontiguousarray(volume.transpose(1, 0, 2, 3, 4))


def to_ncdhw(xp, out, bias=None):
    """The product (O, N, Do, Ho, Wo) in NCDHW order, plus bias (O,) or None, added by the copy
    into NCDHW order: one pass instead of a copy and an add."""
    out_channels = out.shape[0]
    ncdhw = out.transpose(1, 0, 2, 3, 4)
    if bias is None:
        return xp.ascontiguousarray(ncdhw)
    result = xp.empty(ncdhw.shape, dtype=out.dtype)
    xp.add(ncdhw, bias.reshape(out_channels, 1, 1, 1), out=result)
    return result


# ----- the forward computations, shared by the three records --------------------------------------


def _conv(xp, x, weight, stride, padding, dilation, groups, bias=None):
    """conv3d on arrays: x (N, C, D, H, W), weight (O, C/groups, kd, kh, kw), bias (O,) or None
    -> (N, O, Do, Ho, Wo).

    Each output value is the dot product of a filter with the window it sees, so the whole
    convolution is one product per group: filters (O/groups, C/groups * kd * kh * kw) times
    columns (C/groups * kd * kh * kw, N * Do * Ho * Wo).
    """
    out_channels, kernel = weight.shape[0], weight.shape[2:]
    out_dhw = output_dhw(x.shape[2:], kernel, stride, padding, dilation)
    columns = vol2col(xp, x, kernel, out_dhw, stride, padding, dilation, groups)
    filters = weight.reshape(groups, out_channels // groups, -1)
    out = matmul_array(xp, filters, columns)  # (groups, O/groups, N * Do * Ho * Wo)
    out = out.reshape((out_channels, x.shape[0]) + out_dhw)
    return to_ncdhw(xp, out, bias)


def _conv_input_grad(xp, grad, weight, input_dhw, stride, padding, dilation, groups):
    """The transposed convolution: grad (N, O, Do, Ho, Wo), weight (O, C/groups, kd, kh, kw) ->
    (N, C, D, H, W) with (D, H, W) = ``input_dhw``. The filters, transposed, turn the output
    gradient into columns; col2vol adds each column back onto the window it came from."""
    n, out_channels = grad.shape[:2]
    per_group_in, kernel = weight.shape[1], tuple(weight.shape[2:])
    filters = weight.reshape(groups, out_channels // groups, -1).swapaxes(-1, -2)
    cols = matmul_array(xp, filters, grad_rows(xp, grad, groups))  # (groups, K, N * Do*Ho*Wo)
    cols = cols.reshape((groups * per_group_in,) + kernel + (n,) + tuple(grad.shape[2:]))
    return col2vol(xp, cols, input_dhw, stride, padding, dilation)


def _conv_weight_grad(xp, x, grad, kernel, stride, padding, dilation, groups):
    """The weight gradient: x (N, C, D, H, W), grad (N, O, Do, Ho, Wo) ->
    (O, C/groups, kd, kh, kw), the output gradient times x's vol2col columns."""
    channels, out_channels = x.shape[1], grad.shape[1]
    columns = vol2col(xp, x, kernel, grad.shape[2:], stride, padding, dilation, groups)
    out = matmul_array(xp, grad_rows(xp, grad, groups), columns.swapaxes(-1, -2))
    return out.reshape((out_channels, channels // groups) + tuple(kernel))


# ----- the records --------------------------------------------------------------------------------


class Conv3d(Op):
    """3-D cross-correlation (what deep learning calls convolution), with an optional bias.

    x: (N, C, D, H, W), weight: (O, C/groups, kd, kh, kw), bias: (O,) or absent ->
    (N, O, Do, Ho, Wo), with Do = floor((D + 2*pd - dd*(kd - 1) - 1) / sd) + 1 (likewise Ho, Wo).
    """

    name = "conv3d"
    autocast = "low"

    def check(self, x, weight, bias=None, *, stride, padding, dilation, groups):
        _check_volume("conv3d", "input", x)
        _check_attrs("conv3d", stride, padding, dilation, groups)
        _check_weight("conv3d", weight, x.shape[1], groups, x.shape)
        _check_dtypes("conv3d", x, weight, ("input", "weight"))
        if bias is not None:
            if tuple(bias.shape) != (weight.shape[0],):
                raise ShapeError(
                    f"[conv3d] bias {tuple(bias.shape)} does not fit {weight.shape[0]} output "
                    f"channels (weight {tuple(weight.shape)}): expected ({weight.shape[0]},)"
                )
            _check_dtypes("conv3d", x, bias, ("input", "bias"))

        def shapes() -> str:
            attrs = _describe_attrs(stride, padding, dilation, groups)
            return f"input {tuple(x.shape)}, weight {tuple(weight.shape)}, {attrs}"

        _check_fits("conv3d", x.shape[2:], weight.shape[2:], stride, padding, dilation, shapes)

    def forward(self, ctx, xp, x, weight, bias=None, *, stride, padding, dilation, groups):
        return _conv(xp, x, weight, stride, padding, dilation, groups, bias)

    def infer(self, x, weight, bias=None, *, stride, padding, dilation, groups):
        _infer_check_ranks(self.name, x, weight)
        _infer_check_channels(self.name, x.shape[1], weight.shape[1] * groups, x, weight)
        out_dhw = _infer_output_dhw(
            self.name, x.shape[2:], weight.shape[2:], stride, padding, dilation
        )
        return ValueSpec((x.shape[0], weight.shape[0], *out_dhw), x.dtype, x.device)

    def cost(self, x, weight, bias=None, *, stride, padding, dilation, groups):
        out = self.infer(
            x, weight, bias, stride=stride, padding=padding, dilation=dilation, groups=groups
        )
        # each output element is a dot product over (C/groups) * kd * kh * kw input values
        flops = 2 * out.numel * prod(weight.shape[1:])
        if bias is not None:
            flops = flops + out.numel
        return flops, bytes_of(x, weight, bias), out.nbytes

    def backward(self, ctx, grad):
        x, weight, *rest = ctx.inputs
        attrs = ctx.attrs
        grad_x = grad_w = None
        if x.requires_grad:
            grad_x = conv3d_input_grad(grad, weight, tuple(x.shape[2:]), **attrs)
        if weight.requires_grad:
            grad_w = conv3d_weight_grad(x, grad, tuple(weight.shape[2:]), **attrs)
        if not rest:
            return grad_x, grad_w
        bias = rest[0]
        grad_b = SUM(grad, axes=(0, 2, 3, 4), keepdims=False) if bias.requires_grad else None
        return grad_x, grad_w, grad_b

    def to_onnx(self, emit, inputs, output, attrs):
        padding = [int(p) for p in attrs["padding"]]
        emit.node(
            "Conv",
            inputs,
            output,
            pads=padding + padding,  # ONNX lists every axis's start, then every axis's end
            strides=[int(s) for s in attrs["stride"]],
            dilations=[int(d) for d in attrs["dilation"]],
            group=int(attrs["groups"]),
        )


class Conv3dInputGrad(Op):
    """The transposed convolution (gradient of conv3d with respect to its input).

    grad: (N, O, Do, Ho, Wo), weight: (O, C/groups, kd, kh, kw) -> (N, C, D, H, W),
    (D, H, W) = ``input_size``, which must be an input size that conv3d maps to (Do, Ho, Wo).
    """

    name = "conv3d_input_grad"

    def check(self, grad, weight, *, input_size, stride, padding, dilation, groups):
        op = "conv3d_input_grad"
        _check_volume(op, "input", grad)
        _check_attrs(op, stride, padding, dilation, groups)
        _check_weight(op, weight, None, groups, grad.shape)
        if grad.shape[1] != weight.shape[0]:
            raise ShapeError(
                f"[{op}] expected input with {weight.shape[0]} channels (weight "
                f"{tuple(weight.shape)}), got {tuple(grad.shape)}",
                help="the weight's first dimension must match the input's channel dimension",
            )
        _check_dtypes(op, grad, weight, ("input", "weight"))

        def shapes() -> str:
            return (
                f"input {tuple(grad.shape)}, weight {tuple(weight.shape)}, output size "
                f"{tuple(input_size)}, " + _describe_attrs(stride, padding, dilation, groups)
            )

        _check_fits(op, input_size, weight.shape[2:], stride, padding, dilation, shapes)
        expected = output_dhw(input_size, weight.shape[2:], stride, padding, dilation)
        if not _covers(expected, grad.shape[2:], stride, dilation):
            raise ShapeError(
                f"[{op}] output size {tuple(input_size)} does not fit: a convolution of that size "
                f"gives {expected}, not {tuple(grad.shape[2:])} ({shapes()})",
                help="output_padding must be smaller than the stride or the dilation",
            )

    def forward(self, ctx, xp, grad, weight, *, input_size, stride, padding, dilation, groups):
        return _conv_input_grad(xp, grad, weight, input_size, stride, padding, dilation, groups)

    def infer(self, grad, weight, *, input_size, stride, padding, dilation, groups):
        _infer_check_ranks(self.name, grad, weight)
        _infer_check_channels(self.name, grad.shape[1], weight.shape[0], grad, weight)
        channels = weight.shape[1] * groups
        return ValueSpec((grad.shape[0], channels, *input_size), grad.dtype, grad.device)

    def cost(self, grad, weight, *, input_size, stride, padding, dilation, groups):
        # the same multiply-adds as the convolution it transposes: one per weight tap per
        # output position
        flops = 2 * grad.numel * prod(weight.shape[1:])
        out = self.infer(
            grad,
            weight,
            input_size=input_size,
            stride=stride,
            padding=padding,
            dilation=dilation,
            groups=groups,
        )
        return flops, bytes_of(grad, weight), out.nbytes

    def to_onnx(self, emit, inputs, output, attrs):
        # ConvTranspose with symmetric pads; the trailing planes, rows and columns that a
        # strided convolution of input_size did not read are its output_padding (zeros, as in
        # forward). ONNX's output_shape attribute would re-derive the pads, so it is not used.
        padding, stride, dilation = attrs["padding"], attrs["stride"], attrs["dilation"]
        kernel = emit.shapes[inputs[1]][2:]
        grad_dhw = emit.shapes[inputs[0]][2:]
        output_padding = []
        for a in range(3):
            reach = stride[a] * (grad_dhw[a] - 1) + dilation[a] * (int(kernel[a]) - 1) + 1
            extra = simplify(attrs["input_size"][a] - reach + 2 * padding[a])
            if isinstance(extra, DimExpr):  # symbolic sizes that do not cancel out
                raise SymbolicSizeError(
                    f"[conv3d_input_grad] the output padding {extra!r} of output size "
                    f"{attrs['input_size'][a]!r} from input size {grad_dhw[a]!r} is not a number",
                    help="give that dimension a fixed size in the TensorSpec",
                )
            output_padding.append(int(extra))
        pads = [int(p) for p in padding]
        emit.node(
            "ConvTranspose",
            list(inputs),
            output,
            pads=pads + pads,
            strides=[int(s) for s in stride],
            dilations=[int(d) for d in dilation],
            group=int(attrs["groups"]),
            output_padding=output_padding,
        )

    def backward(self, ctx, upstream):
        grad, weight = ctx.inputs
        attrs = dict(ctx.attrs)
        del attrs["input_size"]
        d_grad = d_weight = None
        if grad.requires_grad:
            d_grad = _crop_to(conv3d(upstream, weight, **attrs), grad.shape[2:])
        if weight.requires_grad:
            d_weight = conv3d_weight_grad(upstream, grad, tuple(weight.shape[2:]), **attrs)
        return d_grad, d_weight


class Conv3dWeightGrad(Op):
    """The gradient of conv3d with respect to its weight.

    x: (N, C, D, H, W), grad: (N, O, Do, Ho, Wo) -> (O, C/groups, kd, kh, kw),
    (kd, kh, kw) = ``weight_size``.
    """

    name = "conv3d_weight_grad"

    def check(self, x, grad, *, weight_size, stride, padding, dilation, groups):
        op = "conv3d_weight_grad"
        _check_volume(op, "input", x)
        _check_volume(op, "output gradient", grad)
        _check_attrs(op, stride, padding, dilation, groups)

        def shapes() -> str:
            return (
                f"input {tuple(x.shape)}, output gradient {tuple(grad.shape)}, kernel "
                f"{tuple(weight_size)}, " + _describe_attrs(stride, padding, dilation, groups)
            )

        if x.shape[0] != grad.shape[0] or x.shape[1] % groups or grad.shape[1] % groups:
            raise ShapeError(
                f"[{op}] batch sizes must match and channels be divisible by groups: {shapes()}"
            )
        _check_dtypes(op, x, grad, ("input", "output gradient"))
        _check_fits(op, x.shape[2:], weight_size, stride, padding, dilation, shapes)
        expected = output_dhw(x.shape[2:], weight_size, stride, padding, dilation)
        if not _covers(expected, grad.shape[2:], stride, dilation):
            raise ShapeError(f"[{op}] the output gradient does not fit the convolution: {shapes()}")

    def forward(self, ctx, xp, x, grad, *, weight_size, stride, padding, dilation, groups):
        return _conv_weight_grad(xp, x, grad, weight_size, stride, padding, dilation, groups)

    def infer(self, x, grad, *, weight_size, stride, padding, dilation, groups):
        _infer_check_ranks(self.name, x, grad)
        shape = (grad.shape[1], x.shape[1] // groups, *weight_size)
        return ValueSpec(shape, x.dtype, x.device)

    def cost(self, x, grad, *, weight_size, stride, padding, dilation, groups):
        out = self.infer(
            x,
            grad,
            weight_size=weight_size,
            stride=stride,
            padding=padding,
            dilation=dilation,
            groups=groups,
        )
        # one multiply-add per weight tap per output position, as in the forward convolution
        flops = 2 * grad.numel * prod(out.shape[1:])
        return flops, bytes_of(x, grad), out.nbytes

    def backward(self, ctx, upstream):
        x, grad = ctx.inputs[:2]
        attrs = dict(ctx.attrs)
        del attrs["weight_size"]
        d_x = d_grad = None
        if x.requires_grad:
            d_x = conv3d_input_grad(grad, upstream, tuple(x.shape[2:]), **attrs)
        if grad.requires_grad:
            d_grad = _crop_to(conv3d(x, upstream, **attrs), grad.shape[2:])
        return d_x, d_grad


CONV3D, CONV3D_INPUT_GRAD, CONV3D_WEIGHT_GRAD = Conv3d(), Conv3dInputGrad(), Conv3dWeightGrad()


# The backward rules call the records through dispatch, so that they are recorded when a
# higher-order graph is being built.
def conv3d(x, weight, *, stride, padding, dilation, groups):
    return CONV3D(x, weight, stride=stride, padding=padding, dilation=dilation, groups=groups)


def conv3d_input_grad(grad, weight, input_size, *, stride, padding, dilation, groups):
    return CONV3D_INPUT_GRAD(
        grad,
        weight,
        input_size=tuple(input_size),
        stride=stride,
        padding=padding,
        dilation=dilation,
        groups=groups,
    )


def conv3d_weight_grad(x, grad, weight_size, *, stride, padding, dilation, groups):
    return CONV3D_WEIGHT_GRAD(
        x,
        grad,
        weight_size=tuple(weight_size),
        stride=stride,
        padding=padding,
        dilation=dilation,
        groups=groups,
    )

"""Convolution primitives: ``conv2d`` and its two adjoints, and ``conv2d_relu``, the convolution
and the ReLU after it as one op (made by a graph pass).

``conv2d(x, w)`` correlates an image batch with a filter bank. Its gradient with respect to the
input is ``conv2d_input_grad(g, w)`` (the transposed convolution, which ``conv_transpose2d``
also uses), and with respect to the weight ``conv2d_weight_grad(x, g)``. The three ops are
bilinear and each one's gradients are the other two, so derivatives of any order are again
these three records.

All three are im2col and one matrix product per group. The zero-padded input is viewed (no
copy) through ``as_strided`` as windows ``(N, C, kh, kw, Ho, Wo)``; one reshape gathers them
into columns ``(groups, C/groups * kh * kw, N * Ho * Wo)``, and the weight reshaped to
``(groups, O/groups, C/groups * kh * kw)`` times the columns is the output (O, N, Ho, Wo), put in
NCHW order by one copy. The input gradient runs the product the other way and adds the columns
back where their windows read (col2im); the weight gradient multiplies the output gradient by
x's columns, made again from x: the forward keeps none, so a step holds one convolution's
columns at a time rather than every layer's (each is kh * kw times its input).

Attributes (normalised by ``nn.functional``): ``stride``, ``padding`` (symmetric, per side),
``dilation`` as ``(h, w)`` int pairs, ``groups`` an int; ``input_size`` / ``weight_size`` the
spatial ``(h, w)`` size of the tensor an adjoint produces.
"""

from __future__ import annotations

from ..backend.device import strided_view
from ..errors import DTypeError, ShapeError
from .abstract import DimExpr, SymbolicSizeError, ValueSpec, bytes_of, prod, simplify
from .activation import ReluAfter
from .base import Op
from .linalg import matmul_array
from .reduce import SUM

# ----- sizes and checks ---------------------------------------------------------------------------


def output_size(size: int, kernel: int, stride: int, padding: int, dilation: int) -> int:
    """Output length of a convolution along one axis (floor of the last partial window)."""
    return (size + 2 * padding - dilation * (kernel - 1) - 1) // stride + 1


def _describe_attrs(stride, padding, dilation, groups) -> str:
    text = f"stride={tuple(stride)}, padding={tuple(padding)}, dilation={tuple(dilation)}"
    return text + (f", groups={groups}" if groups != 1 else "")


def _check_attrs(op: str, stride, padding, dilation, groups) -> None:
    if min(stride) < 1 or min(dilation) < 1 or min(padding) < 0 or groups < 1:
        raise ShapeError(
            f"[{op}] invalid {_describe_attrs(stride, padding, dilation, groups)}",
            help="stride, dilation and groups must be positive and padding non-negative",
        )


def _check_dtypes(op: str, first, second, names: tuple[str, str]) -> None:
    for name, array in zip(names, (first, second)):
        if array.dtype.kind not in "fV":  # "V": bfloat16 and other ml_dtypes floats
            raise DTypeError(
                f"[{op}] {name} must be a floating-point tensor, got {array.dtype}",
                help="convert it first, e.g. x.float()",
            )
    if first.dtype != second.dtype:
        raise DTypeError(
            f"[{op}] {names[0]} ({first.dtype}) and {names[1]} ({second.dtype}) must have the "
            "same dtype",
            help="cast one of them, e.g. x.astype(weight.dtype)",
        )


def _check_weight(op: str, weight, channels: int | None, groups: int, image_shape) -> None:
    """The weight is (O, C/groups, kh, kw), with O and C divisible by groups."""
    if weight.ndim != 4:
        raise ShapeError(
            f"[{op}] weight must be 4-D (out_channels, in_channels/groups, kh, kw), got "
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
            f"{tuple(image_shape)}",
            help="the weight is laid out (out_channels, in_channels/groups, kh, kw); check "
            "in_channels of the layer against the input's channel dimension (N, C, H, W)",
        )


def _check_image(op: str, name: str, image) -> None:
    if image.ndim != 4:
        raise ShapeError(
            f"[{op}] {name} must be 4-D (N, C, H, W), got {tuple(image.shape)}",
            help="add a batch dimension with x.unsqueeze(0) for a single image",
        )


def _check_fits(op: str, size: tuple, kernel: tuple, stride, padding, dilation, shapes):
    """Raise when the (dilated) kernel is larger than the padded input; ``shapes()`` describes
    the call in the message (written only then)."""
    for axis in range(2):
        extent = dilation[axis] * (kernel[axis] - 1) + 1
        padded = size[axis] + 2 * padding[axis]
        if extent > padded:
            raise ShapeError(
                f"[{op}] kernel {tuple(kernel)} (dilated extent {extent}) is larger than the "
                f"padded input ({padded}) along {'HW'[axis]}: {shapes()}",
                help="use a larger input, more padding, or a smaller kernel or dilation",
            )


def _covers(full: tuple, used: tuple, stride, dilation) -> bool:
    """Whether an output gradient of size ``used`` fits a convolution whose output is ``full``:
    equal sizes, or ``full`` longer by the few trailing rows/columns that the output_padding of
    a transposed convolution adds (output_padding < max(stride, dilation)) and that no output
    position reads."""
    return all(
        f - u >= 0 and (f - u) * s < max(s, d) for f, u, s, d in zip(full, used, stride, dilation)
    )


def _crop_to(out, size: tuple):
    """``out`` (N, C, H', W') cut to its first ``size`` rows and columns (see ``_covers``)."""
    if tuple(out.shape[2:]) == tuple(size):
        return out
    return out.getitem((slice(None), slice(None), slice(0, size[0]), slice(0, size[1])))


def output_hw(size, kernel, stride, padding, dilation) -> tuple[int, int]:
    """The output (Ho, Wo) of a convolution of an input of spatial size ``size``."""
    return (
        output_size(size[0], kernel[0], stride[0], padding[0], dilation[0]),
        output_size(size[1], kernel[1], stride[1], padding[1], dilation[1]),
    )


def floor_divide_size(op: str, size, divisor: int, what: str):
    """``size // divisor`` for a size that may be symbolic. ``(c*s + k) // d`` is
    ``(c/d)*s + k // d`` exactly when d divides c; any other symbolic quotient raises
    SymbolicSizeError naming the op and ``what`` was being computed."""
    if not isinstance(size, DimExpr):
        return size // divisor
    if size.coefficient % divisor == 0:
        return simplify(DimExpr(size.symbols, size.coefficient // divisor, size.offset // divisor))
    raise SymbolicSizeError(
        f"[{op}] {what}: ({size!r}) // {divisor} depends on the remainder of the symbolic size",
        help="give that dimension a fixed size in the TensorSpec, or use a stride that divides "
        "its coefficient (stride 1 always does)",
    )


def _infer_output_hw(op: str, size, kernel, stride, padding, dilation) -> tuple:
    """``output_hw`` on sizes that may be symbolic (see ``floor_divide_size``)."""
    out = []
    for axis in range(2):
        span = size[axis] + 2 * padding[axis] - dilation[axis] * (kernel[axis] - 1) - 1
        what = f"the output {'HW'[axis]} of input size {size[axis]!r} with stride {stride[axis]}"
        out.append(floor_divide_size(op, span, stride[axis], what) + 1)
    return tuple(out)


def _infer_check_ranks(op: str, first, second) -> None:
    if first.ndim != 4 or second.ndim != 4:
        raise ShapeError(
            f"[{op}] expects 4-D operands, (N, C, H, W) and (O, C/groups, kh, kw), got "
            f"{first.shape} and {second.shape}",
            help="add a batch dimension with x.unsqueeze(0) for a single image",
        )


def _infer_check_channels(op: str, got, expected, first, second) -> None:
    if got != expected:
        raise ShapeError(
            f"[{op}] {first.shape} and weight {second.shape} disagree on the channels: {got} "
            f"against {expected}",
            help="the weight is laid out (out_channels, in_channels/groups, kh, kw)",
        )


# ----- im2col and col2im --------------------------------------------------------------------------


def pad_image(xp, x, padding):
    """x (N, C, H, W) inside zeros (N, C, H + 2*ph, W + 2*pw)."""
    ph, pw = padding
    if ph == 0 and pw == 0:
        return x
    padded = xp.zeros(x.shape[:2] + (x.shape[2] + 2 * ph, x.shape[3] + 2 * pw), dtype=x.dtype)
    padded[:, :, ph : ph + x.shape[2], pw : pw + x.shape[3]] = x
    return padded


def windows(xp, padded, kernel, out_hw, stride, dilation):
    """A read-only view ``(N, C, kh, kw, Ho, Wo)`` of every window of a padded image: element
    ``[n, c, i, j, h, w]`` is ``padded[n, c, h*sh + i*dh, w*sw + j*dw]``. No copy is made."""
    sn, sc, sh, sw = padded.strides
    return strided_view(
        xp,
        padded,
        padded.shape[:2] + tuple(kernel) + tuple(out_hw),
        (sn, sc, sh * dilation[0], sw * dilation[1], sh * stride[0], sw * stride[1]),
    )


def im2col(xp, x, kernel, out_hw, stride, padding, dilation, groups):
    """Columns ``(groups, C/groups * kh * kw, N * Ho * Wo)`` of x (N, C, H, W): one column per
    output position, holding the window it reads. The reshape of the window view is the one
    copy; the batch goes into the columns, so each group is one large product."""
    view = windows(xp, pad_image(xp, x, padding), kernel, out_hw, stride, dilation)
    n, c = x.shape[:2]
    columns = view.transpose(1, 2, 3, 0, 4, 5)  # (C, kh, kw, N, Ho, Wo), still a view
    return columns.reshape(groups, c // groups * kernel[0] * kernel[1], n * out_hw[0] * out_hw[1])


def grad_rows(xp, grad, groups):
    """The output gradient (N, O, Ho, Wo) as product rows ``(groups, O/groups, N * Ho * Wo)``."""
    n, out_channels, ho, wo = grad.shape
    rows = grad.reshape(n, groups, out_channels // groups, ho * wo).transpose(1, 2, 0, 3)
    return rows.reshape(groups, out_channels // groups, n * ho * wo)


def col2im(xp, cols, input_hw, stride, padding, dilation):
    """The adjoint of im2col: add ``cols`` (C, kh, kw, N, Ho, Wo) back into an image (N, C, H, W).

    One strided add per kernel offset, each over the whole batch. The sums run in the columns'
    own channel-major layout, (C, N, H, W), so every add reads its operand in order; one copy
    turns the result into (N, C, H, W) at the end.
    """
    c, kh, kw, n, ho, wo = cols.shape
    ph, pw = padding
    padded = xp.zeros((c, n, input_hw[0] + 2 * ph, input_hw[1] + 2 * pw), dtype=cols.dtype)
    for i in range(kh):
        top = i * dilation[0]
        rows = slice(top, top + stride[0] * (ho - 1) + 1, stride[0])
        for j in range(kw):
            left = j * dilation[1]
            padded[:, :, rows, left : left + stride[1] * (wo - 1) + 1 : stride[1]] += cols[:, i, j]
    image = padded[:, :, ph : ph + input_hw[0], pw : pw + input_hw[1]]
    return xp.ascontiguousarray(image.transpose(1, 0, 2, 3))


def to_nchw(xp, out, bias=None):
    """The product (O, N, Ho, Wo) in NCHW order, plus bias (O,) or None. The bias is added by
    the copy into NCHW order: one pass instead of a copy and an add."""
    out_channels, n = out.shape[:2]
    nchw = out.transpose(1, 0, 2, 3)
    if bias is None:
        return xp.ascontiguousarray(nchw)
    result = xp.empty(nchw.shape, dtype=out.dtype)
    xp.add(nchw, bias.reshape(out_channels, 1, 1), out=result)
    return result


# ----- the forward computations, shared by the three records --------------------------------------


def _conv(xp, x, weight, stride, padding, dilation, groups, bias=None):
    """conv2d on arrays: x (N, C, H, W), weight (O, C/groups, kh, kw), bias (O,) or None ->
    (N, O, Ho, Wo).

    Each output value is the dot product of a filter with the window it sees, so the whole
    convolution is one product per group: filters (O/groups, C/groups * kh * kw) times columns
    (C/groups * kh * kw, N * Ho * Wo).
    """
    out_channels, kernel = weight.shape[0], weight.shape[2:]
    out_hw = output_hw(x.shape[2:], kernel, stride, padding, dilation)
    columns = im2col(xp, x, kernel, out_hw, stride, padding, dilation, groups)
    filters = weight.reshape(groups, out_channels // groups, -1)
    out = matmul_array(xp, filters, columns)  # (groups, O/groups, N * Ho * Wo)
    out = out.reshape((out_channels, x.shape[0]) + out_hw)
    return to_nchw(xp, out, bias)


def _conv_input_grad(xp, grad, weight, input_hw, stride, padding, dilation, groups):
    """The transposed convolution: grad (N, O, Ho, Wo), weight (O, C/groups, kh, kw) ->
    (N, C, H, W) with (H, W) = ``input_hw``. The filters, transposed, turn the output gradient
    into columns; col2im adds each column back onto the window it came from."""
    n, out_channels, ho, wo = grad.shape
    per_group_in, kh, kw = weight.shape[1:]
    filters = weight.reshape(groups, out_channels // groups, -1).swapaxes(-1, -2)
    cols = matmul_array(xp, filters, grad_rows(xp, grad, groups))  # (groups, K, N * Ho * Wo)
    cols = cols.reshape(groups * per_group_in, kh, kw, n, ho, wo)
    return col2im(xp, cols, input_hw, stride, padding, dilation)


def _conv_weight_grad(xp, x, grad, kernel, stride, padding, dilation, groups):
    """The weight gradient: x (N, C, H, W), grad (N, O, Ho, Wo) -> (O, C/groups, kh, kw), the
    output gradient times x's im2col columns."""
    channels, out_channels = x.shape[1], grad.shape[1]
    columns = im2col(xp, x, kernel, grad.shape[2:], stride, padding, dilation, groups)
    out = matmul_array(xp, grad_rows(xp, grad, groups), columns.swapaxes(-1, -2))
    return out.reshape((out_channels, channels // groups) + tuple(kernel))


# ----- the records --------------------------------------------------------------------------------


class Conv2d(Op):
    """2-D cross-correlation (what deep learning calls convolution), with an optional bias.

    x: (N, C, H, W), weight: (O, C/groups, kh, kw), bias: (O,) or absent -> (N, O, Ho, Wo), with
    Ho = floor((H + 2*ph - dh*(kh - 1) - 1) / sh) + 1 (likewise Wo).
    """

    name = "conv2d"
    autocast = "low"

    def check(self, x, weight, bias=None, *, stride, padding, dilation, groups):
        _check_image("conv2d", "input", x)
        _check_attrs("conv2d", stride, padding, dilation, groups)
        _check_weight("conv2d", weight, x.shape[1], groups, x.shape)
        _check_dtypes("conv2d", x, weight, ("input", "weight"))
        if bias is not None:
            if tuple(bias.shape) != (weight.shape[0],):
                raise ShapeError(
                    f"[conv2d] bias {tuple(bias.shape)} does not fit {weight.shape[0]} output "
                    f"channels (weight {tuple(weight.shape)}): expected ({weight.shape[0]},)"
                )
            _check_dtypes("conv2d", x, bias, ("input", "bias"))

        def shapes() -> str:
            attrs = _describe_attrs(stride, padding, dilation, groups)
            return f"input {tuple(x.shape)}, weight {tuple(weight.shape)}, {attrs}"

        _check_fits("conv2d", x.shape[2:], weight.shape[2:], stride, padding, dilation, shapes)

    def forward(self, ctx, xp, x, weight, bias=None, *, stride, padding, dilation, groups):
        return _conv(xp, x, weight, stride, padding, dilation, groups, bias)

    def infer(self, x, weight, bias=None, *, stride, padding, dilation, groups):
        _infer_check_ranks(self.name, x, weight)
        _infer_check_channels(self.name, x.shape[1], weight.shape[1] * groups, x, weight)
        out_hw = _infer_output_hw(
            self.name, x.shape[2:], weight.shape[2:], stride, padding, dilation
        )
        return ValueSpec((x.shape[0], weight.shape[0], *out_hw), x.dtype, x.device)

    def cost(self, x, weight, bias=None, *, stride, padding, dilation, groups):
        out = self.infer(
            x, weight, bias, stride=stride, padding=padding, dilation=dilation, groups=groups
        )
        # each output element is a dot product over (C/groups) * kh * kw input values
        flops = 2 * out.numel * prod(weight.shape[1:])
        if bias is not None:
            flops = flops + out.numel
        return flops, bytes_of(x, weight, bias), out.nbytes

    def backward(self, ctx, grad):
        x, weight, *rest = ctx.inputs
        attrs = ctx.attrs
        grad_x = grad_w = None
        if x.requires_grad:
            grad_x = conv2d_input_grad(grad, weight, tuple(x.shape[2:]), **attrs)
        if weight.requires_grad:
            grad_w = conv2d_weight_grad(x, grad, tuple(weight.shape[2:]), **attrs)
        if not rest:
            return grad_x, grad_w
        bias = rest[0]
        grad_b = SUM(grad, axes=(0, 2, 3), keepdims=False) if bias.requires_grad else None
        return grad_x, grad_w, grad_b

    def to_onnx(self, emit, inputs, output, attrs):
        (ph, pw), (sh, sw), (dh, dw) = attrs["padding"], attrs["stride"], attrs["dilation"]
        emit.node(
            "Conv",
            inputs,
            output,
            pads=[int(ph), int(pw), int(ph), int(pw)],
            strides=[int(sh), int(sw)],
            dilations=[int(dh), int(dw)],
            group=int(attrs["groups"]),
        )


class Conv2dRelu(ReluAfter, Conv2d):
    """``relu(conv2d(x, weight, bias))`` as one op: what the graph passes make of a convolution
    whose only reader is a ReLU (``graph/passes/layer_activation.py``), so that a kernel can
    rectify each block of outputs as it stores it, instead of a second pass over the whole
    output. Inputs, attributes and shapes as ``conv2d``'s.
    """

    name = "conv2d_relu"

    def forward(self, ctx, xp, x, weight, bias=None, *, stride, padding, dilation, groups):
        return xp.maximum(_conv(xp, x, weight, stride, padding, dilation, groups, bias), 0)


class Conv2dInputGrad(Op):
    """The transposed convolution (gradient of conv2d with respect to its input).

    grad: (N, O, Ho, Wo), weight: (O, C/groups, kh, kw) -> (N, C, H, W), (H, W) = ``input_size``,
    which must be an input size that conv2d maps to (Ho, Wo).
    """

    name = "conv2d_input_grad"

    def check(self, grad, weight, *, input_size, stride, padding, dilation, groups):
        _check_image("conv2d_input_grad", "input", grad)
        _check_attrs("conv2d_input_grad", stride, padding, dilation, groups)
        _check_weight("conv2d_input_grad", weight, None, groups, grad.shape)
        if grad.shape[1] != weight.shape[0]:
            raise ShapeError(
                f"[conv2d_input_grad] expected input with {weight.shape[0]} channels (weight "
                f"{tuple(weight.shape)}), got {tuple(grad.shape)}",
                help="the weight's first dimension must match the input's channel dimension",
            )
        _check_dtypes("conv2d_input_grad", grad, weight, ("input", "weight"))

        def shapes() -> str:
            return (
                f"input {tuple(grad.shape)}, weight {tuple(weight.shape)}, output size "
                f"{tuple(input_size)}, " + _describe_attrs(stride, padding, dilation, groups)
            )

        _check_fits(
            "conv2d_input_grad", input_size, weight.shape[2:], stride, padding, dilation, shapes
        )
        expected = output_hw(input_size, weight.shape[2:], stride, padding, dilation)
        if not _covers(expected, grad.shape[2:], stride, dilation):
            raise ShapeError(
                f"[conv2d_input_grad] output size {tuple(input_size)} does not fit: a convolution "
                f"of that size gives {expected}, not {tuple(grad.shape[2:])} ({shapes()})",
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
        # ConvTranspose with symmetric pads; the trailing rows and columns that a strided
        # convolution of input_size did not read are its output_padding (zeros, as in forward).
        # (ONNX's output_shape attribute would re-derive the pads, so it is not used.)
        padding, stride, dilation = attrs["padding"], attrs["stride"], attrs["dilation"]
        kernel = emit.shapes[inputs[1]][2:]
        grad_hw = emit.shapes[inputs[0]][2:]
        output_padding = []
        for a in range(2):
            reach = stride[a] * (grad_hw[a] - 1) + dilation[a] * (int(kernel[a]) - 1) + 1
            extra = simplify(attrs["input_size"][a] - reach + 2 * padding[a])
            if isinstance(extra, DimExpr):  # symbolic sizes that do not cancel out
                raise SymbolicSizeError(
                    f"[conv2d_input_grad] the output padding {extra!r} of output size "
                    f"{attrs['input_size'][a]!r} from input size {grad_hw[a]!r} is not a number",
                    help="give that dimension a fixed size in the TensorSpec",
                )
            output_padding.append(int(extra))
        emit.node(
            "ConvTranspose",
            list(inputs),
            output,
            pads=[int(padding[0]), int(padding[1]), int(padding[0]), int(padding[1])],
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
            d_grad = _crop_to(conv2d(upstream, weight, **attrs), grad.shape[2:])
        if weight.requires_grad:
            d_weight = conv2d_weight_grad(upstream, grad, tuple(weight.shape[2:]), **attrs)
        return d_grad, d_weight


class Conv2dWeightGrad(Op):
    """The gradient of conv2d with respect to its weight.

    x: (N, C, H, W), grad: (N, O, Ho, Wo) -> (O, C/groups, kh, kw), (kh, kw) = ``weight_size``.
    """

    name = "conv2d_weight_grad"

    def check(self, x, grad, *, weight_size, stride, padding, dilation, groups):
        op = "conv2d_weight_grad"
        _check_image(op, "input", x)
        _check_image(op, "output gradient", grad)
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
        if not _covers(
            output_hw(x.shape[2:], weight_size, stride, padding, dilation),
            grad.shape[2:],
            stride,
            dilation,
        ):
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
            d_x = conv2d_input_grad(grad, upstream, tuple(x.shape[2:]), **attrs)
        if grad.requires_grad:
            d_grad = _crop_to(conv2d(x, upstream, **attrs), grad.shape[2:])
        return d_x, d_grad


CONV2D, CONV2D_INPUT_GRAD, CONV2D_WEIGHT_GRAD = Conv2d(), Conv2dInputGrad(), Conv2dWeightGrad()
CONV2D_RELU = Conv2dRelu()


# The backward rules call the records through dispatch, so that they are recorded when a
# higher-order graph is being built.
def conv2d(x, weight, *, stride, padding, dilation, groups):
    return CONV2D(x, weight, stride=stride, padding=padding, dilation=dilation, groups=groups)


def conv2d_input_grad(grad, weight, input_size, *, stride, padding, dilation, groups):
    return CONV2D_INPUT_GRAD(
        grad,
        weight,
        input_size=tuple(input_size),
        stride=stride,
        padding=padding,
        dilation=dilation,
        groups=groups,
    )


def conv2d_weight_grad(x, grad, weight_size, *, stride, padding, dilation, groups):
    return CONV2D_WEIGHT_GRAD(
        x,
        grad,
        weight_size=tuple(weight_size),
        stride=stride,
        padding=padding,
        dilation=dilation,
        groups=groups,
    )

"""Faster kernels of the convolution records (``ops/conv.py``: ``conv2d``, ``conv2d_input_grad``,
``conv2d_weight_grad``), registered beside them. The records' im2col and one product per group
stay the reference; these compute the same values another way, each where it pays:

- ``*.direct`` (numba): float32 stride-1 convolutions with one group, on the register tiles of
  ``kernels/compiled/conv.py``: no im2col columns. With AVX2's 8-lane vectors and at least 8
  input channels, lanes over output channels and input values broadcast from a zero-padded
  copy (``conv_broadcast.py``); on small images of a whole vector of samples, lanes over
  samples, the taps that read only padding skipped (``sample_lanes.py``); otherwise lanes
  over positions, the input read in place. The input gradient is the correlation of the
  output gradient with the turned filters.
  They run where two of numba's threads are free, or where the im2col product would get no
  more threads than they do (one pool of one thread, or a product too small to cut); where
  they would get one thread and the product more, im2col runs.
  ``correlate`` and ``correlate_weight_grad`` below are their NumPy references.
- ``*.strided`` (numba): the forward and input gradient of float32 stride-2 convolutions that
  halve an even image (``kernels/compiled/conv_strided.py``): the input split into its four
  phase images (rows and columns of each parity), each tap one shift on one of them, summed by
  the same flat tiles, or by the channel-vector tiles where they take the call. Their weight gradient keeps im2col, whose one long product is faster.
- ``conv2d_weight_grad.winograd`` (``winograd.py``): 3x3 stride-1 weight gradients of layers
  of at least 64 channels and filters (16 with AVX2's 8 lanes; 32 channels and 64 filters at
  one thread) by Winograd's minimal filtering, 2.25 times fewer multiply-adds.
- ``*.depthwise``: one input channel per group, whose per-group products are tiny: in float32
  numba loops (``kernels/compiled/depthwise.py``), each plane copied once into the padded
  image's phase planes and each tap one contiguous loop over them; elsewhere whole-array
  multiply-adds per kernel offset, or one small contraction.
- ``conv2d_input_grad.grid``: stride-1 col2im as one contiguous add per kernel offset on the
  flat grid of ``kernels/conv_grid.py`` instead of a strided add.
- ``conv2d_relu.direct`` / ``.composed``: the convolution and the ReLU that graph passes join
  (``graph/passes/layer_activation.py``): the direct tiles storing max(sum, 0), else
  ``conv2d``'s kernels and the ReLU in place on their output.
- ``*.im2col``: the records' im2col (its columns made by a compiled twin where numba is
  there: one parallel pass, each input row read once for a kernel row's taps), the product
  routed as ``matmul.routed`` routes it (``products.matmul_array``: one pool, the own BLAS
  copy) and, for the weight gradient, the operand order OpenBLAS runs faster.

As in the records, a forward keeps no im2col columns: the weight gradient makes them again from
x (or reads x in place), so a step holds one convolution's columns at a time, not every layer's.
"""

from __future__ import annotations

from math import prod

import numpy as np

from ..backend.precision import gemm_result_dtype
from ..backend.threads import gemm_threads, one_pool
from ..ops import conv
from . import winograd_forward
from .kernels import compiled
from .kernels.activations import relu
from .kernels.compiled import compiled_twin
from .kernels.conv_grid import grid_col2im, grid_for, to_grid
from .kernels.split import elementwise
from .products import BLAS_THREADED_MULTIPLY_ADDS, SPLIT_MULTIPLY_ADDS, einsum_array
from .products import matmul_array as product
from .registry import register, run_accelerated
from .winograd import fits as winograd_weight_grad_fits
from .winograd import registered_weight_grad as winograd_weight_grad

# The im2col forward's product sums its inner dimension in parts at most this long
# (``_product_in_parts``).
PART = 144
# The im2col weight gradient's product sums its inner dimension in blocks this long or longer,
# at most this many blocks (``_blocked_product``).
INNER_BLOCK = 64
INNER_BLOCKS = 16
MOST_BLOCKED_OUTPUTS = 1 << 18
# Direct twins need this many threads, or one if im2col's product is not cut (a cut one is faster).
DIRECT_MIN_THREADS = 2
# The direct weight gradient runs on images of more positions than this: on smaller ones each
# of its tiles sums too few positions between setting up and summing its lanes, and im2col's
# one long product is faster (ResNet-18's 8x8 and 4x4 stages).
DIRECT_WEIGHT_GRAD_MIN_POSITIONS = 64
# With AVX2's 8-lane tiles the direct weight gradient runs for inputs of at most this many
# channels (an image's 1 to 4): from 8 channels on, im2col's product or Winograd's is faster
# there (performance.md). AVX-512's 16-lane tiles take any channel count.
DIRECT_WEIGHT_GRAD_MOST_CHANNELS_AVX2 = 4


_FLOAT32 = np.dtype(np.float32)  # (``is`` against it: ``== np.float32`` converts each time)


# ----- direct convolution (numba) -----------------------------------------------------------------


@compiled_twin("conv.correlate", params=("padding",))
def correlate(xp, x, taps, bias, out, *, padding) -> None:
    """out (N, O, Ho, Wo) = x (N, C, H, W) correlated with taps (O, C, kh, kw) at stride 1
    with zero padding ``padding``, plus bias (O,) or None: the reference of the direct twin."""
    out[...] = conv._conv(xp, x, taps, (1, 1), padding, (1, 1), 1, bias)


@compiled_twin("conv.correlate_rectified", params=("padding",))
def correlate_rectified(xp, x, taps, bias, out, *, padding) -> None:
    """out = max(``correlate``'s output, 0): a convolution and the ReLU that reads it, the
    reference of the direct twin that rectifies each tile of outputs as it stores it."""
    correlate(xp, x, taps, bias, out, padding=padding)
    xp.maximum(out, 0, out=out)


@compiled_twin("conv.correlate_turned", params=("padding",))
def correlate_turned(xp, grad, weight, out, *, padding) -> None:
    """out (N, C, H, W) = grad (N, O, Ho, Wo) correlated with the filters of weight (O, C, kh,
    kw) turned (O and C swapped, each kernel turned half a circle): the input gradient of a
    stride-1 convolution with padding ``kernel - 1 - padding``. The reference of its twin."""
    turned = xp.ascontiguousarray(weight[:, :, ::-1, ::-1].transpose(1, 0, 2, 3))
    correlate(xp, grad, turned, None, out, padding=padding)


@compiled_twin("conv.correlate_weight_grad", params=("padding",))
def correlate_weight_grad(xp, x, grad, out, *, padding) -> None:
    """out (O, C, kh, kw) = the weight gradient of ``correlate`` for x (N, C, H, W) and the
    output gradient (N, O, Ho, Wo): the reference of the direct twin."""
    out[...] = conv._conv_weight_grad(xp, x, grad, out.shape[2:], (1, 1), padding, (1, 1), 1)


def _direct_fits(
    xp, first, second, stride, dilation, groups, outputs: int, multiply_adds: int, step=1
) -> bool:
    """float32 NumPy arrays multiplied as stored (``_as_stored``), stride ``step``, no
    dilation, one group, and ``DIRECT_MIN_THREADS`` of numba's threads free now for
    ``outputs`` output values, or as many as im2col's product of ``multiply_adds`` would get
    (one thread each: the register tiles beat the product's GEMM)."""
    if not (
        xp is np
        and first.dtype is _FLOAT32
        and second.dtype is _FLOAT32
        and tuple(stride) == (step, step)
        and tuple(dilation) == (1, 1)
        and groups == 1
        and _as_stored(first, second)
    ):
        return False
    threads = compiled.thread_count(first.size + second.size + outputs)
    return threads >= DIRECT_MIN_THREADS or _product_on_one_thread(multiply_adds)


def _product_on_one_thread(multiply_adds: int) -> bool:
    """Whether im2col's product of ``multiply_adds`` would run on one thread: in one pool, of
    one thread or below the size cut across threads; outside it, below the size NumPy's BLAS
    threads."""
    if one_pool():
        return gemm_threads() == 1 or multiply_adds < SPLIT_MULTIPLY_ADDS
    return multiply_adds <= BLAS_THREADED_MULTIPLY_ADDS


def _direct_conv_fits(xp, x, weight, bias=None, *, stride, padding, dilation, groups):
    out_hw = conv.output_hw(x.shape[2:], weight.shape[2:], stride, padding, dilation)
    outputs = x.shape[0] * weight.shape[0] * prod(out_hw)
    multiply_adds = outputs * prod(weight.shape[1:])
    return _direct_fits(xp, x, weight, stride, dilation, groups, outputs, multiply_adds)


def _direct_conv(ctx, xp, x, weight, bias=None, *, stride, padding, dilation, groups):
    return _direct(correlate, x, weight, bias, stride, padding, dilation)


def _direct(kernel, x, weight, bias, stride, padding, dilation):
    """``kernel``'s twin (``correlate`` or ``correlate_rectified``) into a new output, or
    NotImplemented where the twin does not run."""
    out_hw = conv.output_hw(x.shape[2:], weight.shape[2:], stride, padding, dilation)
    out = np.empty((x.shape[0], weight.shape[0]) + out_hw, np.float32)
    # numba's threads for the multiply-adds it makes, many per element of its arrays
    work = out.size * prod(weight.shape[1:])
    if compiled.run(kernel, (x, weight, bias, out), {"padding": tuple(padding)}, work):
        return out
    return NotImplemented


# ----- a convolution and the ReLU after it (``conv2d_relu``) ---------------------------------------


def _direct_conv_relu_fits(xp, x, weight, bias=None, *, stride, padding, dilation, groups):
    """Where ``conv2d.direct`` would compute the convolution: not where Winograd's runs first."""
    attrs = dict(stride=stride, padding=padding, dilation=dilation, groups=groups)
    return _direct_conv_fits(xp, x, weight, bias, **attrs) and not (
        winograd_forward.forward_fits(xp, x, weight, bias, **attrs)
    )


def _direct_conv_relu(ctx, xp, x, weight, bias=None, *, stride, padding, dilation, groups):
    return _direct(correlate_rectified, x, weight, bias, stride, padding, dilation)


def _conv_then_relu(ctx, xp, x, weight, bias=None, **attrs):
    """The convolution as ``conv2d``'s kernels compute it, then the ReLU in place on it (a new
    array no one else holds)."""
    arrays = (x, weight) if bias is None else (x, weight, bias)
    out = run_accelerated(conv.CONV2D, ctx, xp, arrays, attrs)
    elementwise(xp, relu, (out,), (out,))
    return out


def _turned_padding(weight, padding) -> tuple:
    """The padding of the input gradient as a correlation with the turned filters."""
    return (weight.shape[2] - 1 - padding[0], weight.shape[3] - 1 - padding[1])


def _direct_input_grad_fits(xp, grad, weight, *, input_size, stride, padding, dilation, groups):
    full_hw = conv.output_hw(input_size, weight.shape[2:], stride, padding, dilation)
    outputs = grad.shape[0] * weight.shape[1] * prod(input_size)
    multiply_adds = grad.size * prod(weight.shape[1:])
    return (
        full_hw == tuple(grad.shape[2:])
        and min(_turned_padding(weight, padding)) >= 0
        and _direct_fits(xp, grad, weight, stride, dilation, groups, outputs, multiply_adds)
    )


def _direct_input_grad(ctx, xp, grad, weight, *, input_size, stride, padding, dilation, groups):
    # The correlation of the output gradient with the turned filters (O and C swapped).
    out = np.empty((grad.shape[0], weight.shape[1]) + tuple(input_size), np.float32)
    turn = _turned_padding(weight, padding)
    if compiled.run(correlate_turned, (grad, weight, out), {"padding": turn}):
        return out
    return NotImplemented


def _direct_weight_grad_fits(xp, x, grad, *, weight_size, stride, padding, dilation, groups):
    full_hw = conv.output_hw(x.shape[2:], weight_size, stride, padding, dilation)
    outputs = grad.shape[1] * prod(x.shape[1:])  # (O, C, kh, kw) values, each over every position
    multiply_adds = grad.size * x.shape[1] * prod(weight_size)
    return (
        full_hw == tuple(grad.shape[2:])
        and prod(x.shape[2:]) > DIRECT_WEIGHT_GRAD_MIN_POSITIONS
        and _direct_fits(xp, x, grad, stride, dilation, groups, outputs, multiply_adds)
        and (x.shape[1] <= DIRECT_WEIGHT_GRAD_MOST_CHANNELS_AVX2 or compiled.vector_lanes() != 8)
    )


def _direct_weight_grad(ctx, xp, x, grad, *, weight_size, stride, padding, dilation, groups):
    out = np.empty((grad.shape[1], x.shape[1]) + tuple(weight_size), np.float32)
    if compiled.run(correlate_weight_grad, (x, grad, out), {"padding": tuple(padding)}):
        return out
    return NotImplemented


# ----- stride 2 on phase images (numba) ----------------------------------------------------------


@compiled_twin("conv_strided.correlate", params=("padding",))
def correlate_strided(xp, x, taps, bias, out, *, padding) -> None:
    """out (N, O, H/2, W/2) = x (N, C, H, W) convolved with taps (O, C, kh, kw) at stride 2
    with zero padding ``padding``, plus bias (O,) or None: the reference of its twin, which
    splits x into its four phase images and runs the stride-1 flat tiles on them."""
    out[...] = conv._conv(xp, x, taps, (2, 2), padding, (1, 1), 1, bias)


@compiled_twin("conv_strided.correlate_transposed", params=("padding",))
def correlate_strided_transposed(xp, grad, weight, out, *, padding) -> None:
    """out (N, C, H, W) = the input gradient of ``correlate_strided`` for the output gradient
    grad (N, O, H/2, W/2) and weight (O, C, kh, kw): the reference of its twin."""
    out[...] = conv._conv_input_grad(xp, grad, weight, out.shape[2:], (2, 2), padding, (1, 1), 1)


def _halves(size, kernel, padding) -> bool:
    """Whether a stride-2 convolution maps an even (H, W) to exactly (H/2, W/2): then every
    output position's window reads the four phase images at the output's own grid."""
    return all(s % 2 == 0 for s in size) and conv.output_hw(
        size, kernel, (2, 2), padding, (1, 1)
    ) == tuple(s // 2 for s in size)


def _strided_conv_fits(xp, x, weight, bias=None, *, stride, padding, dilation, groups):
    outputs = x.size // x.shape[1] // 4 * weight.shape[0]
    multiply_adds = outputs * prod(weight.shape[1:])
    return _halves(x.shape[2:], weight.shape[2:], padding) and _direct_fits(
        xp, x, weight, stride, dilation, groups, outputs, multiply_adds, step=2
    )


def _strided_conv(ctx, xp, x, weight, bias=None, *, stride, padding, dilation, groups):
    out = np.empty((x.shape[0], weight.shape[0], x.shape[2] // 2, x.shape[3] // 2), np.float32)
    if compiled.run(correlate_strided, (x, weight, bias, out), {"padding": tuple(padding)}):
        return out
    return NotImplemented


def _strided_input_grad_fits(xp, grad, weight, *, input_size, stride, padding, dilation, groups):
    outputs = grad.shape[0] * weight.shape[1] * prod(input_size)
    multiply_adds = grad.size * prod(weight.shape[1:])
    return (
        _halves(input_size, weight.shape[2:], padding)
        and tuple(grad.shape[2:]) == tuple(s // 2 for s in input_size)
        and _direct_fits(xp, grad, weight, stride, dilation, groups, outputs, multiply_adds, 2)
    )


def _strided_input_grad(ctx, xp, grad, weight, *, input_size, stride, padding, dilation, groups):
    out = np.empty((grad.shape[0], weight.shape[1]) + tuple(input_size), np.float32)
    keywords = {"padding": tuple(padding)}
    if compiled.run(correlate_strided_transposed, (grad, weight, out), keywords):
        return out
    return NotImplemented


# ----- depthwise ----------------------------------------------------------------------------------


def _as_stored(first, second) -> bool:
    """Whether the records' products multiply these operands as they are stored: not where the
    math precision in force rounds float32 operands first (``set_float32_matmul_precision``),
    nor half-precision ones, which they multiply in float32. The kernels here multiply in the
    operands' own dtype, so they leave those calls to the records."""
    return gemm_result_dtype(first, second) is None


def _is_depthwise(weight_shape, groups: int) -> bool:
    """One input channel per group, several groups: per-group products would have an inner size
    of only kh * kw."""
    return groups > 1 and weight_shape[1] == 1


def _depthwise_conv_fits(xp, x, weight, bias=None, *, stride, padding, dilation, groups):
    return _is_depthwise(weight.shape, groups) and _as_stored(x, weight)


def _depthwise_conv(ctx, xp, x, weight, bias=None, *, stride, padding, dilation, groups):
    kernel = weight.shape[2:]
    out_hw = conv.output_hw(x.shape[2:], kernel, stride, padding, dilation)
    out = xp.empty((x.shape[0], weight.shape[0]) + out_hw, dtype=x.dtype)
    return _twin_or_reference(xp, depthwise_correlate, (x, weight, bias), out, stride, padding,
                              dilation)  # fmt: skip


def _twin_or_reference(xp, kernel, arrays, out, stride, padding, dilation):
    """``out``, computed by ``kernel`` (through its compiled twin where that takes the arrays:
    ``compiled.call``), with the geometry as its keywords."""
    geometry = {"stride": tuple(stride), "padding": tuple(padding), "dilation": tuple(dilation)}
    compiled.call(xp, kernel, [*arrays, out], **geometry)
    return out


# from 1024 elements: the reference's per-tap passes cost more than the twin's call
@compiled_twin("depthwise.correlate", params=("stride", "padding", "dilation"), min_work=1 << 10)
def depthwise_correlate(xp, x, weight, bias, out, *, stride, padding, dilation) -> None:
    """out (N, O, Ho, Wo) = the depthwise convolution of x (N, C, H, W) with weight (O, 1, kh,
    kw), O a multiple of C, plus bias (O,) or None: whole-array multiply-adds, one per kernel
    offset, over the windows view. The reference of its twin."""
    n, out_channels, groups = x.shape[0], weight.shape[0], x.shape[1]
    kernel, out_hw = weight.shape[2:], out.shape[2:]
    view = conv.windows(xp, conv.pad_image(xp, x, padding), kernel, out_hw, stride, dilation)
    per_group = out_channels // groups
    taps = weight.reshape(1, groups, per_group, kernel[0], kernel[1], 1, 1)
    grouped = out.reshape((n, groups, per_group) + tuple(out_hw))
    grouped[...] = 0
    for i in range(kernel[0]):
        for j in range(kernel[1]):
            grouped += taps[:, :, :, i, j] * view[:, :, None, i, j]
    if bias is not None:
        out += bias.reshape(out_channels, 1, 1)


def _depthwise_input_grad_fits(xp, grad, weight, *, input_size, stride, padding, dilation, groups):
    return _is_depthwise(weight.shape, groups) and _as_stored(grad, weight)


def _depthwise_input_grad(ctx, xp, grad, weight, *, input_size, stride, padding, dilation, groups):
    dtype = xp.result_type(grad.dtype, weight.dtype)
    out = xp.empty((grad.shape[0], groups) + tuple(input_size), dtype=dtype)
    return _twin_or_reference(xp, depthwise_input_grad, (grad, weight), out, stride, padding,
                              dilation)  # fmt: skip


@compiled_twin(
    "depthwise.depthwise_input_grad", params=("stride", "padding", "dilation"), min_work=1 << 10
)
def depthwise_input_grad(xp, grad, weight, out, *, stride, padding, dilation) -> None:
    """out (N, C, H, W) = the gradient of a depthwise convolution's input from grad (N, O, Ho,
    Wo) and weight (O, 1, kh, kw), O a multiple of C: each output channel's taps times grad as
    one small contraction, then col2im adds the windows back into the image. The reference of
    its twin."""
    # cols[n, g, i, j] = sum_o w[g, o, i, j] * grad[n, g, o]
    n, out_channels, ho, wo = grad.shape
    groups = out.shape[1]
    kh, kw = weight.shape[2:]
    grouped = grad.reshape(n, groups, out_channels // groups, ho, wo)
    taps = weight.reshape(groups, out_channels // groups, kh, kw)
    cols = einsum_array(xp, "ngohw,goij->gijnhw", grouped, taps)
    out[...] = conv.col2im(xp, cols, out.shape[2:], stride, padding, dilation)


def _depthwise_weight_grad_fits(xp, x, grad, *, weight_size, stride, padding, dilation, groups):
    return _is_depthwise((grad.shape[1], x.shape[1] // groups), groups) and _as_stored(x, grad)


def _depthwise_weight_grad(ctx, xp, x, grad, *, weight_size, stride, padding, dilation, groups):
    dtype = xp.result_type(x.dtype, grad.dtype)
    out = xp.empty((grad.shape[1], 1) + tuple(weight_size), dtype=dtype)
    return _twin_or_reference(xp, depthwise_weight_grad, (x, grad), out, stride, padding,
                              dilation)  # fmt: skip


@compiled_twin(
    "depthwise.depthwise_weight_grad", params=("stride", "padding", "dilation"), min_work=1 << 10
)
def depthwise_weight_grad(xp, x, grad, out, *, stride, padding, dilation) -> None:
    """out (O, 1, kh, kw) = the gradient of a depthwise convolution's weight from x (N, C, H,
    W) and grad (N, O, Ho, Wo), O a multiple of C: one contraction of grad with the windows
    view of the padded image. The reference of its twin."""
    n, out_channels = grad.shape[:2]
    groups = x.shape[1]
    weight_size, out_hw = out.shape[2:], grad.shape[2:]
    view = conv.windows(xp, conv.pad_image(xp, x, padding), weight_size, out_hw, stride, dilation)
    grouped = grad.reshape((n, groups, out_channels // groups) + tuple(out_hw))
    sums = einsum_array(xp, "ngohw,ngijhw->goij", grouped, view)
    out[...] = sums.reshape(out.shape)


# ----- stride-1 input gradient on the flat grid ---------------------------------------------------


def _grid_for_call(grad, weight, input_size, stride, padding, dilation):
    kernel = weight.shape[2:]
    full_hw = conv.output_hw(input_size, kernel, stride, padding, dilation)
    return grid_for(grad.shape[0], input_size, kernel, full_hw, stride, padding, dilation)


def _grid_input_grad_fits(xp, grad, weight, *, input_size, stride, padding, dilation, groups):
    return _grid_for_call(grad, weight, input_size, stride, padding, dilation) is not None


def _grid_input_grad(ctx, xp, grad, weight, *, input_size, stride, padding, dilation, groups):
    out_channels, per_group_in, kh, kw = weight.shape
    grid = _grid_for_call(grad, weight, input_size, stride, padding, dilation)
    filters = weight.reshape(groups, out_channels // groups, -1).swapaxes(-1, -2)
    rows = grid.positions(to_grid(xp, grad, grid))
    rows = rows.reshape(groups, out_channels // groups, grid.length)
    cols = product(xp, filters, rows)  # (groups, K, grid.length)
    return grid_col2im(xp, cols.reshape(groups * per_group_in, kh, kw, -1), grid)


# ----- im2col with routed products ----------------------------------------------------------------


def _always(xp, *arrays, **attrs) -> bool:
    return True


@compiled_twin("conv.im2col", params=("stride", "padding", "dilation"))
def columns_of(xp, x, out, *, stride, padding, dilation) -> None:
    """out (C, kh, kw, N, Ho, Wo) = the im2col columns of x (N, C, H, W), the record's
    ``conv.im2col``: the reference of the compiled twin, which reads each input row once for a
    kernel row's taps, on every thread (the record's strided copy runs on one)."""
    kernel, out_hw = out.shape[1:3], out.shape[4:]
    out[...] = conv.im2col(xp, x, kernel, out_hw, stride, padding, dilation, 1).reshape(out.shape)


def _im2col(xp, x, kernel, out_hw, stride, padding, dilation, groups):
    """``conv.im2col``'s columns (groups, C/groups * kh * kw, N * Ho * Wo): by the compiled
    twin where it takes x (float32) and the kernel is wider than one column (one column's
    strided reads are no interleaved access: the record's copy is as fast), else by the record."""
    if xp is np and x.dtype == np.float32 and kernel[1] > 1:
        n, c = x.shape[:2]
        out = np.empty((c,) + tuple(kernel) + (n,) + tuple(out_hw), np.float32)
        keywords = {"stride": tuple(stride), "padding": tuple(padding),
                    "dilation": tuple(dilation)}  # fmt: skip
        if compiled.run(columns_of, (x, out), keywords):
            return out.reshape(groups, -1, n * out_hw[0] * out_hw[1])
    return conv.im2col(xp, x, kernel, out_hw, stride, padding, dilation, groups)


def _im2col_conv(ctx, xp, x, weight, bias=None, *, stride, padding, dilation, groups):
    out_channels, kernel = weight.shape[0], weight.shape[2:]
    out_hw = conv.output_hw(x.shape[2:], kernel, stride, padding, dilation)
    columns = _im2col(xp, x, kernel, out_hw, stride, padding, dilation, groups)
    out = _product_in_parts(xp, weight.reshape(groups, out_channels // groups, -1), columns)
    return conv.to_nchw(xp, out.reshape((out_channels, x.shape[0]) + out_hw), bias)


def _product_in_parts(xp, left, right):
    """left (..., m, k) @ right (..., k, n) as the sum of the products of parts of the inner
    dimension at most ``PART`` long, each part's float32 sum started from zero: BLAS adds up
    to a few hundred products into one accumulator. Each part after the first costs one pass
    over the output."""
    length = left.shape[-1]
    parts = -(-length // PART)
    step = -(-length // parts)
    out = product(xp, left[..., :step], right[..., :step, :])
    for start in range(step, length, step):
        out += product(xp, left[..., start : start + step], right[..., start : start + step, :])
    return out


def _im2col_input_grad(ctx, xp, grad, weight, *, input_size, stride, padding, dilation, groups):
    n, out_channels, ho, wo = grad.shape
    per_group_in, kh, kw = weight.shape[1:]
    filters = weight.reshape(groups, out_channels // groups, -1).swapaxes(-1, -2)
    cols = product(xp, filters, conv.grad_rows(xp, grad, groups))
    cols = cols.reshape(groups * per_group_in, kh, kw, n, ho, wo)
    return conv.col2im(xp, cols, input_size, stride, padding, dilation)


def _im2col_weight_grad(ctx, xp, x, grad, *, weight_size, stride, padding, dilation, groups):
    channels, out_channels = x.shape[1], grad.shape[1]
    columns = _im2col(xp, x, weight_size, grad.shape[2:], stride, padding, dilation, groups)
    rows = conv.grad_rows(xp, grad, groups)
    # With the inner dimension (every position of every sample) at least as long as the
    # columns' rows, OpenBLAS runs the product faster with the columns as its left operand
    # (a transposed result: a small copy).
    if columns.shape[-1] >= columns.shape[-2]:
        out = _blocked_product(xp, columns, rows.swapaxes(-1, -2)).swapaxes(-1, -2)
    else:
        out = _blocked_product(xp, rows, columns.swapaxes(-1, -2))
    return out.reshape((out_channels, channels // groups) + tuple(weight_size))


def _blocked_product(xp, left, right):
    """left (g, m, k) @ right (g, k, n) as products of blocks of the inner dimension, added up:
    a weight gradient's inner dimension (every position of every sample) is long, and a
    float32 sum's rounding grows with the terms added to one accumulator. The blocks, at most
    ``INNER_BLOCKS`` of at least ``INNER_BLOCK``, are one stack of products (views, no copy),
    for outputs of up to ``MOST_BLOCKED_OUTPUTS`` values: one output per block costs memory
    traffic that a larger output does not repay."""
    (rows, length), columns = left.shape[-2:], right.shape[-1]
    count = min(INNER_BLOCKS, length // INNER_BLOCK)
    if rows * columns > MOST_BLOCKED_OUTPUTS:
        count = 1
    while count > 1 and length % count:
        count -= 1
    if count <= 1:
        return product(xp, left, right)
    block = length // count
    out = xp.empty(left.shape[:-1] + right.shape[-1:], left.dtype)
    for entry in range(left.shape[0]):
        blocks = left[entry].reshape(rows, count, block).swapaxes(0, 1)  # (count, m, block)
        partial = product(xp, blocks, right[entry].reshape(count, block, -1))
        xp.sum(partial, axis=0, out=out[entry])
    return out


# ----- registrations, in the order they are tried -------------------------------------------------

NUMBA = ("numba",)
register(
    conv.CONV2D,
    winograd_forward.forward_fits,
    winograd_forward.registered_forward,
    name="conv2d.winograd",
    requires=NUMBA,
    description="3x3 stride-1 convolution of 64 channels and filters by Winograd's F(2x2, 3x3), "
    "with AVX2's tiles: 16 products over the transformed tiles, 2.25x fewer multiply-adds",
)
register(
    conv.CONV2D,
    _direct_conv_fits,
    _direct_conv,
    name="conv2d.direct",
    requires=NUMBA,
    description="float32 stride-1 one-group convolution on register tiles, no im2col",
)
register(
    conv.CONV2D,
    _strided_conv_fits,
    _strided_conv,
    name="conv2d.strided",
    requires=NUMBA,
    description="float32 stride-2 convolution halving an even image: the flat tiles on its "
    "four phase images",
)
register(
    conv.CONV2D,
    _depthwise_conv_fits,
    _depthwise_conv,
    name="conv2d.depthwise",
    description="depthwise convolution, per tap one loop over padded phase planes (compiled)",
)
register(
    conv.CONV2D,
    _always,
    _im2col_conv,
    name="conv2d.im2col",
    description="im2col with its product routed as matmul.routed",
)

register(
    conv.CONV2D_RELU,
    _direct_conv_relu_fits,
    _direct_conv_relu,
    name="conv2d_relu.direct",
    requires=NUMBA,
    description="the direct convolution's register tiles, storing max(sum, 0)",
)
register(
    conv.CONV2D_RELU,
    _always,
    _conv_then_relu,
    name="conv2d_relu.composed",
    description="conv2d's kernels, then the ReLU in place on their output",
)

register(
    conv.CONV2D_INPUT_GRAD,
    winograd_forward.input_grad_fits,
    winograd_forward.registered_input_grad,
    name="conv2d_input_grad.winograd",
    requires=NUMBA,
    description="the 3x3 stride-1 input gradient of 64 channels and filters by Winograd's "
    "F(2x2, 3x3) on the turned filters, with AVX2's tiles",
)
register(
    conv.CONV2D_INPUT_GRAD,
    _direct_input_grad_fits,
    _direct_input_grad,
    name="conv2d_input_grad.direct",
    requires=NUMBA,
    description="the turned filters' direct correlation on register tiles",
)
register(
    conv.CONV2D_INPUT_GRAD,
    _strided_input_grad_fits,
    _strided_input_grad,
    name="conv2d_input_grad.strided",
    requires=NUMBA,
    description="the stride-2 input gradient, phase image by phase image on the flat tiles",
)
register(
    conv.CONV2D_INPUT_GRAD,
    _depthwise_input_grad_fits,
    _depthwise_input_grad,
    name="conv2d_input_grad.depthwise",
    description="depthwise input gradient, per tap one loop into padded phase planes (compiled)",
)
register(
    conv.CONV2D_INPUT_GRAD,
    _grid_input_grad_fits,
    _grid_input_grad,
    name="conv2d_input_grad.grid",
    description="stride-1 col2im as contiguous adds on a flat grid",
)
register(
    conv.CONV2D_INPUT_GRAD,
    _always,
    _im2col_input_grad,
    name="conv2d_input_grad.im2col",
    description="col2im with its product routed as matmul.routed",
)

register(
    conv.CONV2D_WEIGHT_GRAD,
    winograd_weight_grad_fits,
    winograd_weight_grad,
    name="conv2d_weight_grad.winograd",
    requires=NUMBA,
    description="3x3 stride-1 weight gradient of layers of 64 channels or more (16 with AVX2's "
    "tiles) by Winograd's F(2x2, 3x3): 16 products over the transformed tiles, 2.25x fewer "
    "multiply-adds",
)
register(
    conv.CONV2D_WEIGHT_GRAD,
    _direct_weight_grad_fits,
    _direct_weight_grad,
    name="conv2d_weight_grad.direct",
    requires=NUMBA,
    description="float32 stride-1 weight gradient on register tiles, reading x in place",
)
register(
    conv.CONV2D_WEIGHT_GRAD,
    _depthwise_weight_grad_fits,
    _depthwise_weight_grad,
    name="conv2d_weight_grad.depthwise",
    description="depthwise weight gradient, per sample and tap one dot product (compiled)",
)
register(
    conv.CONV2D_WEIGHT_GRAD,
    _always,
    _im2col_weight_grad,
    name="conv2d_weight_grad.im2col",
    description="im2col with its product routed as matmul.routed, faster operand order",
)

"""The convolution primitives (conv2d and its two adjoints) against PyTorch in float64: values,
gradients, second derivatives and finite differences; and every error they raise."""

import numpy as np
import pytest

import buildingai as bai
import buildingai.nn.functional as F
from buildingai.ops import conv as ops
from tests.helpers import check_op

torch = pytest.importorskip("torch")
TF = torch.nn.functional

# (input shape, weight shape, keyword arguments): small, so that gradgradcheck stays fast.
CONV2D_CASES = [
    ((2, 3, 7, 6), (4, 3, 3, 3), {}),
    ((2, 3, 7, 6), (4, 3, 3, 3), {"padding": 1}),
    ((2, 3, 7, 6), (4, 3, 3, 2), {"stride": 2}),
    ((2, 3, 7, 6), (4, 3, 3, 3), {"stride": 2, "padding": 1}),
    ((2, 3, 7, 6), (4, 3, 3, 2), {"stride": (2, 1), "padding": (1, 0)}),
    ((2, 3, 7, 6), (4, 3, 3, 3), {"dilation": 2, "padding": 1}),
    ((2, 3, 7, 6), (4, 3, 1, 1), {}),
    ((2, 3, 7, 6), (4, 3, 3, 3), {"padding": "same"}),
    ((2, 3, 7, 6), (4, 3, 2, 2), {"padding": "same"}),  # asymmetric: one more on the right
    ((2, 3, 7, 6), (4, 3, 3, 2), {"padding": "same", "dilation": 2}),
    ((2, 3, 7, 6), (4, 3, 3, 3), {"padding": "valid"}),
    ((2, 6, 5, 6), (6, 2, 3, 3), {"groups": 3, "padding": 1}),
    ((2, 3, 5, 6), (3, 1, 3, 3), {"groups": 3, "padding": 1}),  # depthwise
    ((2, 3, 5, 6), (6, 1, 3, 2), {"groups": 3, "stride": 2, "dilation": (1, 2)}),  # multiplier 2
    ((1, 1, 4, 4), (2, 1, 4, 4), {}),  # kernel as large as the input: 1x1 output
    ((2, 3, 1, 6), (2, 3, 1, 3), {}),  # height 1
    # Stride 1 with an output larger than the input, no padding with dilation, padding wider than
    # the kernel's reach along one axis only (edges of the flat col2im grid of accel/convolution).
    ((2, 3, 4, 5), (2, 3, 1, 1), {"padding": 2}),
    ((2, 3, 7, 6), (4, 3, 2, 3), {"dilation": (2, 1)}),
    ((2, 3, 5, 6), (4, 3, 3, 2), {"padding": (0, 3), "dilation": (1, 2)}),
]


@pytest.mark.parametrize("x_shape, w_shape, kwargs", CONV2D_CASES, ids=str)
def test_conv2d_matches_pytorch(x_shape, w_shape, kwargs):
    check_op(
        lambda x, w: F.conv2d(x, w, **kwargs),
        x_shape,
        w_shape,
        torch_fn=lambda x, w: TF.conv2d(x, w, **kwargs),
        gradgrad=True,
    )


def test_conv2d_with_bias_and_unbatched_input():
    check_op(
        lambda x, w, b: F.conv2d(x, w, b, padding=1),
        (3, 5, 4),
        (2, 3, 3, 3),
        (2,),
        torch_fn=lambda x, w, b: TF.conv2d(x, w, b, padding=1),
        gradgrad=True,
    )


def test_conv2d_zero_batch():
    check_op(
        lambda x, w: F.conv2d(x, w, padding=1),
        (0, 3, 5, 4),
        (2, 3, 3, 3),
        torch_fn=lambda x, w: TF.conv2d(x, w, padding=1),
        gradcheck=False,
    )


CONV1D_CASES = [
    ((2, 3, 9), (4, 3, 3), {}),
    ((2, 3, 9), (4, 3, 3), {"stride": 2, "padding": 1, "dilation": 2}),
    ((2, 4, 9), (4, 2, 2), {"groups": 2, "padding": "same"}),
    ((3, 9), (2, 3, 3), {"padding": "valid"}),
]


@pytest.mark.parametrize("x_shape, w_shape, kwargs", CONV1D_CASES, ids=str)
def test_conv1d_matches_pytorch(x_shape, w_shape, kwargs):
    check_op(
        lambda x, w, b: F.conv1d(x, w, b, **kwargs),
        x_shape,
        w_shape,
        (w_shape[0],),
        torch_fn=lambda x, w, b: TF.conv1d(x, w, b, **kwargs),
        gradgrad=True,
    )


# (input shape, weight shape (in, out/groups, kh, kw), keyword arguments)
TRANSPOSE_CASES = [
    ((2, 3, 4, 3), (3, 2, 3, 3), {}),
    ((2, 3, 4, 3), (3, 2, 3, 3), {"stride": 2, "padding": 1, "output_padding": 1}),
    ((2, 3, 4, 3), (3, 2, 3, 2), {"stride": (2, 1), "output_padding": (1, 0)}),
    ((2, 4, 3, 3), (4, 1, 3, 3), {"groups": 2, "stride": 2}),
    ((2, 3, 4, 3), (3, 2, 2, 3), {"dilation": 2, "padding": 1, "output_padding": 1}),
    ((3, 4, 3), (3, 2, 3, 3), {"padding": 1}),
]


@pytest.mark.parametrize("x_shape, w_shape, kwargs", TRANSPOSE_CASES, ids=str)
def test_conv_transpose2d_matches_pytorch(x_shape, w_shape, kwargs):
    groups = kwargs.get("groups", 1)
    check_op(
        lambda x, w, b: F.conv_transpose2d(x, w, b, **kwargs),
        x_shape,
        w_shape,
        (w_shape[1] * groups,),
        torch_fn=lambda x, w, b: TF.conv_transpose2d(x, w, b, **kwargs),
        gradgrad=True,
    )


def test_conv_transpose1d_matches_pytorch():
    kwargs = {"stride": 2, "padding": 1, "output_padding": 1, "dilation": 1}
    check_op(
        lambda x, w, b: F.conv_transpose1d(x, w, b, **kwargs),
        (2, 3, 5),
        (3, 2, 3),
        (2,),
        torch_fn=lambda x, w, b: TF.conv_transpose1d(x, w, b, **kwargs),
        gradgrad=True,
    )


def test_weight_grad_primitive_is_the_adjoint_of_conv2d():
    """<conv2d(x, w), g> = <w, conv2d_weight_grad(x, g)> = <x, conv2d_input_grad(g, w)>."""
    rng = np.random.default_rng(1)
    attrs = {"stride": (2, 1), "padding": (1, 2), "dilation": (1, 2), "groups": 2}
    x = bai.Tensor(rng.standard_normal((2, 4, 7, 8)))
    w = bai.Tensor(rng.standard_normal((6, 2, 3, 2)))
    y = ops.conv2d(x, w, **attrs)
    g = bai.Tensor(rng.standard_normal(y.shape))
    dw = ops.conv2d_weight_grad(x, g, (3, 2), **attrs)
    dx = ops.conv2d_input_grad(g, w, (7, 8), **attrs)
    product = float((y * g).sum().item())
    assert np.isclose(product, float((w * dw).sum().item()))
    assert np.isclose(product, float((x * dx).sum().item()))


def test_third_derivative_flows():
    """Every op's gradient is again one of the three ops, so any order works."""
    rng = np.random.default_rng(2)
    x = bai.Tensor(rng.standard_normal((1, 2, 5, 5)), requires_grad=True)
    w = bai.Tensor(rng.standard_normal((2, 2, 3, 3)), requires_grad=True)
    xt = torch.tensor(x.numpy(), requires_grad=True)
    wt = torch.tensor(w.numpy(), requires_grad=True)
    results = []
    for conv, a, b in ((F.conv2d, x, w), (TF.conv2d, xt, wt)):
        grad = bai.grad if a is x else torch.autograd.grad
        y = (conv(a, b, padding=1) ** 2).sum()
        (gx,) = grad(y, [a], create_graph=True)
        (gw,) = grad((gx**2).sum(), [b], create_graph=True)
        (gxx,) = grad((gw**2).sum(), [a])
        results.append(gxx.numpy() if a is x else gxx.detach().numpy())
    np.testing.assert_allclose(results[0], results[1], rtol=1e-7, atol=1e-8)


def test_float32_dtype_is_kept():
    x = bai.randn(2, 3, 6, 6)
    w = bai.randn(4, 3, 3, 3)
    assert F.conv2d(x, w).dtype == np.float32
    assert F.conv_transpose2d(x, bai.randn(3, 2, 3, 3)).dtype == np.float32


# ----- errors -------------------------------------------------------------------------------------


def _raises(error, pattern, fn):
    with pytest.raises(error, match=pattern):
        fn()


def test_channel_mismatch_names_the_shapes():
    _raises(
        bai.ShapeError,
        r"\[conv2d\] expected input with 3 channels \(weight \(8, 3, 3, 3\)\), got \(2, 4, 9, 9\)",
        lambda: F.conv2d(bai.zeros(2, 4, 9, 9), bai.zeros(8, 3, 3, 3)),
    )
    _raises(
        bai.ShapeError,
        r"\[conv1d\] expected input with 3 channels",
        lambda: F.conv1d(bai.zeros(2, 4, 9), bai.zeros(8, 3, 3)),
    )
    _raises(
        bai.ShapeError,
        r"\[conv_transpose2d\] expected input with 3 channels",
        lambda: F.conv_transpose2d(bai.zeros(2, 4, 9, 9), bai.zeros(3, 2, 3, 3)),
    )


def test_bias_is_checked_by_the_fused_op():
    x, weight = bai.zeros(2, 3, 9, 9), bai.zeros(8, 3, 3, 3)
    _raises(
        bai.ShapeError,
        r"\[conv2d\] bias \(4,\) does not fit 8 output channels \(weight \(8, 3, 3, 3\)\)",
        lambda: F.conv2d(x, weight, bai.zeros(4)),
    )
    _raises(
        bai.DTypeError,
        r"\[conv2d\] input \(float32\) and bias \(float64\) must have the same dtype",
        lambda: F.conv2d(x, weight, bai.zeros(8, dtype="float64")),
    )
    _raises(
        bai.ShapeError,
        r"\[conv1d\] bias \(4,\) does not fit 8 output channels",
        lambda: F.conv1d(bai.zeros(2, 3, 9), bai.zeros(8, 3, 3), bai.zeros(4)),
    )


def test_groups_must_divide_channels():
    _raises(
        bai.ShapeError,
        r"\[conv2d\] out_channels=4 \(weight \(4, 2, 3, 3\)\) is not divisible by groups=3",
        lambda: F.conv2d(bai.zeros(1, 6, 5, 5), bai.zeros(4, 2, 3, 3), groups=3),
    )
    _raises(
        bai.ShapeError,
        r"expected input with 6 channels .*groups=3\), got \(1, 5, 5, 5\)",
        lambda: F.conv2d(bai.zeros(1, 5, 5, 5), bai.zeros(6, 2, 3, 3), groups=3),
    )


def test_kernel_larger_than_padded_input():
    _raises(
        bai.ShapeError,
        r"\[conv2d\] kernel \(5, 5\) \(dilated extent 5\) is larger than the padded input \(4\)",
        lambda: F.conv2d(bai.zeros(1, 1, 4, 4), bai.zeros(1, 1, 5, 5)),
    )
    _raises(
        bai.ShapeError,
        r"dilated extent 7",
        lambda: F.conv2d(bai.zeros(1, 1, 6, 6), bai.zeros(1, 1, 3, 3), dilation=3),
    )


def test_bad_ranks_and_arguments():
    _raises(
        bai.ShapeError,
        r"\[conv2d\] expected a 4-D input \(N, C, H, W\) \(or 3-D unbatched\), got \(9, 9\)",
        lambda: F.conv2d(bai.zeros(9, 9), bai.zeros(1, 1, 3, 3)),
    )
    _raises(
        bai.ShapeError,
        r"\[conv2d\] weight must be 4-D",
        lambda: F.conv2d(bai.zeros(1, 1, 9, 9), bai.zeros(1, 3, 3)),
    )
    _raises(
        bai.ShapeError,
        r"\[conv2d\] invalid stride=\(0, 0\)",
        lambda: F.conv2d(bai.zeros(1, 1, 9, 9), bai.zeros(1, 1, 3, 3), stride=0),
    )
    _raises(
        bai.ShapeError,
        r"\[conv2d\] stride must be an int or a pair of ints",
        lambda: F.conv2d(bai.zeros(1, 1, 9, 9), bai.zeros(1, 1, 3, 3), stride=(1, 2, 3)),
    )
    _raises(
        ValueError,
        r"padding='full' is not understood",
        lambda: F.conv2d(bai.zeros(1, 1, 9, 9), bai.zeros(1, 1, 3, 3), padding="full"),
    )
    _raises(
        bai.ShapeError,
        r"padding='same' is not supported for strided convolutions",
        lambda: F.conv2d(bai.zeros(1, 1, 9, 9), bai.zeros(1, 1, 3, 3), padding="same", stride=2),
    )
    _raises(
        bai.ShapeError,
        r"\[conv2d\] bias \(3,\) does not fit 2 output channels",
        lambda: F.conv2d(bai.zeros(1, 1, 9, 9), bai.zeros(2, 1, 3, 3), bai.zeros(3)),
    )


def test_dtype_errors():
    _raises(
        bai.DTypeError,
        r"\[conv2d\] input \(float32\) and weight \(float64\) must have the same dtype",
        lambda: F.conv2d(bai.zeros(1, 1, 5, 5), bai.zeros(1, 1, 3, 3, dtype="float64")),
    )
    _raises(
        bai.DTypeError,
        r"\[conv2d\] input must be a floating-point tensor, got int64",
        lambda: F.conv2d(bai.zeros(1, 1, 5, 5, dtype="int64"), bai.zeros(1, 1, 3, 3)),
    )


def test_transpose_errors():
    _raises(
        bai.ShapeError,
        r"output_padding=\(2, 2\) must be smaller than either the stride \(2, 2\)",
        lambda: F.conv_transpose2d(
            bai.zeros(1, 1, 4, 4), bai.zeros(1, 1, 3, 3), stride=2, output_padding=2
        ),
    )
    _raises(
        bai.ShapeError,
        r"non-positive output size",
        lambda: F.conv_transpose2d(bai.zeros(1, 1, 1, 1), bai.zeros(1, 1, 1, 1), padding=1),
    )


def test_adjoint_primitives_check_their_sizes():
    attrs = {"stride": (1, 1), "padding": (0, 0), "dilation": (1, 1), "groups": 1}
    _raises(
        bai.ShapeError,
        r"\[conv2d_input_grad\] output size \(6, 6\) does not fit: a convolution of that size "
        r"gives \(4, 4\), not \(3, 3\)",
        lambda: ops.conv2d_input_grad(
            bai.zeros(1, 1, 3, 3), bai.zeros(1, 1, 3, 3), (6, 6), **attrs
        ),
    )
    _raises(
        bai.ShapeError,
        r"\[conv2d_weight_grad\] the output gradient does not fit the convolution",
        lambda: ops.conv2d_weight_grad(
            bai.zeros(1, 1, 6, 6), bai.zeros(1, 1, 3, 3), (3, 3), **attrs
        ),
    )
    _raises(
        bai.ShapeError,
        r"\[conv2d_weight_grad\] batch sizes must match",
        lambda: ops.conv2d_weight_grad(
            bai.zeros(2, 1, 6, 6), bai.zeros(1, 1, 4, 4), (3, 3), **attrs
        ),
    )


def test_error_names_the_module_path():
    conv = bai.nn.Sequential(bai.nn.Conv2d(3, 8, 3)) if hasattr(bai.nn, "Conv2d") else None
    if conv is None:
        from buildingai.nn.conv import Conv2d

        conv = bai.nn.Sequential(Conv2d(3, 8, 3))
    with pytest.raises(bai.ShapeError, match=r"\(in Sequential\.0\)"):
        conv(bai.zeros(2, 4, 9, 9))

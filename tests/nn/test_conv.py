"""Convolution layers against PyTorch with copied weights: outputs, input and parameter
gradients, state dicts both ways, initialisation, padding modes and constructor errors."""

import math

import numpy as np
import pytest

import buildingai as bai
from buildingai.nn.conv import Conv1d, Conv2d, ConvTranspose1d, ConvTranspose2d

torch = pytest.importorskip("torch")


def _compare(ours, theirs, x_shape, seed=0, **call):
    """Copy PyTorch's weights into ours, run both on the same input, compare everything."""
    ours.load_state_dict({k: v.numpy() for k, v in theirs.state_dict().items()})
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(x_shape)
    ours_x = bai.Tensor(x.copy(), requires_grad=True)
    theirs_x = torch.tensor(x.copy(), requires_grad=True)
    ours_y, theirs_y = ours(ours_x, **call), theirs(theirs_x, **call)
    np.testing.assert_allclose(ours_y.numpy(), theirs_y.detach().numpy(), rtol=1e-9, atol=1e-10)
    upstream = rng.standard_normal(tuple(theirs_y.shape))
    (ours_y * bai.Tensor(upstream)).sum().backward()
    (theirs_y * torch.tensor(upstream)).sum().backward()
    np.testing.assert_allclose(ours_x.grad.numpy(), theirs_x.grad.numpy(), rtol=1e-9, atol=1e-10)
    theirs_params = dict(theirs.named_parameters())
    for name, parameter in ours.named_parameters():
        np.testing.assert_allclose(
            parameter.grad.numpy(), theirs_params[name].grad.numpy(), rtol=1e-9, atol=1e-10,
            err_msg=name,
        )  # fmt: skip


CONV2D_LAYERS = [
    ((3, 4, 3), {}),
    ((3, 4, 3), {"stride": 2, "padding": 1}),
    ((3, 4, (3, 2)), {"padding": (1, 0), "bias": False}),
    ((3, 4, 3), {"dilation": 2, "padding": 2}),
    ((3, 4, 1), {}),
    ((3, 4, 3), {"padding": "same"}),
    ((3, 4, 2), {"padding": "same", "dilation": 3}),
    ((3, 4, 3), {"padding": "valid"}),
    ((6, 9, 3), {"groups": 3, "padding": 1}),
    ((6, 6, 3), {"groups": 6, "padding": 1}),  # depthwise
    ((3, 6, 3), {"groups": 3, "stride": 2}),  # depthwise with multiplier
    ((3, 4, 3), {"padding": 1, "padding_mode": "reflect"}),
    ((3, 4, 3), {"padding": 2, "padding_mode": "replicate"}),
    ((3, 4, 3), {"padding": 1, "padding_mode": "circular", "stride": 2}),
    ((3, 4, 2), {"padding": "same", "padding_mode": "reflect"}),
]


@pytest.mark.parametrize("args, kwargs", CONV2D_LAYERS, ids=str)
def test_conv2d_layer_matches_pytorch(args, kwargs):
    _compare(
        Conv2d(*args, dtype="float64", **kwargs),
        torch.nn.Conv2d(*args, dtype=torch.float64, **kwargs),
        (2, args[0], 7, 6),
    )


@pytest.mark.parametrize(
    "args, kwargs",
    [
        ((3, 4, 3), {}),
        ((4, 6, 3), {"stride": 2, "padding": 1, "dilation": 2, "groups": 2}),
        ((3, 4, 4), {"padding": "same"}),
        ((3, 4, 3), {"padding": 1, "padding_mode": "circular", "bias": False}),
    ],
    ids=str,
)
def test_conv1d_layer_matches_pytorch(args, kwargs):
    _compare(
        Conv1d(*args, dtype="float64", **kwargs),
        torch.nn.Conv1d(*args, dtype=torch.float64, **kwargs),
        (2, args[0], 11),
    )


@pytest.mark.parametrize(
    "args, kwargs",
    [
        ((3, 4, 3), {}),
        ((3, 4, 3), {"stride": 2, "padding": 1, "output_padding": 1}),
        ((4, 6, (3, 2)), {"stride": 2, "groups": 2, "bias": False}),
        ((3, 2, 3), {"dilation": 2, "padding": 1, "output_padding": 1}),
    ],
    ids=str,
)
def test_conv_transpose2d_layer_matches_pytorch(args, kwargs):
    _compare(
        ConvTranspose2d(*args, dtype="float64", **kwargs),
        torch.nn.ConvTranspose2d(*args, dtype=torch.float64, **kwargs),
        (2, args[0], 4, 5),
    )


def test_conv_transpose_output_size_picks_output_padding():
    ours = ConvTranspose2d(2, 3, 3, stride=2, padding=1, dtype="float64")
    theirs = torch.nn.ConvTranspose2d(2, 3, 3, stride=2, padding=1, dtype=torch.float64)
    _compare(ours, theirs, (1, 2, 4, 4), output_size=(8, 7))
    with pytest.raises(ValueError, match=r"requested output size \(9, 7\) is not reachable"):
        ours(bai.zeros(1, 2, 4, 4, dtype="float64"), output_size=(9, 7))


def test_conv_transpose1d_layer_matches_pytorch():
    _compare(
        ConvTranspose1d(3, 4, 3, stride=2, padding=1, output_padding=1, dtype="float64"),
        torch.nn.ConvTranspose1d(3, 4, 3, stride=2, padding=1, output_padding=1,
                                 dtype=torch.float64),
        (2, 3, 6),
    )  # fmt: skip


def test_state_dict_goes_both_ways():
    ours = Conv2d(3, 4, 3, groups=1)
    theirs = torch.nn.Conv2d(3, 4, 3)
    theirs.load_state_dict({k: torch.tensor(v.numpy()) for k, v in ours.state_dict().items()})
    x = np.random.default_rng(0).standard_normal((1, 3, 5, 5)).astype(np.float32)
    np.testing.assert_allclose(
        ours(bai.Tensor(x)).numpy(), theirs(torch.tensor(x)).detach().numpy(), rtol=1e-5,
        atol=1e-6,
    )  # fmt: skip
    assert list(ours.state_dict()) == list(theirs.state_dict())


@pytest.mark.parametrize(
    "ours, theirs",
    [
        (lambda: Conv2d(8, 16, 3, groups=2), lambda: torch.nn.Conv2d(8, 16, 3, groups=2)),
        (lambda: ConvTranspose2d(8, 16, 3), lambda: torch.nn.ConvTranspose2d(8, 16, 3)),
        (lambda: Conv1d(8, 16, 5), lambda: torch.nn.Conv1d(8, 16, 5)),
    ],
)
def test_default_init_matches_pytorch_bounds(ours, theirs):
    """Same shapes and the same uniform bounds: kaiming_uniform(a=sqrt(5)) gives
    1/sqrt(fan_in) for both weight and bias."""
    bai.manual_seed(0)
    layer, reference = ours(), theirs()
    assert layer.weight.shape == tuple(reference.weight.shape)
    assert layer.weight.dtype == np.float32
    fan_in = reference.weight.shape[1] * math.prod(reference.weight.shape[2:])
    bound = 1 / math.sqrt(fan_in)
    for ours_value, theirs_value in (
        (layer.weight, reference.weight),
        (layer.bias, reference.bias),
    ):
        values = ours_value.numpy()
        assert np.abs(values).max() <= bound
        # fills the range, as PyTorch's does (16 biases all below half the bound: odds 2e-5)
        assert np.abs(values).max() > 0.5 * bound
        assert np.abs(theirs_value.detach().numpy()).max() <= bound


def test_repr_matches_pytorch():
    cases = [
        (Conv2d(3, 8, 3), torch.nn.Conv2d(3, 8, 3)),
        (
            Conv2d(4, 8, (3, 2), stride=2, padding=1, dilation=2, groups=2, bias=False,
                   padding_mode="reflect"),
            torch.nn.Conv2d(4, 8, (3, 2), stride=2, padding=1, dilation=2, groups=2,
                            bias=False, padding_mode="reflect"),
        ),
        (Conv2d(3, 8, 3, padding="same"), torch.nn.Conv2d(3, 8, 3, padding="same")),
        (Conv1d(3, 8, 3), torch.nn.Conv1d(3, 8, 3)),
        (ConvTranspose2d(3, 8, 3, stride=2, output_padding=1),
         torch.nn.ConvTranspose2d(3, 8, 3, stride=2, output_padding=1)),
    ]  # fmt: skip
    for ours, theirs in cases:
        assert repr(ours) == repr(theirs)


def test_float32_layer_close_to_pytorch():
    _compare_float32 = Conv2d(3, 5, 3, padding=1)
    reference = torch.nn.Conv2d(3, 5, 3, padding=1)
    _compare_float32.load_state_dict({k: v.numpy() for k, v in reference.state_dict().items()})
    x = np.random.default_rng(3).standard_normal((2, 3, 8, 8)).astype(np.float32)
    y = _compare_float32(bai.Tensor(x))
    assert y.dtype == np.float32
    np.testing.assert_allclose(y.numpy(), reference(torch.tensor(x)).detach().numpy(), atol=1e-5)


def test_constructor_errors():
    with pytest.raises(ValueError, match=r"\[Conv2d\] in_channels=3 must be divisible by groups=2"):
        Conv2d(3, 4, 3, groups=2)
    with pytest.raises(
        ValueError, match=r"\[Conv2d\] out_channels=5 must be divisible by groups=2"
    ):
        Conv2d(4, 5, 3, groups=2)
    with pytest.raises(ValueError, match=r"padding='same' is not supported for strided"):
        Conv2d(3, 4, 3, stride=2, padding="same")
    with pytest.raises(ValueError, match=r"padding_mode must be one of"):
        Conv2d(3, 4, 3, padding_mode="mirror")
    with pytest.raises(ValueError, match=r"padding must be an int, a tuple, 'same' or 'valid'"):
        Conv2d(3, 4, 3, padding="full")
    with pytest.raises(ValueError, match=r"kernel_size must be an int or a tuple of 2 ints"):
        Conv2d(3, 4, (3, 3, 3))
    with pytest.raises(ValueError, match=r"\[ConvTranspose2d\] only padding_mode='zeros'"):
        ConvTranspose2d(3, 4, 3, padding_mode="reflect")


def test_wrong_input_channels_names_layer_and_shapes():
    with pytest.raises(
        bai.ShapeError,
        match=r"\[conv2d\] expected input with 3 channels \(weight \(8, 3, 3, 3\)\), got "
        r"\(2, 4, 9, 9\) \(in Conv2d\)",
    ):
        Conv2d(3, 8, 3)(bai.zeros(2, 4, 9, 9))

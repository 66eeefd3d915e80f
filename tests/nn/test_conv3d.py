"""Three-dimensional convolutions against PyTorch: conv3d and conv_transpose3d (values and
float64 input, weight and bias gradients over many argument combinations, second derivatives),
the Conv3d and ConvTranspose3d layers (padding modes, output_size, repr, initialisation, state
dicts both ways), the errors PyTorch raises, and a compiled graph against eager."""

from __future__ import annotations

import math

import numpy as np
import pytest

import buildingai as bai
import buildingai.nn.functional as F
from buildingai.nn import Conv3d, ConvTranspose3d

torch = pytest.importorskip("torch")
TF = torch.nn.functional
TOLERANCE = dict(rtol=1e-9, atol=1e-10)
# PyTorch warns that it copies the input for "same" padding with even kernels; so do we
pytestmark = pytest.mark.filterwarnings("ignore:Using padding='same'")


def _pair_of_tensors(array: np.ndarray | None):
    if array is None:
        return None, None
    return bai.Tensor(array.copy(), requires_grad=True), torch.tensor(array, requires_grad=True)


def _compare_function(ours_fn, theirs_fn, x_shape, weight_shape, bias_size, seed=0, **kwargs):
    """Run both functions in float64 on the same input, weight and bias; compare the output and
    the gradients of all three for one random upstream gradient."""
    rng = np.random.default_rng(seed)
    arrays = [rng.standard_normal(x_shape), rng.standard_normal(weight_shape)]
    arrays.append(None if bias_size is None else rng.standard_normal(bias_size))
    pairs = [_pair_of_tensors(a) for a in arrays]
    ours_y = ours_fn(*(p[0] for p in pairs), **kwargs)
    theirs_y = theirs_fn(*(p[1] for p in pairs), **kwargs)
    assert ours_y.shape == tuple(theirs_y.shape)
    np.testing.assert_allclose(ours_y.numpy(), theirs_y.detach().numpy(), **TOLERANCE)
    upstream = rng.standard_normal(tuple(theirs_y.shape))
    (ours_y * bai.Tensor(upstream)).sum().backward()
    (theirs_y * torch.tensor(upstream)).sum().backward()
    for name, (ours, theirs) in zip(("input", "weight", "bias"), pairs):
        if ours is not None:
            np.testing.assert_allclose(
                ours.grad.numpy(), theirs.grad.numpy(), err_msg=name, **TOLERANCE
            )


# ----- conv3d -------------------------------------------------------------------------------------

CONV3D_CALLS = [
    # (x shape, weight shape, bias, kwargs)
    ((2, 3, 5, 6, 4), (4, 3, 3, 3, 3), True, {}),
    ((2, 3, 5, 6, 4), (4, 3, 3, 2, 1), False, {}),
    ((2, 3, 7, 6, 5), (4, 3, 3, 3, 3), True, {"stride": 2, "padding": 1}),
    ((1, 3, 7, 6, 5), (4, 3, 2, 3, 2), True, {"stride": (1, 2, 3), "padding": (1, 0, 2)}),
    ((2, 2, 7, 7, 6), (3, 2, 3, 2, 2), True, {"dilation": (2, 1, 3), "padding": (2, 0, 1)}),
    ((2, 3, 5, 6, 4), (4, 3, 3, 3, 3), True, {"padding": "same"}),
    ((2, 3, 5, 6, 4), (4, 3, 2, 3, 4), True, {"padding": "same"}),  # even kernels: far edge
    ((2, 3, 6, 6, 7), (2, 3, 2, 2, 3), False, {"padding": "same", "dilation": (3, 1, 2)}),
    ((2, 3, 5, 6, 4), (4, 3, 3, 3, 3), True, {"padding": "valid"}),
    ((2, 4, 5, 5, 5), (6, 2, 3, 3, 3), True, {"groups": 2, "padding": 1}),
    ((2, 4, 5, 5, 5), (4, 1, 3, 3, 3), True, {"groups": 4, "padding": 1}),  # depthwise
    ((2, 3, 6, 5, 5), (6, 1, 2, 3, 3), True, {"groups": 3, "stride": 2, "dilation": (1, 1, 2)}),
    ((3, 5, 6, 5), (4, 3, 3, 3, 3), True, {"padding": 1}),  # unbatched (C, D, H, W)
    ((3, 5, 6, 5), (4, 3, 2, 2, 2), False, {"padding": "same"}),
    ((2, 3, 4, 4, 4), (4, 3, 1, 1, 1), True, {"stride": (3,)}),
]


@pytest.mark.parametrize("x_shape, weight_shape, bias, kwargs", CONV3D_CALLS, ids=str)
def test_conv3d_matches_pytorch(x_shape, weight_shape, bias, kwargs):
    _compare_function(
        F.conv3d, TF.conv3d, x_shape, weight_shape, weight_shape[0] if bias else None, **kwargs
    )


# ----- conv_transpose3d ---------------------------------------------------------------------------

CONV_TRANSPOSE3D_CALLS = [
    # (x shape, weight shape (C, O/groups, kd, kh, kw), bias, kwargs)
    ((2, 3, 3, 4, 2), (3, 4, 3, 3, 3), True, {}),
    ((2, 3, 3, 4, 2), (3, 2, 3, 2, 1), False, {"stride": 2, "padding": 1}),
    ((2, 3, 3, 4, 3), (3, 2, 3, 3, 3), True, {"stride": 2, "padding": 1, "output_padding": 1}),
    (
        (1, 3, 3, 3, 4),
        (3, 2, 2, 3, 2),
        True,
        {"stride": (1, 2, 3), "padding": (0, 1, 1), "output_padding": (0, 1, 2)},
    ),
    ((2, 2, 3, 4, 3), (2, 3, 2, 2, 3), True, {"dilation": (2, 1, 3), "padding": (1, 0, 2)}),
    ((2, 2, 3, 3, 3), (2, 2, 2, 2, 2), True, {"dilation": 3, "output_padding": 2, "stride": 1}),
    ((2, 4, 3, 3, 3), (4, 3, 3, 3, 3), True, {"groups": 2, "stride": 2, "output_padding": 1}),
    ((2, 4, 3, 4, 3), (4, 1, 3, 2, 3), False, {"groups": 4, "padding": 1}),  # depthwise
    ((3, 3, 4, 2), (3, 2, 3, 3, 3), True, {"stride": 2}),  # unbatched (C, D, H, W)
]


@pytest.mark.parametrize("x_shape, weight_shape, bias, kwargs", CONV_TRANSPOSE3D_CALLS, ids=str)
def test_conv_transpose3d_matches_pytorch(x_shape, weight_shape, bias, kwargs):
    groups = kwargs.get("groups", 1)
    bias_size = weight_shape[1] * groups if bias else None
    _compare_function(
        F.conv_transpose3d, TF.conv_transpose3d, x_shape, weight_shape, bias_size, **kwargs
    )


# ----- second derivatives -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "ours_fn, theirs_fn, x_shape, weight_shape, bias_size, kwargs",
    [
        (F.conv3d, TF.conv3d, (2, 4, 4, 5, 4), (4, 2, 2, 3, 2), 4,
         {"stride": (2, 1, 1), "padding": 1, "dilation": (1, 1, 2), "groups": 2}),
        (F.conv_transpose3d, TF.conv_transpose3d, (2, 2, 3, 2, 3), (2, 3, 2, 3, 2), 3,
         {"stride": 2, "padding": (0, 1, 0), "output_padding": 1}),
    ],
    ids=["conv3d", "conv_transpose3d"],
)  # fmt: skip
def test_second_derivatives_match_pytorch(
    ours_fn, theirs_fn, x_shape, weight_shape, bias_size, kwargs
):
    """The gradient of the first gradients' squared norm (each first gradient is one of the
    other two ops, so this runs all three records' backward rules)."""
    rng = np.random.default_rng(1)
    arrays = [rng.standard_normal(s) for s in (x_shape, weight_shape, (bias_size,))]
    ours = [bai.Tensor(a.copy(), requires_grad=True) for a in arrays]
    theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
    out = ours_fn(*ours, **kwargs)
    upstream = rng.standard_normal(out.shape)
    firsts = bai.grad(out, ours, grad_outputs=bai.tensor(upstream), create_graph=True)
    # the bias gradient is the upstream summed: it has no second derivative
    ours_seconds = bai.grad(sum((g * g).sum() for g in firsts), ours[:2])
    out = theirs_fn(*theirs, **kwargs)
    firsts = torch.autograd.grad(
        out, theirs, grad_outputs=torch.tensor(upstream), create_graph=True
    )
    theirs_seconds = torch.autograd.grad(sum((g * g).sum() for g in firsts), theirs[:2])
    results = ([g.numpy() for g in ours_seconds], [g.numpy() for g in theirs_seconds])
    for name, mine, reference in zip(("input", "weight"), *results):
        np.testing.assert_allclose(mine, reference, rtol=1e-8, atol=1e-9, err_msg=name)


# ----- layers -------------------------------------------------------------------------------------


def _compare_layer(ours, theirs, x_shape, seed=0, **call):
    """Copy PyTorch's weights into ours, run both on the same input, compare the output, the
    input gradient and every parameter gradient."""
    ours.load_state_dict({k: v.numpy() for k, v in theirs.state_dict().items()})
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(x_shape)
    ours_x = bai.Tensor(x.copy(), requires_grad=True)
    theirs_x = torch.tensor(x, requires_grad=True)
    ours_y, theirs_y = ours(ours_x, **call), theirs(theirs_x, **call)
    assert ours_y.shape == tuple(theirs_y.shape)
    np.testing.assert_allclose(ours_y.numpy(), theirs_y.detach().numpy(), **TOLERANCE)
    upstream = rng.standard_normal(tuple(theirs_y.shape))
    (ours_y * bai.Tensor(upstream)).sum().backward()
    (theirs_y * torch.tensor(upstream)).sum().backward()
    np.testing.assert_allclose(ours_x.grad.numpy(), theirs_x.grad.numpy(), **TOLERANCE)
    theirs_params = dict(theirs.named_parameters())
    for name, parameter in ours.named_parameters():
        np.testing.assert_allclose(
            parameter.grad.numpy(), theirs_params[name].grad.numpy(), err_msg=name, **TOLERANCE
        )


CONV3D_LAYERS = [
    ((3, 4, 3), {}),
    ((3, 4, (3, 2, 1)), {"stride": 2, "padding": (1, 0, 1), "bias": False}),
    ((4, 6, 3), {"dilation": (1, 2, 1), "padding": 1, "groups": 2}),
    ((3, 4, 2), {"padding": "same"}),
    ((3, 4, 3), {"padding": 1, "padding_mode": "reflect"}),
    ((3, 4, 3), {"padding": (1, 2, 0), "padding_mode": "replicate", "stride": (1, 2, 1)}),
    ((3, 4, 3), {"padding": 1, "padding_mode": "circular", "stride": 2}),
    ((3, 4, (2, 3, 2)), {"padding": "same", "padding_mode": "reflect"}),
    ((3, 4, 3), {"padding": "valid", "padding_mode": "circular"}),
]


@pytest.mark.parametrize("args, kwargs", CONV3D_LAYERS, ids=str)
@pytest.mark.parametrize("batched", [True, False], ids=["batched", "unbatched"])
def test_conv3d_layer_matches_pytorch(args, kwargs, batched):
    shape = (args[0], 5, 6, 5)
    _compare_layer(
        Conv3d(*args, dtype="float64", **kwargs),
        torch.nn.Conv3d(*args, dtype=torch.float64, **kwargs),
        (2,) + shape if batched else shape,
    )


@pytest.mark.parametrize(
    "args, kwargs",
    [
        ((3, 4, 3), {}),
        ((3, 4, 3), {"stride": 2, "padding": 1, "output_padding": 1}),
        ((4, 6, (3, 2, 2)), {"stride": (2, 1, 2), "groups": 2, "bias": False}),
        ((3, 2, 2), {"dilation": 2, "padding": 1, "output_padding": (1, 0, 1), "stride": 2}),
    ],
    ids=str,
)
def test_conv_transpose3d_layer_matches_pytorch(args, kwargs):
    _compare_layer(
        ConvTranspose3d(*args, dtype="float64", **kwargs),
        torch.nn.ConvTranspose3d(*args, dtype=torch.float64, **kwargs),
        (2, args[0], 3, 4, 3),
    )
    _compare_layer(  # unbatched
        ConvTranspose3d(*args, dtype="float64", **kwargs),
        torch.nn.ConvTranspose3d(*args, dtype=torch.float64, **kwargs),
        (args[0], 3, 2, 3),
    )


def test_conv_transpose3d_output_size_picks_output_padding():
    ours = ConvTranspose3d(2, 3, 3, stride=2, padding=1, dtype="float64")
    theirs = torch.nn.ConvTranspose3d(2, 3, 3, stride=2, padding=1, dtype=torch.float64)
    _compare_layer(ours, theirs, (1, 2, 3, 4, 4), output_size=(6, 8, 7))
    _compare_layer(ours, theirs, (1, 2, 3, 4, 4), output_size=(1, 3, 5, 7, 8))
    with pytest.raises(ValueError, match=r"requested output size \(5, 9, 7\) is not reachable"):
        ours(bai.zeros(1, 2, 3, 4, 4, dtype="float64"), output_size=(5, 9, 7))


def test_repr_matches_pytorch():
    cases = [
        (Conv3d(3, 8, 3), torch.nn.Conv3d(3, 8, 3)),
        (
            Conv3d(4, 8, (3, 2, 1), stride=(2, 1, 1), padding=1, dilation=2, groups=2,
                   bias=False, padding_mode="reflect"),
            torch.nn.Conv3d(4, 8, (3, 2, 1), stride=(2, 1, 1), padding=1, dilation=2, groups=2,
                            bias=False, padding_mode="reflect"),
        ),
        (Conv3d(3, 8, 3, padding="same"), torch.nn.Conv3d(3, 8, 3, padding="same")),
        (Conv3d(3, 8, 3, padding="valid"), torch.nn.Conv3d(3, 8, 3, padding="valid")),
        (ConvTranspose3d(3, 8, 3), torch.nn.ConvTranspose3d(3, 8, 3)),
        (ConvTranspose3d(4, 8, 3, stride=2, padding=(1, 0, 1), output_padding=1, groups=4,
                         dilation=(1, 2, 1), bias=False),
         torch.nn.ConvTranspose3d(4, 8, 3, stride=2, padding=(1, 0, 1), output_padding=1,
                                  groups=4, dilation=(1, 2, 1), bias=False)),
    ]  # fmt: skip
    for ours, theirs in cases:
        assert repr(ours) == repr(theirs)


@pytest.mark.parametrize(
    "ours, theirs",
    [
        (lambda: Conv3d(8, 16, 3, groups=2), lambda: torch.nn.Conv3d(8, 16, 3, groups=2)),
        (lambda: ConvTranspose3d(8, 16, (3, 2, 2)),
         lambda: torch.nn.ConvTranspose3d(8, 16, (3, 2, 2))),
    ],
    ids=["Conv3d", "ConvTranspose3d"],
)  # fmt: skip
def test_default_init_matches_pytorch_bounds(ours, theirs):
    """Same shapes and the same uniform bounds: kaiming_uniform(a=sqrt(5)) gives
    1/sqrt(fan_in) for both weight and bias; reset_parameters draws again."""
    bai.manual_seed(0)
    layer, reference = ours(), theirs()
    assert layer.weight.shape == tuple(reference.weight.shape)
    assert layer.bias.shape == tuple(reference.bias.shape)
    assert layer.weight.dtype == np.float32
    fan_in = reference.weight.shape[1] * math.prod(reference.weight.shape[2:])
    bound = 1 / math.sqrt(fan_in)
    for ours_value, theirs_value in (
        (layer.weight, reference.weight),
        (layer.bias, reference.bias),
    ):
        values = ours_value.numpy()
        assert np.abs(values).max() <= bound
        assert np.abs(values).max() > 0.5 * bound  # fills the range, as PyTorch's does
        assert np.abs(theirs_value.detach().numpy()).max() <= bound
    before = layer.weight.numpy().copy()
    layer.reset_parameters()
    assert not np.array_equal(before, layer.weight.numpy())
    assert np.abs(layer.weight.numpy()).max() <= bound


@pytest.mark.parametrize(
    "ours, theirs, x_shape",
    [
        (lambda: Conv3d(3, 4, 3, padding=1, groups=1), lambda: torch.nn.Conv3d(3, 4, 3, padding=1),
         (1, 3, 4, 5, 4)),
        (lambda: Conv3d(4, 4, 2, bias=False, groups=2),
         lambda: torch.nn.Conv3d(4, 4, 2, bias=False, groups=2), (1, 4, 3, 3, 3)),
        (lambda: ConvTranspose3d(3, 4, 3, stride=2),
         lambda: torch.nn.ConvTranspose3d(3, 4, 3, stride=2), (1, 3, 2, 3, 2)),
    ],
    ids=["Conv3d", "Conv3d-no-bias", "ConvTranspose3d"],
)  # fmt: skip
def test_state_dict_goes_both_ways(ours, theirs, x_shape):
    x = np.random.default_rng(0).standard_normal(x_shape).astype(np.float32)
    # ours -> theirs
    layer, reference = ours(), theirs()
    assert list(layer.state_dict()) == list(reference.state_dict())
    for key, value in reference.state_dict().items():
        assert layer.state_dict()[key].shape == tuple(value.shape), key
    reference.load_state_dict({k: torch.tensor(v.numpy()) for k, v in layer.state_dict().items()})
    expected = reference(torch.tensor(x)).detach().numpy()
    np.testing.assert_allclose(layer(bai.Tensor(x)).numpy(), expected, rtol=1e-5, atol=1e-6)
    # theirs -> ours
    layer, reference = ours(), theirs()
    layer.load_state_dict({k: v.numpy() for k, v in reference.state_dict().items()})
    expected = reference(torch.tensor(x)).detach().numpy()
    np.testing.assert_allclose(layer(bai.Tensor(x)).numpy(), expected, rtol=1e-5, atol=1e-6)


def test_float32_layer_close_to_pytorch():
    layer, reference = Conv3d(3, 5, 3, padding=1), torch.nn.Conv3d(3, 5, 3, padding=1)
    layer.load_state_dict({k: v.numpy() for k, v in reference.state_dict().items()})
    x = np.random.default_rng(3).standard_normal((2, 3, 6, 6, 6)).astype(np.float32)
    y = layer(bai.Tensor(x))
    assert y.dtype == np.float32
    np.testing.assert_allclose(y.numpy(), reference(torch.tensor(x)).detach().numpy(), atol=1e-5)


# ----- errors -------------------------------------------------------------------------------------


def _zeros(*shape):
    return bai.zeros(*shape, dtype="float64"), torch.zeros(*shape, dtype=torch.float64)


def _both_raise(ours, theirs, ours_error, match: str) -> None:
    """PyTorch refuses the call, and so do we, with a message naming the op."""
    with pytest.raises((RuntimeError, ValueError)):
        theirs()
    with pytest.raises(ours_error, match=match):
        ours()


FUNCTION_ERRORS = [
    # (function, x shape, weight shape, kwargs, our message)
    ("conv3d", (2, 3, 4, 4), (4, 3, 3, 3, 3), {}, r"\[conv3d\] expected input with 3 channels"),
    ("conv3d", (3, 4, 4), (4, 3, 3, 3, 3), {}, r"\[conv3d\] expected a 5-D input"),
    ("conv3d", (1, 2, 3, 4, 4, 4), (4, 3, 3, 3, 3), {}, r"\[conv3d\] expected a 5-D input"),
    ("conv3d", (1, 3, 4, 4, 4), (4, 3, 3, 3), {}, r"\[conv3d\] weight must be 5-D"),
    ("conv3d", (1, 4, 4, 4, 4), (4, 3, 3, 3, 3), {}, r"expected input with 3 channels"),
    ("conv3d", (1, 4, 4, 4, 4), (3, 2, 3, 3, 3), {"groups": 2}, r"out_channels=3 .* groups=2"),
    ("conv3d", (1, 3, 2, 4, 4), (4, 3, 3, 3, 3), {}, r"\[conv3d\] kernel .* along D"),
    ("conv3d", (1, 3, 4, 4, 4), (4, 3, 3, 3, 3), {"stride": 0}, r"\[conv3d\] invalid stride"),
    ("conv3d", (1, 3, 4, 4, 4), (4, 3, 3, 3, 3), {"padding": -1}, r"\[conv3d\] invalid"),
    ("conv3d", (1, 3, 4, 4, 4), (4, 3, 3, 3, 3), {"padding": "same", "stride": 2},
     r"padding='same' is not supported for strided"),
    ("conv3d", (1, 3, 4, 4, 4), (4, 3, 3, 3, 3), {"padding": "full"},
     r"padding='full' is not understood"),
    ("conv3d", (1, 3, 4, 4, 4), (4, 3, 3, 3, 3), {"stride": (1, 2)},
     r"stride must be an int or a triple"),
    ("conv_transpose3d", (1, 3, 4, 4, 4), (2, 3, 3, 3, 3), {},
     r"\[conv_transpose3d\] expected input with 2 channels"),
    ("conv_transpose3d", (3, 4, 4), (3, 3, 3, 3, 3), {}, r"\[conv_transpose3d\] expected a 5-D"),
    ("conv_transpose3d", (1, 3, 4, 4, 4), (3, 3, 3, 3, 3), {"stride": 2, "output_padding": 2},
     r"output_padding=\(2, 2, 2\) must be smaller"),
    ("conv_transpose3d", (1, 3, 1, 1, 1), (3, 3, 1, 1, 1), {"padding": 1},
     r"non-positive output size"),
]  # fmt: skip


@pytest.mark.parametrize("name, x_shape, weight_shape, kwargs, match", FUNCTION_ERRORS, ids=str)
def test_function_errors_as_pytorch(name, x_shape, weight_shape, kwargs, match):
    (ours_x, theirs_x), (ours_w, theirs_w) = _zeros(*x_shape), _zeros(*weight_shape)
    _both_raise(
        lambda: getattr(F, name)(ours_x, ours_w, **kwargs),
        lambda: getattr(TF, name)(theirs_x, theirs_w, **kwargs),
        bai.ShapeError if not isinstance(kwargs.get("padding"), str) else ValueError,
        match,
    )


LAYER_ERRORS = [
    # (layer, args, kwargs, our message)
    ("Conv3d", (3, 4, 3), {"groups": 2}, r"\[Conv3d\] in_channels=3 must be divisible by groups"),
    ("Conv3d", (4, 5, 3), {"groups": 2}, r"\[Conv3d\] out_channels=5 must be divisible"),
    ("Conv3d", (3, 4, 3), {"stride": 2, "padding": "same"}, r"not supported for strided"),
    ("Conv3d", (3, 4, 3), {"padding_mode": "mirror"}, r"padding_mode must be one of"),
    ("Conv3d", (3, 4, 3), {"padding": "full"}, r"padding must be an int, a tuple, 'same'"),
    ("ConvTranspose3d", (3, 4, 3), {"padding_mode": "reflect"}, r"only padding_mode='zeros'"),
    ("ConvTranspose3d", (4, 4, 3), {"groups": 3}, r"in_channels=4 must be divisible by groups"),
]  # fmt: skip


@pytest.mark.parametrize("name, args, kwargs, match", LAYER_ERRORS, ids=str)
def test_layer_constructor_errors_as_pytorch(name, args, kwargs, match):
    _both_raise(
        lambda: getattr(bai.nn, name)(*args, **kwargs),
        lambda: getattr(torch.nn, name)(*args, **kwargs),
        ValueError,
        match,
    )


def test_kernel_size_of_the_wrong_length_is_refused_at_construction():
    # PyTorch builds a 4-D weight here and fails only at the first call
    with pytest.raises(ValueError, match=r"kernel_size must be an int or a tuple of 3 ints"):
        Conv3d(3, 4, (3, 3))


def test_wrong_input_channels_names_layer_and_shapes():
    with pytest.raises(
        bai.ShapeError,
        match=r"\[conv3d\] expected input with 3 channels \(weight \(8, 3, 3, 3, 3\)\), got "
        r"\(2, 4, 5, 5, 5\) \(in Conv3d\)",
    ):
        Conv3d(3, 8, 3)(bai.zeros(2, 4, 5, 5, 5))


# ----- tracing ------------------------------------------------------------------------------------


def test_compiled_graph_equals_eager():
    rng = np.random.default_rng(4)
    weight = bai.tensor(rng.standard_normal((4, 3, 3, 2, 3)).astype(np.float32))
    up = bai.tensor(rng.standard_normal((4, 2, 2, 2, 2)).astype(np.float32))
    bias = bai.tensor(rng.standard_normal(4).astype(np.float32))

    def encode_decode(x):
        hidden = F.relu(F.conv3d(x, weight, bias, stride=2, padding=1))
        return F.conv_transpose3d(hidden, up, None, stride=2, output_padding=(1, 0, 1))

    compiled = bai.compile(encode_decode, fullgraph=True)
    with bai.no_grad():
        for _ in range(2):  # new values each time: nothing of the traced input is kept
            x = bai.tensor(rng.standard_normal((2, 3, 6, 5, 7)).astype(np.float32))
            np.testing.assert_allclose(
                compiled(x).numpy(), encode_decode(x).numpy(), rtol=1e-6, atol=1e-6
            )

"""Pooling functions and layers against PyTorch in float64: values, returned indices,
gradients, second derivatives, finite differences; and their errors."""

import numpy as np
import pytest

import buildingai as bai
import buildingai.nn.functional as F
from buildingai.nn.pool import (
    AdaptiveAvgPool1d,
    AdaptiveAvgPool2d,
    AdaptiveMaxPool1d,
    AdaptiveMaxPool2d,
    AvgPool1d,
    AvgPool2d,
    MaxPool1d,
    MaxPool2d,
)
from tests.helpers import check_op

torch = pytest.importorskip("torch")
TF = torch.nn.functional

# (function name, input shape, positional args, keyword args)
POOL_CASES = [
    ("max_pool2d", (2, 3, 7, 6), (2,), {}),
    ("max_pool2d", (2, 3, 7, 6), (3, 2, 1), {}),
    ("max_pool2d", (2, 3, 7, 6), (3, 2, 1), {"ceil_mode": True}),
    ("max_pool2d", (2, 3, 9, 8), ((3, 2), (2, 1), (1, 1)), {"dilation": 2}),
    ("max_pool2d", (3, 5, 4), (2, 1), {}),  # unbatched, overlapping windows
    ("max_pool2d", (2, 3, 5, 5), (5,), {}),  # one window
    ("max_pool1d", (2, 3, 9), (3, 2, 1), {"ceil_mode": True}),
    ("max_pool1d", (3, 8), (2,), {"dilation": 2, "stride": 1}),
    ("avg_pool2d", (2, 3, 7, 6), (2,), {}),
    ("avg_pool2d", (2, 3, 7, 6), (3, 2, 1), {}),
    ("avg_pool2d", (2, 3, 7, 6), (3, 2, 1), {"count_include_pad": False}),
    ("avg_pool2d", (2, 3, 7, 6), (3, 2, 1), {"ceil_mode": True}),
    ("avg_pool2d", (2, 3, 7, 6), (3, 2, 1), {"ceil_mode": True, "count_include_pad": False}),
    ("avg_pool2d", (2, 3, 7, 6), ((3, 2), (2, 3), (1, 1)), {"divisor_override": 5}),
    ("avg_pool2d", (3, 5, 4), (2, 1), {}),
    ("avg_pool2d", (2, 3, 4, 5), ((4, 5),), {}),  # one window, the whole map: a mean
    ("avg_pool2d", (2, 3, 4, 4), (4,), {"divisor_override": 3}),  # ... a sum over 3
    ("avg_pool2d", (3, 4, 4), (4, 2), {"ceil_mode": True}),  # ... whatever the stride
    ("avg_pool1d", (2, 3, 9), (3, 2, 1), {"ceil_mode": True, "count_include_pad": False}),
    ("avg_pool1d", (3, 8), (4,), {}),
    ("adaptive_avg_pool2d", (2, 3, 7, 6), ((3, 4),), {}),  # uneven windows: matrices
    ("adaptive_avg_pool2d", (2, 3, 8, 6), ((4, 3),), {}),  # even windows: reshape-means
    ("adaptive_avg_pool2d", (2, 3, 8, 6), ((None, 4),), {}),
    ("adaptive_avg_pool2d", (2, 3, 8, 6), ((1, 3),), {}),  # one window high
    ("adaptive_avg_pool2d", (2, 3, 5, 6), (1,), {}),  # global average pooling
    ("adaptive_avg_pool2d", (3, 5, 6), (7,), {}),  # upsampling: windows overlap
    ("adaptive_avg_pool1d", (2, 3, 7), (3,), {}),
    ("adaptive_max_pool2d", (2, 3, 7, 6), ((3, 4),), {}),
    ("adaptive_max_pool2d", (2, 3, 7, 6), (1,), {}),
    ("adaptive_max_pool2d", (3, 4, 5), ((6, 5),), {}),
    ("adaptive_max_pool2d", (2, 3, 8, 6), ((4, 3),), {}),  # windows that tile: max pooling
    ("adaptive_max_pool2d", (3, 4, 6), ((2, 3),), {}),  # unbatched, tiling
    ("adaptive_max_pool1d", (2, 3, 7), (3,), {}),
]


@pytest.mark.parametrize("name, shape, args, kwargs", POOL_CASES, ids=str)
def test_pool_matches_pytorch(name, shape, args, kwargs):
    ours, theirs = getattr(F, name), getattr(TF, name)
    check_op(
        lambda x: ours(x, *args, **kwargs),
        shape,
        torch_fn=lambda x: theirs(x, *args, **kwargs),
        gradgrad=True,
    )


@pytest.mark.parametrize(
    "name, shape, args, kwargs",
    [case for case in POOL_CASES if "max" in case[0]],
    ids=str,
)
def test_max_pool_indices_match_pytorch(name, shape, args, kwargs):
    x = np.random.default_rng(0).standard_normal(shape)
    ours_out, ours_indices = getattr(F, name)(bai.Tensor(x), *args, return_indices=True, **kwargs)
    theirs_out, theirs_indices = getattr(TF, name)(
        torch.tensor(x), *args, return_indices=True, **kwargs
    )
    np.testing.assert_array_equal(ours_out.numpy(), theirs_out.numpy())
    np.testing.assert_array_equal(ours_indices.numpy(), theirs_indices.numpy())
    assert ours_indices.dtype == np.int64


def test_max_pool_ties_and_nan_follow_pytorch():
    x = np.array([[[[1.0, 1.0, 0.0, np.nan], [1.0, 0.0, -np.inf, 2.0]]]])
    for pool in (F.max_pool2d,):
        out, indices = pool(bai.Tensor(x), 2, return_indices=True)
        theirs, theirs_indices = TF.max_pool2d(torch.tensor(x), 2, return_indices=True)
        np.testing.assert_array_equal(out.numpy(), theirs.numpy())
        np.testing.assert_array_equal(indices.numpy(), theirs_indices.numpy())
    ours_x = bai.Tensor(x, requires_grad=True)
    theirs_x = torch.tensor(x, requires_grad=True)
    F.max_pool2d(ours_x, 2).sum().backward()
    TF.max_pool2d(theirs_x, 2).sum().backward()
    np.testing.assert_array_equal(ours_x.grad.numpy(), theirs_x.grad.numpy())


# Windows inside the image take the flat path (ops/kernels/pool_flat.py); the others the general one.
TIE_CASES = [
    ((2, 3, 8, 8), {"kernel_size": 2}),
    ((2, 3, 9, 8), {"kernel_size": 3, "stride": 2}),  # overlapping: general scatter
    ((2, 3, 9, 10), {"kernel_size": (2, 3), "stride": 3, "dilation": (2, 1)}),
    ((2, 3, 7, 7), {"kernel_size": 2, "ceil_mode": True}),  # overhangs: general path
    ((2, 3, 6, 6), {"kernel_size": 3, "padding": 1}),  # padded: general path
]


@pytest.mark.parametrize("shape, kwargs", TIE_CASES, ids=str)
def test_max_pool_ties_pick_the_first_maximum_as_pytorch(shape, kwargs):
    """Values in {-inf, 0, 1, 2}: most windows hold several equal maxima (as after a ReLU),
    some only -inf."""
    rng = np.random.default_rng(3)
    x = rng.integers(-1, 3, shape).astype(np.float32)
    x[x < 0] = -np.inf
    ours_x = bai.Tensor(x, requires_grad=True)
    theirs_x = torch.tensor(x, requires_grad=True)
    out, indices = F.max_pool2d(ours_x, return_indices=True, **kwargs)
    theirs, theirs_indices = TF.max_pool2d(theirs_x, return_indices=True, **kwargs)
    np.testing.assert_array_equal(out.numpy(), theirs.detach().numpy())
    np.testing.assert_array_equal(indices.numpy(), theirs_indices.numpy())
    grad = rng.standard_normal(out.shape).astype(np.float32)
    out.backward(bai.Tensor(grad))
    theirs.backward(torch.tensor(grad))
    np.testing.assert_array_equal(ours_x.grad.numpy(), theirs_x.grad.numpy())


def test_float32_pools_keep_dtype():
    x = bai.randn(2, 3, 8, 8)
    for out in (
        F.max_pool2d(x, 2),
        F.avg_pool2d(x, 3, 2, 1, count_include_pad=False),
        F.adaptive_avg_pool2d(x, 3),
        F.adaptive_max_pool2d(x, 3),
    ):
        assert out.dtype == np.float32


LAYERS = [
    (lambda: MaxPool2d(3, 2, 1), lambda: torch.nn.MaxPool2d(3, 2, 1), (2, 3, 7, 6)),
    (lambda: MaxPool2d(2, ceil_mode=True), lambda: torch.nn.MaxPool2d(2, ceil_mode=True),
     (2, 3, 7, 5)),
    (lambda: MaxPool1d(3, 2), lambda: torch.nn.MaxPool1d(3, 2), (2, 3, 9)),
    (lambda: AvgPool2d(3, 2, 1, count_include_pad=False),
     lambda: torch.nn.AvgPool2d(3, 2, 1, count_include_pad=False), (2, 3, 7, 6)),
    (lambda: AvgPool1d(2), lambda: torch.nn.AvgPool1d(2), (2, 3, 9)),
    (lambda: AdaptiveAvgPool2d((2, 3)), lambda: torch.nn.AdaptiveAvgPool2d((2, 3)), (2, 3, 7, 6)),
    (lambda: AdaptiveAvgPool1d(4), lambda: torch.nn.AdaptiveAvgPool1d(4), (2, 3, 9)),
    (lambda: AdaptiveMaxPool2d(3), lambda: torch.nn.AdaptiveMaxPool2d(3), (2, 3, 7, 6)),
    (lambda: AdaptiveMaxPool1d(2), lambda: torch.nn.AdaptiveMaxPool1d(2), (2, 3, 9)),
]  # fmt: skip


@pytest.mark.parametrize("ours, theirs, shape", LAYERS)
def test_pool_layers_match_pytorch(ours, theirs, shape):
    x = np.random.default_rng(0).standard_normal(shape)
    ours_x = bai.Tensor(x.copy(), requires_grad=True)
    theirs_x = torch.tensor(x.copy(), requires_grad=True)
    ours_y, theirs_y = ours()(ours_x), theirs()(theirs_x)
    np.testing.assert_allclose(ours_y.numpy(), theirs_y.detach().numpy(), rtol=1e-12)
    ours_y.sum().backward()
    theirs_y.sum().backward()
    np.testing.assert_allclose(ours_x.grad.numpy(), theirs_x.grad.numpy(), rtol=1e-12)


def test_layers_with_indices_and_reprs():
    x = bai.randn(1, 2, 6, 6)
    out, indices = MaxPool2d(2, return_indices=True)(x)
    assert out.shape == (1, 2, 3, 3) and indices.shape == (1, 2, 3, 3)
    out, indices = AdaptiveMaxPool2d(2, return_indices=True)(x)
    assert indices.shape == (1, 2, 2, 2)
    assert repr(MaxPool2d(3, 2, 1)) == repr(torch.nn.MaxPool2d(3, 2, 1))
    assert repr(AdaptiveAvgPool2d((2, 3))) == repr(torch.nn.AdaptiveAvgPool2d((2, 3)))
    assert repr(AvgPool2d(3, 2, 1)) == repr(torch.nn.AvgPool2d(3, 2, 1))


def test_pool_errors():
    with pytest.raises(
        bai.ShapeError, match=r"\[max_pool2d\] padding \(2, 2\) must be at most half of kernel"
    ):
        F.max_pool2d(bai.zeros(1, 1, 8, 8), 3, padding=2)
    with pytest.raises(
        bai.ShapeError,
        match=r"\[avg_pool2d\] kernel_size \(5, 5\) .*larger than the input \(1, 1, 4, 4\)",
    ):
        F.avg_pool2d(bai.zeros(1, 1, 4, 4), 5)
    with pytest.raises(bai.ShapeError, match=r"\[max_pool2d\] expected a 4-D input"):
        F.max_pool2d(bai.zeros(8, 8), 2)
    with pytest.raises(bai.ShapeError, match=r"\[max_pool1d\] expected a 3-D input"):
        F.max_pool1d(bai.zeros(1, 1, 8, 8), 2)
    with pytest.raises(bai.ShapeError, match=r"\[max_pool2d\] invalid kernel_size=\(0, 0\)"):
        F.max_pool2d(bai.zeros(1, 1, 8, 8), 0)
    with pytest.raises(bai.ShapeError, match=r"kernel_size must be an int or a pair"):
        F.max_pool2d(bai.zeros(1, 1, 8, 8), (2, 2, 2))
    with pytest.raises(ValueError, match=r"divisor_override must be non-zero"):
        F.avg_pool2d(bai.zeros(1, 1, 8, 8), 2, divisor_override=0)
    with pytest.raises(bai.ShapeError, match=r"\[adaptive_avg_pool2d\] output_size must be 2"):
        F.adaptive_avg_pool2d(bai.zeros(1, 1, 8, 8), (0, 2))
    with pytest.raises(bai.ShapeError, match=r"\[adaptive_max_pool2d\] cannot pool an empty"):
        F.adaptive_max_pool2d(bai.zeros(1, 1, 0, 8), 2)


def test_adaptive_max_pooling_freezes_where_its_windows_tile_and_refuses_elsewhere():
    """Windows that tile the input (a global maximum among them) run as max pooling, which a
    frozen graph computes from its inputs; other windows pick their winners from the values
    outside traced ops, so freezing them is refused rather than baking one input's winners in."""
    from buildingai.graph import freeze
    from buildingai.graph.graph import GraphError

    spec = [bai.TensorSpec((2, 3, 8, 6), "float32")]
    rng = np.random.default_rng(4)
    for output_size in (1, (4, 3), (2, 6)):
        frozen = freeze(lambda x, size=output_size: F.adaptive_max_pool2d(x, size), spec)
        for _ in range(2):
            x = rng.standard_normal((2, 3, 8, 6)).astype(np.float32)
            expected = F.adaptive_max_pool2d(bai.tensor(x), output_size).numpy()
            np.testing.assert_array_equal(frozen(x).numpy(), expected)
    with pytest.raises(GraphError, match="behind dispatch's back"):
        freeze(lambda x: F.adaptive_max_pool2d(x, (3, 4)), spec)
